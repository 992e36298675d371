import Synchronization

/// A thread-safe mutable value whose changes can be observed (ReactiveCocoa's `MutableProperty`).
///
/// `producer` starts with the current value and then emits every change;
/// `signal` emits only the changes. Values are emitted in the order they were
/// set, even when set from several threads, and `value` read right after a set
/// returns what was set. When the property is released, its observers complete.
public final class MutableProperty<Value: Sendable>: ObservableType {
    private struct State {
        var value: Value
        var version: UInt64 = 0
    }

    private let state: Mutex<State>
    let core: SubjectCore<Value>

    /// Creates a property holding `initialValue`.
    public init(_ initialValue: Value) {
        state = Mutex(State(value: initialValue))
        core = SubjectCore(replay: 1, seed: [initialValue])
    }

    /// The current value; setting it notifies the observers.
    public var value: Value {
        get { state.withLock { $0.value } }
        set { commit(newValue, ifVersion: nil) }
    }

    /// Changes the value with `body` and notifies the observers.
    ///
    /// `body` runs without any lock held, on a copy; if another thread changed the
    /// value meanwhile, `body` runs again on the newer value (optimistic
    /// concurrency), so it must be free of side effects. Returns what `body` returned.
    @discardableResult
    public func modify<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        while true {
            var (copy, version) = state.withLock { ($0.value, $0.version) }
            let result = try body(&copy)
            if commit(copy, ifVersion: version) { return result }
        }
    }

    /// Stores `value` unless the version moved; the event is queued under the same
    /// lock so that emission order equals commit order.
    @discardableResult
    private func commit(_ value: Value, ifVersion expected: UInt64?) -> Bool {
        let (committed, mustDrain) = state.withLock { state -> (Bool, Bool) in
            if let expected, expected != state.version { return (false, false) }
            state.value = value
            state.version += 1
            return (true, core.enqueue(.next(value)))
        }
        if mustDrain { core.drain() }
        return committed
    }

    /// The current value, then every change.
    public var producer: Observable<Value> {
        let core = self.core
        return Observable { observer, _ in core.subscribe(observer) }
    }

    /// Every change after the moment of subscription, without the current value.
    public var signal: Observable<Value> { producer.skip(1) }

    /// Same as `producer`.
    public func asObservable() -> Observable<Value> { producer }

    deinit {
        core.on(.completed)
    }
}
