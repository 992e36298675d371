/// A subject that replays up to `bufferSize` recent elements to each new subscriber.
///
/// The buffer is bounded, so memory stays fixed however long the subject lives.
/// After a terminal event, newcomers get the buffer and then the terminal event.
public final class ReplaySubject<Element: Sendable>: ObserverType, ObservableType {
    @usableFromInline let core: SubjectCore<Element>

    /// The maximum number of elements replayed.
    public let bufferSize: Int

    /// Creates a subject replaying the last `bufferSize` elements (`bufferSize >= 0`).
    public init(bufferSize: Int) {
        precondition(bufferSize >= 0, "ReplaySubject bufferSize must not be negative")
        self.bufferSize = bufferSize
        core = SubjectCore(replay: bufferSize)
    }

    /// Buffers and broadcasts the event.
    @inlinable public func on(_ event: Event<Element>) { core.on(event) }

    /// Whether any observer is subscribed.
    public var hasObservers: Bool { core.hasObservers }

    /// The subject as an observable that starts with the buffered elements.
    @inlinable public func asObservable() -> Observable<Element> {
        let core = self.core
        return Observable { observer, _ in core.subscribe(observer) }
    }
}
