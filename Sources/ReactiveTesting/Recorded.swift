import ReactiveCore

/// A time on a `TestScheduler`, in ticks.
public typealias TestTime = Int

/// A value stamped with the virtual time it happened at: the unit of marble tests.
public struct Recorded<Value>: CustomDebugStringConvertible {
    /// The virtual time, in ticks.
    public let time: TestTime
    /// What happened.
    public let value: Value

    /// Creates a recorded value.
    public init(time: TestTime, value: Value) {
        self.time = time
        self.value = value
    }

    /// `value @ time`, for test failure messages.
    public var debugDescription: String { "\(value) @ \(time)" }
}

extension Recorded: Sendable where Value: Sendable {}
extension Recorded: Equatable where Value: Equatable {}

extension Recorded {
    /// A `.next(element)` at `time`.
    public static func next<Element>(_ time: TestTime, _ element: Element) -> Recorded<Event<Element>>
    where Value == Event<Element> {
        Recorded(time: time, value: .next(element))
    }

    /// A `.completed` at `time`.
    public static func completed<Element>(_ time: TestTime, _ type: Element.Type = Element.self)
        -> Recorded<Event<Element>>
    where Value == Event<Element> {
        Recorded(time: time, value: .completed)
    }

    /// An `.error(error)` at `time`.
    public static func error<Element>(_ time: TestTime, _ error: any Error, _ type: Element.Type = Element.self)
        -> Recorded<Event<Element>>
    where Value == Event<Element> {
        Recorded(time: time, value: .error(error))
    }
}

/// When a test observable was subscribed and unsubscribed, in ticks.
public struct Subscription: Equatable, Sendable, CustomDebugStringConvertible {
    /// The time of `subscribe`.
    public let subscribe: TestTime
    /// The time of `dispose`, or `Subscription.infinity` while still subscribed.
    public let unsubscribe: TestTime

    /// Stands for "never unsubscribed".
    public static let infinity = TestTime.max

    /// A subscription that was never disposed.
    public init(_ subscribe: TestTime) {
        self.init(subscribe, Subscription.infinity)
    }

    /// A subscription from `subscribe` to `unsubscribe`.
    public init(_ subscribe: TestTime, _ unsubscribe: TestTime) {
        self.subscribe = subscribe
        self.unsubscribe = unsubscribe
    }

    /// `(subscribe, unsubscribe)` for test failure messages.
    public var debugDescription: String {
        unsubscribe == Subscription.infinity ? "(\(subscribe), ∞)" : "(\(subscribe), \(unsubscribe))"
    }
}
