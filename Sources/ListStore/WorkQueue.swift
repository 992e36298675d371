import Dispatch
import Synchronization

/// A queue of jobs for dedicated threads: callers append, threads take.
///
/// The mutex guards the jobs and the closed flag; the semaphore counts
/// wake-ups, so a waiting thread sleeps without spinning.
package final class WorkQueue<Job: Sendable>: Sendable {
    private struct State {
        var jobs: [Job] = []
        var closed = false
    }

    private let state = Mutex(State())
    private let wakeUps = DispatchSemaphore(value: 0)

    package init() {}

    /// Appends a job, or returns `false` when the queue is closed.
    package func enqueue(_ job: Job) -> Bool {
        let accepted = state.withLock { state in
            guard !state.closed else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted { wakeUps.signal() }
        return accepted
    }

    /// Puts jobs taken earlier back at the front, in their order, to be taken
    /// first next time (also once closed: they were accepted). Wakes nobody:
    /// for the thread that took them, which takes again.
    package func putBack(_ jobs: [Job]) {
        guard !jobs.isEmpty else { return }
        state.withLock { $0.jobs.insert(contentsOf: jobs, at: 0) }
    }

    /// Takes up to `max` jobs, waiting up to `timeout` for the first.
    /// - Returns: the jobs (empty after a timeout), or `nil` once the queue is
    ///   closed and drained.
    package func take(max: Int, timeout: DispatchTime) -> [Job]? {
        while true {
            let taken: [Job]? = state.withLock { state in
                if state.jobs.isEmpty { return state.closed ? nil : [] }
                let count = Swift.min(max, state.jobs.count)
                let jobs = Array(state.jobs.prefix(count))
                state.jobs.removeFirst(count)
                return jobs
            }
            guard let taken else { return nil }
            if !taken.isEmpty { return taken }
            if wakeUps.wait(timeout: timeout) == .timedOut { return [] }
        }
    }

    /// How many jobs wait to be taken.
    package var count: Int { state.withLock { $0.jobs.count } }

    /// Refuses new jobs and wakes every waiting thread so it can drain and stop.
    package func close(wakingThreads threads: Int) {
        state.withLock { $0.closed = true }
        for _ in 0..<threads { wakeUps.signal() }
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
