/// A read-only observable value (ReactiveCocoa's `Property`).
///
/// Hand one out where readers must not write: `value` is the current value,
/// `producer` emits it and then every change, `signal` only the changes.
public final class Property<Value: Sendable>: ObservableType {
    private let storage: MutableProperty<Value>
    private let subscription: (any Disposable)?

    /// A read-only view of `property`, which it keeps alive.
    public init(_ property: MutableProperty<Value>) {
        storage = property
        subscription = nil
    }

    /// A constant property.
    public init(value: Value) {
        storage = MutableProperty(value)
        subscription = nil
    }

    /// A property that starts at `initial` and then takes each element of `values`.
    ///
    /// It stays subscribed to `values` until it is released.
    public init<Source: ObservableType>(initial: Value, then values: Source) where Source.Element == Value {
        let storage = MutableProperty(initial)
        self.storage = storage
        subscription = values.subscribe(onNext: { storage.value = $0 })
    }

    /// The current value.
    public var value: Value { storage.value }

    /// The current value, then every change.
    public var producer: Observable<Value> { storage.producer }

    /// Every change after the moment of subscription.
    public var signal: Observable<Value> { storage.signal }

    /// Same as `producer`.
    public func asObservable() -> Observable<Value> { producer }

    deinit {
        subscription?.dispose()
    }
}
