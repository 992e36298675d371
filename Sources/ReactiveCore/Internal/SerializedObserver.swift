import Synchronization

/// The core's grammar guard: serializes events from any number of threads to one observer.
///
/// Whoever finds the observer idle delivers (the "drain" role); events arriving
/// meanwhile, from other threads or re-entrantly from the observer itself, are
/// queued and delivered by the drainer in arrival order after the current
/// delivery returns. Nothing is accepted after a terminal event; nothing is
/// delivered after `dispose()` or after the downstream `cancel` is disposed. The
/// observer is released after the terminal event, which breaks reference cycles.
///
/// The lock is never held while the observer runs.
final class SerializedObserver<Element: Sendable>: ObserverType, Cancelable {
    private struct State {
        var observer: AnyObserver<Element>?
        var stopped = false
        var draining = false
        var pending: [Event<Element>] = []
    }

    private let state: Mutex<State>
    private let disposed = Atomic<Bool>(false)
    private let cancel: (any Cancelable)?

    init(_ observer: AnyObserver<Element>, cancel: (any Cancelable)? = nil) {
        state = Mutex(State(observer: observer))
        self.cancel = cancel
    }

    var isDisposed: Bool {
        disposed.load(ordering: .acquiring) || (cancel?.isDisposed ?? false)
    }

    func on(_ event: Event<Element>) {
        send { event }
    }

    /// Computes the event to send under the lock, so that the decision and the
    /// place in the queue are atomic; returns early with `nil` to send nothing.
    /// `decide` must not call user code. Returns whether a terminal event was accepted,
    /// so the caller can release its upstream subscriptions.
    @discardableResult
    func send(_ decide: () -> Event<Element>?) -> Bool {
        var terminated = false
        let start = state.withLock { state -> (AnyObserver<Element>, Event<Element>)? in
            guard !state.stopped, let observer = state.observer, let event = decide() else { return nil }
            if event.isStopEvent {
                state.stopped = true
                terminated = true
            }
            if state.draining {
                state.pending.append(event)
                return nil
            }
            state.draining = true
            return (observer, event)
        }
        guard let (observer, first) = start else { return terminated }
        deliver(first, to: observer)
        drain()
        return terminated
    }

    private func deliver(_ event: Event<Element>, to observer: AnyObserver<Element>) {
        if !isDisposed { observer.on(event) }
    }

    private func drain() {
        while true {
            // The observer is moved out of the lock before it is released: its
            // deinit may run arbitrary code that re-enters this object.
            let step = state.withLock { state -> DrainStep in
                guard let observer = state.observer, !state.pending.isEmpty else {
                    state.draining = false
                    state.pending = []
                    if state.stopped {
                        let released = state.observer
                        state.observer = nil
                        return .finished(released)
                    }
                    return .finished(nil)
                }
                let batch = state.pending
                state.pending = []
                return .deliver(observer, batch)
            }
            switch step {
            case .finished: return
            case .deliver(let observer, let events):
                for event in events { deliver(event, to: observer) }
            }
        }
    }

    private enum DrainStep {
        case deliver(AnyObserver<Element>, [Event<Element>])
        case finished(AnyObserver<Element>?)
    }

    func dispose() {
        guard !disposed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let released = state.withLock { state -> AnyObserver<Element>? in
            state.stopped = true
            state.pending = []
            guard !state.draining else { return nil }
            let released = state.observer
            state.observer = nil
            return released
        }
        _ = released
    }
}

/// State touched only from inside `on(_:)` of one subscription.
///
/// Not locked: the event grammar guarantees that `on(_:)` is never called
/// concurrently for one subscription, and successive calls are ordered by the
/// lock or queue hand-off of whoever serialized them.
final class SerialBox<Value>: @unchecked Sendable {
    // Protected by the serialized delivery of the event grammar (see type doc).
    var value: Value

    init(_ value: Value) { self.value = value }
}

/// Operator state guarded by a `SerializedObserver`'s mutex.
///
/// Touched only inside the `decide` closure of that observer's `send(_:)`, which
/// runs under its lock, so concurrent sources (timers, inner observables) see it
/// consistently and in the same order as the events they emit.
final class OutputState<Value>: @unchecked Sendable {
    // Protected by the owning SerializedObserver's mutex (see type doc).
    var value: Value

    init(_ value: Value) { self.value = value }
}
