/// Something that receives the events of an observable sequence.
///
/// The core guarantees every observer the grammar `next* (error | completed)?`,
/// serialized: `on(_:)` is never called concurrently for one subscription, never
/// after a terminal event and never after the subscription's `dispose()` returned
/// (an event already being delivered on another thread may still finish).
/// Observers must be `Sendable` because events may arrive on any thread.
public protocol ObserverType<Element>: Sendable {
    /// The type of the elements received.
    associatedtype Element

    /// Receives one event.
    func on(_ event: Event<Element>)
}

extension ObserverType {
    /// Sends `.next(element)`.
    public func onNext(_ element: Element) { on(.next(element)) }

    /// Sends `.error(error)`, which ends the sequence.
    public func onError(_ error: any Error) { on(.error(error)) }

    /// Sends `.completed`, which ends the sequence.
    public func onCompleted() { on(.completed) }

    /// A type-erased wrapper of this observer.
    public func asObserver() -> AnyObserver<Element> { AnyObserver(self) }
}

/// A type-erased observer: a `@Sendable` closure receiving events.
///
/// It is what `Observable.create` hands to its subscribe closure and what the
/// core passes between operators; calling it costs one indirect call and no allocation.
public struct AnyObserver<Element>: ObserverType {
    @usableFromInline let handler: @Sendable (Event<Element>) -> Void

    /// Wraps a closure that receives every event.
    @inlinable
    public init(_ handler: @escaping @Sendable (Event<Element>) -> Void) {
        self.handler = handler
    }

    /// Wraps any observer; wrapping an `AnyObserver` again reuses its closure.
    @inlinable
    public init<Observer: ObserverType>(_ observer: Observer) where Observer.Element == Element {
        if let erased = observer as? AnyObserver<Element> {
            self = erased
        } else {
            self.handler = { observer.on($0) }
        }
    }

    /// Forwards the event to the wrapped closure.
    @inlinable
    public func on(_ event: Event<Element>) { handler(event) }
}
