import Dispatch

/// Decides where and when work runs: inline, on a Dispatch queue, or in virtual time.
///
/// Time-based operators (`debounce`, `throttle`, `timeout`) and `observe(on:)` /
/// `subscribe(on:)` take a scheduler, so tests can run them on a
/// `TestScheduler` without sleeping. Every scheduler here runs the actions it is
/// given one at a time, in the order they are due.
public protocol Scheduler: Sendable {
    /// The scheduler's current time, on a monotonic clock with an arbitrary origin.
    var now: Duration { get }

    /// Runs `action` as soon as possible; disposing the result cancels it if it has not started.
    @discardableResult
    func schedule(_ action: @escaping @Sendable () -> Void) -> any Disposable

    /// Runs `action` after `delay`; disposing the result cancels it if it has not started.
    @discardableResult
    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Disposable
}

extension Duration {
    /// The duration in whole nanoseconds, clamped to what Dispatch accepts.
    var clampedNanoseconds: Int {
        let (seconds, attoseconds) = components
        guard seconds < Int64(Int.max / 1_000_000_000) else { return Int.max }
        guard seconds >= 0 else { return 0 }
        return Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
    }
}

/// The monotonic uptime clock shared by the Dispatch-based schedulers.
func monotonicNow() -> Duration {
    .nanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds))
}
