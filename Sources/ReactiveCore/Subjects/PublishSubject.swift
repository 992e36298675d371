/// A subject that broadcasts each event to the observers subscribed at that moment.
///
/// It is the hub of listd: the store publishes each commit into one, and every
/// waiting long-poll observes it. `on(_:)` may be called from any thread; see
/// `SubjectCore` for the ordering and re-entrancy rules (an event sent from inside
/// an observer is delivered to everyone after the current event).
/// Late subscribers receive only later events, or the terminal event if the
/// subject has already ended.
///
/// - Complexity: O(n) per event for n observers, no allocation per event.
public final class PublishSubject<Element: Sendable>: ObserverType, ObservableType {
    @usableFromInline let core = SubjectCore<Element>(replay: 0)

    /// Creates a subject with no observers.
    public init() {}

    /// Broadcasts the event; ignored once a terminal event has been sent.
    @inlinable public func on(_ event: Event<Element>) { core.on(event) }

    /// Whether any observer is subscribed.
    public var hasObservers: Bool { core.hasObservers }

    /// The number of subscribed observers.
    public var observerCount: Int { core.observerCount }

    /// The subject as an observable.
    @inlinable public func asObservable() -> Observable<Element> {
        let core = self.core
        return Observable { observer, _ in core.subscribe(observer) }
    }
}
