/// A subject that holds a current value and replays it to every new subscriber.
///
/// A subscriber first receives the current value, then later events. The current
/// value is delivered during `subscribe`, unless another thread is delivering an
/// event at that moment: then that thread delivers it right after its current
/// event, before any later one. Reading `value` after the subject failed or
/// completed throws `ReactiveError`.
public final class BehaviorSubject<Element: Sendable>: ObserverType, ObservableType {
    @usableFromInline let core: SubjectCore<Element>

    /// Creates a subject whose current value is `value`.
    public init(value: Element) {
        core = SubjectCore(replay: 1, seed: [value])
    }

    /// The current value; throws once the subject has ended.
    public func value() throws(ReactiveError) -> Element {
        let (element, terminal) = core.latest
        switch terminal {
        case .error(let error)?: throw .subjectFailed(String(describing: error))
        case .completed?: throw .subjectCompleted
        default: break
        }
        guard let element else { throw .subjectCompleted }
        return element
    }

    /// Sends the event: a `.next` becomes the current value and is broadcast.
    @inlinable public func on(_ event: Event<Element>) { core.on(event) }

    /// Whether any observer is subscribed.
    public var hasObservers: Bool { core.hasObservers }

    /// The subject as an observable starting with the current value.
    @inlinable public func asObservable() -> Observable<Element> {
        let core = self.core
        return Observable { observer, _ in core.subscribe(observer) }
    }
}
