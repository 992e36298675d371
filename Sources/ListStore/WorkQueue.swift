import Dispatch
import Synchronization

/// A queue of jobs for dedicated threads: callers append, threads take.
///
/// The mutex guards the jobs and the closed flag; the semaphore counts
/// wake-ups, so a waiting thread sleeps without spinning. A timed queue
/// also keeps when each job was queued, for a thread that takes only the
/// jobs that have waited too long (``takeOverdue(max:olderThan:)``).
package final class WorkQueue<Job: Sendable>: Sendable {
    private struct State {
        var jobs: [Job] = []
        /// When each job was queued, in the same order (a timed queue only).
        var queued: [ContinuousClock.Instant] = []
        var closed = false
    }

    private let state = Mutex(State())
    private let wakeUps = DispatchSemaphore(value: 0)
    /// Whether ``State/queued`` is kept.
    private let timed: Bool
    /// Wakes a thread in ``sleepUnlessClosed(for:)`` when the queue closes.
    private let closing = DispatchSemaphore(value: 0)

    /// A queue; `timed` keeps when each job was queued (a clock read per job).
    package init(timed: Bool = false) {
        self.timed = timed
    }

    /// Appends a job, or returns `false` when the queue is closed.
    package func enqueue(_ job: Job) -> Bool {
        let now: ContinuousClock.Instant? = timed ? .now : nil
        let accepted = state.withLock { state in
            guard !state.closed else { return false }
            state.jobs.append(job)
            if let now { state.queued.append(now) }
            return true
        }
        if accepted { wakeUps.signal() }
        return accepted
    }

    /// Puts jobs taken earlier back at the front, in their order, to be taken
    /// first next time (also once closed: they were accepted). Wakes nobody:
    /// for the thread that took them, which takes again. A timed queue counts
    /// their wait from now.
    package func putBack(_ jobs: [Job]) {
        guard !jobs.isEmpty else { return }
        let now: ContinuousClock.Instant? = timed ? .now : nil
        state.withLock { state in
            state.jobs.insert(contentsOf: jobs, at: 0)
            if let now { state.queued.insert(contentsOf: repeatElement(now, count: jobs.count), at: 0) }
        }
    }

    /// Takes up to `max` jobs, waiting up to `timeout` for the first.
    /// - Returns: the jobs (empty after a timeout), or `nil` once the queue is
    ///   closed and drained.
    package func take(max: Int, timeout: DispatchTime) -> [Job]? {
        while true {
            let taken: [Job]? = state.withLock { state in
                if state.jobs.isEmpty { return state.closed ? nil : [] }
                return Self.takeFirst(Swift.min(max, state.jobs.count), from: &state)
            }
            guard let taken else { return nil }
            if !taken.isEmpty { return taken }
            if wakeUps.wait(timeout: timeout) == .timedOut { return [] }
        }
    }

    /// Takes up to `max` jobs that have waited longer than `patience` (the
    /// oldest first), without waiting; a timed queue only.
    /// - Returns: the jobs, or, with none due, how long until the oldest job
    ///   waiting is (`patience` when none waits); `nil` once the queue is
    ///   closed: what is left then is for the threads that
    ///   ``take(max:timeout:)`` to drain.
    package func takeOverdue(max: Int, olderThan patience: Duration) -> (jobs: [Job], nextDue: Duration)? {
        precondition(timed, "takeOverdue needs a timed WorkQueue")
        let now = ContinuousClock.now
        return state.withLock { state in
            if state.closed { return nil }
            guard let oldest = state.queued.first else { return ([], patience) }
            let waited = now - oldest
            guard waited > patience else { return ([], patience - waited) }
            var count = 1
            while count < Swift.min(max, state.queued.count), now - state.queued[count] > patience { count += 1 }
            return (Self.takeFirst(count, from: &state), .zero)
        }
    }

    /// Sleeps for `duration`, or less when the queue closes meanwhile (for a
    /// thread that polls with ``takeOverdue(max:olderThan:)``).
    package func sleepUnlessClosed(for duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = Swift.max(0, Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)) + 1
        if closing.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success {
            closing.signal()  // for the next thread sleeping here
        }
    }

    private static func takeFirst(_ count: Int, from state: inout State) -> [Job] {
        let jobs = Array(state.jobs.prefix(count))
        state.jobs.removeFirst(count)
        if !state.queued.isEmpty { state.queued.removeFirst(count) }
        return jobs
    }

    /// How many jobs wait to be taken.
    package var count: Int { state.withLock { $0.jobs.count } }

    /// Refuses new jobs and wakes every waiting thread so it can drain and stop.
    package func close(wakingThreads threads: Int) {
        state.withLock { $0.closed = true }
        for _ in 0..<threads { wakeUps.signal() }
        // Each thread in sleepUnlessClosed that takes it passes it on.
        closing.signal()
    }
}

/// Set once when the task that queued a job is cancelled; the thread that
/// takes the job checks it before starting and skips a cancelled job.
package final class CancellationFlag: Sendable {
    private let flag = Atomic<Bool>(false)

    package init() {}

    /// Marks the job cancelled (from the task's cancellation handler, any thread).
    package func cancel() { flag.store(true, ordering: .releasing) }

    /// Whether the job was cancelled.
    package var isCancelled: Bool { flag.load(ordering: .acquiring) }
}
