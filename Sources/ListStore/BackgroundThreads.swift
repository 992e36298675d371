import Foundation
import Synchronization

#if os(Linux)
    import CSystem
    import Glibc
#endif

/// The threads of reads that can wait for everything else: catch-ups many
/// versions behind (``SQLiteStore/changes(of:since:)``).
///
/// Two threads serve one timed ``WorkQueue``. The first, in Linux's
/// `SCHED_IDLE` policy, takes each job as it comes and runs only on CPU time
/// no other thread wants: the writer and the event loops never wait for it,
/// since a waking thread of the normal policy takes its CPU at once (at nice
/// +10, the catch-up thread cost the writer a quarter of its writes/s on two
/// cores; Benchmarks/ServiceBenchmarks/README.md, session 24). The second, at
/// nice +10, runs what waited longer than ``patience`` on a machine that
/// never idles: a job still queued, or the batch the first thread has been
/// running that long while getting less than half of that time on a CPU and
/// waiting for one now (starved mid-way: not merely long, nor blocked on a
/// lock or the disk), which it then runs too. So a job may
/// run twice, at once, on the two threads: it must have no effect but its
/// answer, given once (``RunOnce``). Two threads rather than one that
/// changes policy: an unprivileged thread cannot leave `SCHED_IDLE`.
package enum BackgroundThreads {
    /// How long a job waits for idle CPU before the second thread runs it.
    package static let patience: Duration = .milliseconds(250)

    /// The second thread's nice value (a process already running lower keeps its own).
    package static let niceness: Int32 = 10

    /// Starts the two threads named `names` serving `queue` (a timed one):
    /// each runs `body` with its way of taking up to `max` jobs, which gives
    /// `nil` once the queue is closed (and, for the first, drained).
    package static func start<Job: Sendable>(
        names: (idle: String, overdue: String), queue: WorkQueue<Job>, max: Int = 1,
        patience: Duration = BackgroundThreads.patience,
        _ body: @escaping @Sendable (_ take: () -> [Job]?) -> Void
    ) {
        // The first thread's batch, from when it took it (and the thread's CPU
        // time then); shared once the second took it too.
        let running = Mutex<(jobs: [Job], since: ContinuousClock.Instant, cpu: Duration, shared: Bool)?>(nil)
        let idleClock = Mutex<ThreadCPUClock?>(nil)
        let idle = Thread {
            nameCurrentThread(names.idle)
            scheduleWhenIdle()
            let clock = ThreadCPUClock.current
            idleClock.withLock { $0 = clock }
            body {
                running.withLock { $0 = nil }
                guard let jobs = queue.take(max: max, timeout: .distantFuture) else { return nil }
                let cpu = clock?.elapsed ?? .zero
                running.withLock { $0 = (jobs, .now, cpu, false) }
                return jobs
            }
        }
        let overdue = Thread {
            nameCurrentThread(names.overdue)
            lowerPriority(to: niceness)
            body {
                while true {
                    guard let due = queue.takeOverdue(max: max, olderThan: patience) else { return nil }
                    if !due.jobs.isEmpty { return due.jobs }
                    var wait = due.nextDue
                    let now = ContinuousClock.now
                    let cpu = idleClock.withLock { $0 }?.elapsed
                    let stalled: [Job]? = running.withLock { running in
                        guard let batch = running, !batch.shared else { return nil }
                        let ran = now - batch.since
                        guard ran > patience else {
                            wait = Swift.min(wait, patience - ran)
                            return nil
                        }
                        // On a CPU for half the time or more: long, not
                        // starved; off it and not runnable: blocked, not starved.
                        guard let cpu, (cpu - batch.cpu) * 2 < ran, idleClock.withLock({ $0 })?.isRunnable == true
                        else {
                            wait = Swift.min(wait, patience)
                            return nil
                        }
                        running?.shared = true
                        return batch.jobs
                    }
                    if let stalled { return stalled }
                    queue.sleepUnlessClosed(for: wait)
                }
            }
        }
        idle.start()
        overdue.start()
    }

    /// Puts the calling thread in `SCHED_IDLE`; where the system refuses (a
    /// seccomp profile, say), lowers it to nice +10 instead, as before
    /// `SCHED_IDLE` was used (elsewhere: nothing).
    package static func scheduleWhenIdle() {
        #if os(Linux)
            if csystem_schedule_when_idle() != 0 { lowerPriority(to: niceness) }
        #endif
    }

    /// Sets the calling thread's nice value to `niceness` (Linux keeps a nice
    /// value per thread; `who` 0 is the calling thread); unprivileged, a
    /// thread cannot go above the nice value it has.
    package static func lowerPriority(to niceness: Int32) {
        #if os(Linux)
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
        #endif
    }

    /// Whether the calling thread is in `SCHED_IDLE` (for tests and diagnostics).
    package static var scheduledWhenIdle: Bool {
        #if os(Linux)
            return csystem_scheduled_when_idle() == 1
        #else
            return false
        #endif
    }

    /// The calling thread's nice value (for tests and diagnostics).
    package static var niceValue: Int32 {
        #if os(Linux)
            return getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        #else
            return 0
        #endif
    }
}

/// The CPU time and run state of one thread, readable from any thread
/// (Linux: `pthread_getcpuclockid`, `/proc/self/task/TID/stat`).
struct ThreadCPUClock: Sendable {
    #if os(Linux)
        let id: clockid_t
        let statPath: String
    #endif

    /// The calling thread's clock, if the system gives one.
    static var current: ThreadCPUClock? {
        #if os(Linux)
            var id = clockid_t()
            guard pthread_getcpuclockid(pthread_self(), &id) == 0 else { return nil }
            return ThreadCPUClock(id: id, statPath: "/proc/self/task/\(csystem_thread_id())/stat")
        #else
            return nil
        #endif
    }

    /// Whether the thread is running or waiting for a CPU (state `R`), not
    /// sleeping on a lock, a semaphore or the disk.
    var isRunnable: Bool {
        #if os(Linux)
            // "TID (NAME) STATE ...": the name may hold spaces and parentheses.
            guard let stat = try? String(contentsOfFile: statPath, encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return false }
            return stat[close...].dropFirst().drop { $0 == " " }.first == "R"
        #else
            return false
        #endif
    }

    /// The CPU time the thread has used so far.
    var elapsed: Duration {
        #if os(Linux)
            var time = timespec()
            guard clock_gettime(id, &time) == 0 else { return .zero }
            return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
        #else
            return .zero
        #endif
    }
}

/// A job's one answer when it may run on two threads at once (``BackgroundThreads``):
/// the first run to finish answers; a run that starts after it skips the work.
package final class RunOnce: Sendable {
    private let done = Atomic<Bool>(false)

    package init() {}

    /// Whether a run has answered already (a later run can skip its work).
    package var isDone: Bool { done.load(ordering: .acquiring) }

    /// True for the first caller only: it answers.
    package func claim() -> Bool {
        !done.exchange(true, ordering: .acquiringAndReleasing)
    }
}
