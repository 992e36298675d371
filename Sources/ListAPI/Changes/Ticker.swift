import Synchronization

/// A repeating timer as a structured task: calls its body every tick until the
/// body returns `false` or the ticker is stopped. The change hub expires parked
/// waiters with one, the event hub sends heartbeats with another.
///
/// Why a task and not a dispatch timer: the hubs' other work (computing and
/// sending answers) already runs in tasks; one concurrency model means one
/// place to look for what runs when, and cancelling the task ends the ticks.
final class Ticker: Sendable {
    /// The tick: deadlines are rounded up to whole ticks.
    let tick: Duration
    private let origin = ContinuousClock.now
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// A ticker of `tick` (at least a millisecond); nothing runs until ``start(_:)``.
    init(tick: Duration) {
        self.tick = max(tick, .milliseconds(1))
    }

    deinit { stop() }

    /// Runs `body` every tick, until it returns `false` or ``stop()`` is called.
    /// The body should hold its owner weakly, so that the ticker does not keep it alive.
    func start(_ body: @escaping @Sendable () -> Bool) {
        let tick = self.tick
        let started = Task.detached {
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: tick)
                } catch {
                    return
                }
                if !body() { return }
            }
        }
        task.withLock { running in
            running?.cancel()
            running = started
        }
    }

    /// Ends the ticks.
    func stop() {
        task.withLock { $0?.cancel() }
    }

    /// The number of whole ticks since the ticker was made.
    var currentTick: UInt64 {
        UInt64((ContinuousClock.now - origin) / tick)
    }

    /// The first tick at or after `timeout` from now.
    func deadline(after timeout: Duration) -> UInt64 {
        let ticks = (ContinuousClock.now - origin + timeout) / tick
        return UInt64(ticks.rounded(.up))
    }
}
