import Synchronization

/// Anything that can be turned into an `Observable`: observables, subjects, properties.
///
/// Every operator is an extension on this protocol, so `subject.map { … }` works
/// without an explicit `asObservable()`.
public protocol ObservableType<Element>: Sendable {
    /// The type of the elements produced.
    associatedtype Element: Sendable

    /// This sequence as a plain `Observable`.
    func asObservable() -> Observable<Element>
}

/// A push-based sequence of elements obeying `next* (error | completed)?`.
///
/// An `Observable` is a cold recipe: each `subscribe` runs it anew for that
/// observer. It is a small `Sendable` value (one closure), so it can be stored and
/// passed across threads freely; elements must be `Sendable` because they cross
/// threads (a store commit published on a writer thread, observed on event loops).
///
/// The core keeps the grammar for every subscriber: `create`, the subjects and the
/// bridges serialize what they emit, drop everything after a terminal event and
/// after dispose, and the operators preserve that.
public struct Observable<Element: Sendable>: ObservableType {
    /// Subscribes an observer; the `Cancelable` lets synchronous sources notice a
    /// dispose made downstream before the subscription has even returned.
    @usableFromInline let runner: @Sendable (AnyObserver<Element>, any Cancelable) -> any Disposable

    @usableFromInline init(_ runner: @escaping @Sendable (AnyObserver<Element>, any Cancelable) -> any Disposable) {
        self.runner = runner
    }

    /// Returns `self`.
    @inlinable public func asObservable() -> Observable<Element> { self }

    /// Runs the recipe for one observer, with the downstream's cancel token.
    @inlinable
    func run<Observer: ObserverType>(_ observer: Observer, _ cancel: any Cancelable) -> any Disposable
    where Observer.Element == Element {
        runner(AnyObserver(observer), cancel)
    }

    /// Subscribes an observer; disposing the result ends the subscription.
    ///
    /// A terminal event disposes the subscription after it was delivered, so a
    /// finished chain releases its resources without an explicit `dispose()`.
    @inlinable
    public func subscribe<Observer: ObserverType>(_ observer: Observer) -> any Disposable
    where Observer.Element == Element {
        let slot = SingleAssignmentDisposable()
        let guarded = AnyObserver<Element> { event in
            guard !slot.isDisposed else { return }
            observer.on(event)
            if event.isStopEvent { slot.dispose() }
        }
        slot.setDisposable(runner(guarded, slot))
        return slot
    }
}

extension ObservableType {
    /// Subscribes an observer; disposing the result ends the subscription.
    public func subscribe<Observer: ObserverType>(_ observer: Observer) -> any Disposable
    where Observer.Element == Element {
        asObservable().subscribe(observer)
    }

    /// Subscribes with one closure receiving every event.
    @discardableResult
    public func subscribe(_ on: @escaping @Sendable (Event<Element>) -> Void) -> any Disposable {
        subscribe(onNext: { on(.next($0)) }, onError: { on(.error($0)) }, onCompleted: { on(.completed) })
    }

    /// Subscribes with closures for each kind of event.
    ///
    /// `onDisposed` runs exactly once, after a terminal event or on `dispose()`,
    /// whichever comes first. A terminal event disposes the subscription, so a
    /// finished chain releases everything it held.
    @inlinable @discardableResult
    public func subscribe(
        onNext: (@Sendable (Element) -> Void)? = nil,
        onError: (@Sendable (any Error) -> Void)? = nil,
        onCompleted: (@Sendable () -> Void)? = nil,
        onDisposed: (@Sendable () -> Void)? = nil
    ) -> any Disposable {
        let lifetime = SubscriptionLifetime(onDisposed: onDisposed)
        let observer = AnyObserver<Element> { event in
            guard !lifetime.isDisposed else { return }
            switch event {
            case .next(let element):
                onNext?(element)
            case .error(let error):
                onError?(error)
                lifetime.dispose()
            case .completed:
                onCompleted?()
                lifetime.dispose()
            }
        }
        lifetime.setDisposable(asObservable().runner(observer, lifetime))
        return lifetime
    }
}

/// The disposable of a closure subscription: single assignment plus `onDisposed`.
@usableFromInline
final class SubscriptionLifetime: Cancelable {
    private let slot = SingleAssignmentDisposable()
    private let onDisposed: Mutex<(@Sendable () -> Void)?>

    @usableFromInline init(onDisposed: (@Sendable () -> Void)?) {
        self.onDisposed = Mutex(onDisposed)
    }

    @usableFromInline var isDisposed: Bool { slot.isDisposed }

    @usableFromInline func setDisposable(_ disposable: any Disposable) { slot.setDisposable(disposable) }

    @usableFromInline func dispose() {
        guard !slot.isDisposed else { return }
        slot.dispose()
        let action = onDisposed.withLock { slot in
            let taken = slot
            slot = nil
            return taken
        }
        action?()
    }
}
