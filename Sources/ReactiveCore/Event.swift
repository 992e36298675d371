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

extension Event {
    /// The error carried by an `.error` event, or `nil`.
    public var error: (any Error)? {
        if case .error(let error) = self { error } else { nil }
    }

    /// Whether this is `.completed`.
    public var isCompleted: Bool {
        if case .completed = self { true } else { false }
    }

    /// Transforms the element of a `.next` event and keeps terminal events as they are.
    ///
    /// Operators use it to forward stop events without repeating the `switch`.
    public func map<Result>(_ transform: (Element) throws -> Result) rethrows -> Event<Result> {
        switch self {
        case .next(let element): .next(try transform(element))
        case .error(let error): .error(error)
        case .completed: .completed
        }
    }
}

extension Event: Equatable where Element: Equatable {
    /// Two events are equal when they are the same case with equal payloads.
    ///
    /// Errors are not `Equatable` in Swift; two errors count as equal when they have
    /// the same dynamic type and the same reflected description. That is what marble
    /// tests need (`.error(210, TestError.boom)`), and it is stable for value-type errors.
    public static func == (lhs: Event<Element>, rhs: Event<Element>) -> Bool {
        switch (lhs, rhs) {
        case (.next(let l), .next(let r)): l == r
        case (.completed, .completed): true
        case (.error(let l), .error(let r)):
            type(of: l) == type(of: r) && String(reflecting: l) == String(reflecting: r)
        default: false
        }
    }
}

extension Event: CustomDebugStringConvertible {
    /// `next(1)`, `error(…)` or `completed`, for test failure messages.
    public var debugDescription: String {
        switch self {
        case .next(let element): "next(\(element))"
        case .error(let error): "error(\(error))"
        case .completed: "completed"
        }
    }
}
