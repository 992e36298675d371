import Dispatch

/// Runs actions one at a time on a serial Dispatch queue.
///
/// `observe(on:)` with it moves delivery off the emitting thread (for instance off
/// the store's writer thread) while keeping the order of events.
public final class SerialQueueScheduler: Scheduler {
    /// The queue actions run on.
    public let queue: DispatchQueue

    /// Creates a scheduler on a new serial queue named `label`.
    public convenience init(label: String, qos: DispatchQoS = .default) {
        self.init(queue: DispatchQueue(label: label, qos: qos))
    }

    /// Creates a scheduler on an existing queue, which must be serial.
    public init(queue: DispatchQueue) {
        self.queue = queue
    }

    /// The monotonic uptime clock.
    public var now: Duration { monotonicNow() }

    /// Enqueues `action` on the queue.
    @discardableResult
    public func schedule(_ action: @escaping @Sendable () -> Void) -> any Disposable {
        let cancel = SingleAssignmentDisposable()
        queue.async {
            if !cancel.isDisposed { action() }
        }
        return cancel
    }

    /// Enqueues `action` on the queue after `delay`.
    @discardableResult
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Disposable {
        guard delay > .zero else { return schedule(action) }
        let cancel = SingleAssignmentDisposable()
        queue.asyncAfter(deadline: .now() + .nanoseconds(delay.clampedNanoseconds)) {
            if !cancel.isDisposed { action() }
        }
        return cancel
    }
}
