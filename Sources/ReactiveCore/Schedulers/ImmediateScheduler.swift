import Dispatch

/// Runs actions inline, on the calling thread, at once.
///
/// The default for operators that need no thread hop. A delayed action
/// (`schedule(after:)` with a positive delay) cannot run inline without blocking,
/// so it runs on a global Dispatch queue after the delay.
public struct ImmediateScheduler: Scheduler {
    /// The shared instance.
    public static let instance = ImmediateScheduler()

    /// Creates the scheduler; all instances behave alike.
    public init() {}

    /// The monotonic uptime clock.
    public var now: Duration { monotonicNow() }

    /// Runs `action` now, before returning.
    @discardableResult
    public func schedule(_ action: @escaping @Sendable () -> Void) -> any Disposable {
        action()
        return NopDisposable()
    }

    /// Runs `action` now if `delay` is not positive, else on a global queue after `delay`.
    @discardableResult
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Disposable {
        guard delay > .zero else { return schedule(action) }
        let cancel = SingleAssignmentDisposable()
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(delay.clampedNanoseconds)) {
            if !cancel.isDisposed { action() }
        }
        return cancel
    }
}
