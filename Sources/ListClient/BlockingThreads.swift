import Foundation

/// Threads for blocking work (a socket exchange that may wait minutes), kept
/// and reused instead of started for each job.
///
/// Why: `SocketTransport` runs each request on a thread of its own, off Swift's
/// cooperative pool. Starting a thread per request (`Thread.detachNewThread`)
/// put a thread creation and teardown on the path of every long-poll, run from
/// the cooperative pool while a hundred followers woken by one write queued on
/// it. A finished job's thread now waits for the next job instead, and leaves
/// after `idleTimeout` without one.
///
/// A job never waits behind another: when every thread is busy (each may be
/// parked in a long-poll) a new one starts. Thread-safe.
final class BlockingThreads: @unchecked Sendable {
    // @unchecked: `jobs` and `waiting` are only read and written with `condition` locked.
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    /// Threads waiting on `condition` for a job.
    private var waiting = 0
    /// How long a thread waits for a job before it ends.
    let idleTimeout: TimeInterval

    /// The threads every `SocketTransport` shares.
    static let shared = BlockingThreads(idleTimeout: 30)

    init(idleTimeout: TimeInterval) { self.idleTimeout = idleTimeout }

    /// How many threads wait for a job now.
    var waitingThreads: Int {
        condition.lock()
        defer { condition.unlock() }
        return waiting
    }

    /// Runs `job` on a waiting thread, or on a new one when none waits for it.
    func run(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        // Every queued job needs a waiting thread of its own: one already woken
        // for an earlier job may not have taken it yet.
        let start = jobs.count > waiting
        if !start { condition.signal() }
        condition.unlock()
        if start { Thread.detachNewThread { [self] in work() } }
    }

    private func work() {
        condition.lock()
        while true {
            if jobs.isEmpty {
                waiting += 1
                let signalled = condition.wait(until: Date(timeIntervalSinceNow: idleTimeout))
                waiting -= 1
                if !signalled && jobs.isEmpty {
                    condition.unlock()
                    return
                }
                continue
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job()
            condition.lock()
        }
    }
}
