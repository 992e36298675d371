/// One notification from an observable sequence.
///
/// Every sequence obeys the grammar `next* (error | completed)?`: any number of
/// elements, then at most one terminal event, after which nothing is delivered.
public enum Event<Element> {
    /// The next element of the sequence.
    case next(Element)
    /// The sequence failed; this is terminal.
    case error(any Error)
    /// The sequence finished; this is terminal.
    case completed

    /// Whether this event ends the sequence.
    public var isStopEvent: Bool {
        switch self {
        case .next: false
        case .error, .completed: true
        }
    }

    /// The element carried by a `.next` event, or `nil`.
    public var element: Element? {
        if case .next(let element) = self { element } else { nil }
    }
}

extension Event: Sendable where Element: Sendable {}
