import Foundation
import ListStore

#if canImport(Glibc)
    import Glibc
#endif

/// Stages and serializes the answers of catch-ups (a net change over many
/// versions, or a reset's whole snapshot) on a thread of its own, at a lower
/// scheduling priority (Linux nice +10) than the store's writer and the event
/// loops, beside the store's catch-up thread.
///
/// Why: an answer to a client thousands of versions behind costs milliseconds
/// of CPU to stage and encode, and on Swift's cooperative pool it would take
/// that CPU from the writes and from the fan-out of live changes. Live answers
/// (a commit's recorded change) never come here.
///
/// Concurrency: ``run(_:)`` may be called from any task; jobs run in order on
/// the one thread, which ends when the stager is released.
final class CatchUpStager: Sendable {
    private let jobs = WorkQueue<@Sendable () -> Void>()

    /// How much lower the thread's scheduling priority is (Linux `nice`).
    static let niceness: Int32 = 10

    init() {
        let jobs = self.jobs
        let thread = Thread {
            nameCurrentThread("catchup-stager")
            #if os(Linux)
                // Linux keeps a nice value per thread; `who` 0 is the calling thread.
                _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, Self.niceness)
            #endif
            while let batch = jobs.take(max: 16, timeout: .distantFuture) {
                for job in batch { job() }
            }
        }
        thread.start()
    }

    deinit { jobs.close(wakingThreads: 1) }

    /// Runs `body` on the stager's thread and returns what it made.
    func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            let queued = jobs.enqueue { continuation.resume(returning: body()) }
            // Closed only once the stager is gone, when nobody can be calling: run here then.
            if !queued { continuation.resume(returning: body()) }
        }
    }
}
