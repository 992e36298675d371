import Dispatch
import Foundation
import Synchronization
import Testing

@testable import ListClient

/// The threads SocketTransport's requests block on: reused, and never so few
/// that a job waits behind a blocked one (a parked long-poll).
@Suite struct BlockingThreadsTests {
    @Test func aJobNeverWaitsBehindBlockedOnes() {
        let threads = BlockingThreads(idleTimeout: 5)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<8 {
            threads.run {
                release.wait()
                done.signal()
            }
        }
        // Runs only if it got a thread of its own while eight are blocked.
        threads.run { for _ in 0..<8 { release.signal() } }
        for _ in 0..<8 { #expect(done.wait(timeout: .now() + 10) == .success) }
    }

    @Test func aThreadThatFinishedTakesTheNextJob() {
        let threads = BlockingThreads(idleTimeout: 5)
        let seen = Mutex<[pthread_t]>([])
        for _ in 0..<3 {
            let done = DispatchSemaphore(value: 0)
            threads.run {
                seen.withLock { $0.append(pthread_self()) }
                done.signal()
            }
            #expect(done.wait(timeout: .now() + 10) == .success)
            // Wait until the thread is back waiting, so the next job has one to take.
            let deadline = ContinuousClock.now + .seconds(10)
            while threads.waitingThreads == 0 && ContinuousClock.now < deadline { sched_yield() }
        }
        let ids = seen.withLock { $0 }
        #expect(ids.count == 3)
        #expect(Set(ids).count == 1, "one thread ran all three jobs")
    }

    @Test func anIdleThreadEnds() {
        let threads = BlockingThreads(idleTimeout: 0.05)
        let done = DispatchSemaphore(value: 0)
        threads.run { done.signal() }
        #expect(done.wait(timeout: .now() + 10) == .success)
        let deadline = ContinuousClock.now + .seconds(10)
        while threads.waitingThreads == 0 && ContinuousClock.now < deadline { sched_yield() }
        // Waiting for the thread to leave is waiting on its state, not a sleep.
        while threads.waitingThreads > 0 && ContinuousClock.now < deadline { sched_yield() }
        #expect(threads.waitingThreads == 0)
    }
}
