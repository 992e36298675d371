import Synchronization

/// A scheduler whose clock only moves when told to: time-based code runs in tests
/// deterministically and instantly.
///
/// Actions are ordered by due time, then by the order they were scheduled.
/// `start()` runs everything (moving the clock to each action's time),
/// `advance(to:)` runs what is due up to a time. Actions run outside the lock, on
/// the thread that called `start` or `advance`, so they may schedule more work.
///
/// - Complexity: O(log n) to find the slot plus O(n) to insert, for n queued actions.
public final class VirtualTimeScheduler: Scheduler {
    private struct Item {
        let time: Duration
        let sequence: UInt64
        let action: @Sendable () -> Void
        let cancel: SingleAssignmentDisposable
    }

    private struct State {
        var clock: Duration
        var queue: [Item] = []
        var sequence: UInt64 = 0
        var stopped = false
    }

    private let state: Mutex<State>

    /// Creates a scheduler whose clock starts at `initialClock`.
    public init(initialClock: Duration = .zero) {
        state = Mutex(State(clock: initialClock))
    }

    /// The virtual time.
    public var now: Duration { state.withLock { $0.clock } }

    /// Whether no action is waiting.
    public var isIdle: Bool { state.withLock { $0.queue.isEmpty } }

    /// Schedules `action` at the current virtual time, after what is already due then.
    @discardableResult
    public func schedule(_ action: @escaping @Sendable () -> Void) -> any Disposable {
        schedule(after: .zero, action)
    }

    /// Schedules `action` at `now + delay` (a negative delay counts as zero).
    @discardableResult
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Disposable {
        let cancel = SingleAssignmentDisposable()
        state.withLock { state in
            let time = state.clock + max(delay, .zero)
            insert(Item(time: time, sequence: state.sequence, action: action, cancel: cancel), into: &state)
        }
        return cancel
    }

    /// Schedules `action` at the absolute virtual time `time` (or now, if that has passed).
    @discardableResult
    public func schedule(at time: Duration, _ action: @escaping @Sendable () -> Void) -> any Disposable {
        let cancel = SingleAssignmentDisposable()
        state.withLock { state in
            let at = max(time, state.clock)
            insert(Item(time: at, sequence: state.sequence, action: action, cancel: cancel), into: &state)
        }
        return cancel
    }

    private func insert(_ item: Item, into state: inout State) {
        state.sequence += 1
        var low = 0
        var high = state.queue.count
        while low < high {
            let mid = (low + high) / 2
            if state.queue[mid].time <= item.time { low = mid + 1 } else { high = mid }
        }
        state.queue.insert(item, at: low)
    }

    /// Runs every queued action, including those scheduled meanwhile, until none is left or `stop()` is called.
    public func start() {
        state.withLock { $0.stopped = false }
        while let item = pop(until: nil) {
            if !item.cancel.isDisposed { item.action() }
        }
    }

    /// Runs the actions due up to `time`, then sets the clock to `time`.
    public func advance(to time: Duration) {
        state.withLock { $0.stopped = false }
        while let item = pop(until: time) {
            if !item.cancel.isDisposed { item.action() }
        }
        state.withLock { state in
            if !state.stopped { state.clock = max(state.clock, time) }
        }
    }

    /// Runs the actions due within `interval` from now.
    public func advance(by interval: Duration) {
        advance(to: now + interval)
    }

    /// Makes a running `start()` or `advance(to:)` return after the current action.
    public func stop() {
        state.withLock { $0.stopped = true }
    }

    private func pop(until limit: Duration?) -> Item? {
        state.withLock { state -> Item? in
            // Cancelled actions are dropped without moving the clock to their time.
            while let first = state.queue.first, first.cancel.isDisposed {
                state.queue.removeFirst()
            }
            guard !state.stopped, let first = state.queue.first else { return nil }
            if let limit, first.time > limit { return nil }
            state.queue.removeFirst()
            state.clock = max(state.clock, first.time)
            return first
        }
    }
}
