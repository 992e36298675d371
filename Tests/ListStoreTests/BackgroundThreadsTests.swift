import Dispatch
import Foundation
import Synchronization
import Testing

@testable import ListStore

/// ``WorkQueue/takeOverdue(max:olderThan:)`` hands out only jobs that waited
/// longer than the patience, oldest first, and nothing once the queue
/// closes; ``BackgroundThreads`` runs jobs in `SCHED_IDLE`, and a job kept
/// waiting, or starved mid-way on the first thread, on the second at nice +10.
@Suite struct BackgroundThreadsTests {
    @Test func aJobIsOverdueOnlyOnceItHasWaitedLongerThanThePatience() throws {
        let queue = WorkQueue<Int>(timed: true)
        #expect(queue.enqueue(1))
        let young = try #require(queue.takeOverdue(max: 4, olderThan: .milliseconds(100)))
        #expect(young.jobs.isEmpty)
        #expect(young.nextDue > .zero && young.nextDue <= .milliseconds(100))
        queue.sleepUnlessClosed(for: young.nextDue)
        #expect(queue.takeOverdue(max: 4, olderThan: .milliseconds(100))?.jobs == [1])
        // With none waiting, the next look is a patience away.
        #expect(queue.takeOverdue(max: 4, olderThan: .milliseconds(100))?.nextDue == .milliseconds(100))
        // Jobs too young stay for the other threads, in their order.
        #expect(queue.enqueue(2))
        #expect(queue.enqueue(3))
        #expect(queue.takeOverdue(max: 4, olderThan: .seconds(60))?.jobs == [])
        #expect(queue.take(max: 4, timeout: .now()) == [2, 3])
    }

    @Test func overdueJobsAreTakenOldestFirstUpToMax() {
        let queue = WorkQueue<Int>(timed: true)
        for job in 1...3 { #expect(queue.enqueue(job)) }
        queue.sleepUnlessClosed(for: .milliseconds(30))
        #expect(queue.takeOverdue(max: 2, olderThan: .milliseconds(20))?.jobs == [1, 2])
        #expect(queue.takeOverdue(max: 2, olderThan: .milliseconds(20))?.jobs == [3])
    }

    @Test(.timeLimit(.minutes(1))) func closingEndsASleepAndLeavesTheJobsToDrain() async {
        let queue = WorkQueue<Int>(timed: true)
        #expect(queue.enqueue(1))
        // A sleep of an hour ends when the queue closes; the job is left for
        // the thread that drains the queue.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread {
                queue.sleepUnlessClosed(for: .seconds(3600))
                done.resume()
            }.start()
            queue.close(wakingThreads: 0)
        }
        #expect(queue.takeOverdue(max: 1, olderThan: .zero) == nil)
        #expect(queue.take(max: 4, timeout: .now()) == [1])
        #expect(queue.take(max: 4, timeout: .now()) == nil)
    }

    #if os(Linux)
        /// Where a job ran: its thread's name, whether in SCHED_IDLE, its nice value.
        struct Place: Hashable, Sendable {
            var name: String
            var idle: Bool
            var nice: Int32

            static var current: Place {
                let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
                return Place(
                    name: comm.trimmingCharacters(in: .whitespacesAndNewlines),
                    idle: BackgroundThreads.scheduledWhenIdle, nice: BackgroundThreads.niceValue)
            }
        }

        static func start(_ queue: WorkQueue<@Sendable () -> Void>, patience: Duration) {
            BackgroundThreads.start(names: ("bg-idle", "bg-overdue"), queue: queue, patience: patience) { take in
                while let jobs = take() { jobs.forEach { $0() } }
            }
        }

        /// Each thread is scheduled as its name says.
        static func expectScheduledAsNamed(_ place: Place, base: Int32) {
            if place.name == "bg-idle" {
                #expect(place == Place(name: "bg-idle", idle: true, nice: base))
            } else {
                #expect(place == Place(name: "bg-overdue", idle: false, nice: max(base, BackgroundThreads.niceness)))
            }
        }

        /// A thread held by a long job leaves the next one to the other: the
        /// idle thread's to the overdue thread once it is overdue, or (on a
        /// machine too busy to give the idle thread any time) the other way
        /// round. Each job answers once: starved on the idle thread, a job
        /// may run on both threads.
        @Test(.timeLimit(.minutes(1))) func aJobRunsWhenIdleOrOnceOverdueAtNiceTen() async {
            let queue = WorkQueue<@Sendable () -> Void>(timed: true)
            defer { queue.close(wakingThreads: 1) }
            Self.start(queue, patience: .milliseconds(50))
            let base = Place.current.nice
            let release = DispatchSemaphore(value: 0)
            let holding = RunOnce()
            let held = await withCheckedContinuation { done in
                _ = queue.enqueue {
                    let place = Place.current
                    guard holding.claim() else { return }
                    done.resume(returning: place)
                    release.wait()
                }
            }
            let nextOnce = RunOnce()
            let next = await withCheckedContinuation { done in
                _ = queue.enqueue {
                    let place = Place.current
                    guard nextOnce.claim() else { return }
                    done.resume(returning: place)
                    release.signal()
                }
            }
            #expect(Set([held.name, next.name]) == ["bg-idle", "bg-overdue"])
            for place in [held, next] { Self.expectScheduledAsNamed(place, base: base) }
        }

        /// With every core kept busy by normal threads, a job on the idle
        /// thread gets (almost) no CPU: the overdue thread runs it too (or,
        /// taken by nobody for the patience, alone).
        @Test(.timeLimit(.minutes(1))) func aJobStarvedOnTheIdleThreadRunsOnTheOverdueThreadToo() async {
            let queue = WorkQueue<@Sendable () -> Void>(timed: true)
            defer { queue.close(wakingThreads: 1) }
            Self.start(queue, patience: .milliseconds(100))
            let base = Place.current.nice
            let busy = Atomic<Bool>(true)
            let spinners = max(1, ProcessInfo.processInfo.activeProcessorCount)
            let spinning = Atomic<Int>(0)
            // Every core busy before the job is queued.
            await withCheckedContinuation { (allSpinning: CheckedContinuation<Void, Never>) in
                for _ in 0..<spinners {
                    Thread {
                        if spinning.add(1, ordering: .relaxed).newValue == spinners { allSpinning.resume() }
                        var spins = 0
                        while busy.load(ordering: .relaxed) { spins &+= 1 }
                        _ = spins
                    }.start()
                }
            }
            defer { busy.store(false, ordering: .relaxed) }
            let runs = Mutex<[Place]>([])
            let once = RunOnce()
            let answer = await withCheckedContinuation { (done: CheckedContinuation<Place, Never>) in
                _ = queue.enqueue {
                    let place = Place.current
                    runs.withLock { $0.append(place) }
                    // Work that needs the CPU: on the idle thread it does not
                    // get it while the spinners run.
                    var work = 0
                    while !once.isDone, work < 20_000_000 { work &+= 1 }
                    if once.claim() { done.resume(returning: place) }
                }
            }
            busy.store(false, ordering: .relaxed)
            let all = runs.withLock { $0 }
            // The overdue thread ran it. Which of the two finished first is
            // the scheduler's: alone here the overdue one (nice +10 against
            // SCHED_IDLE), but with the whole test run loading the machine the
            // idle thread's head start once won (after 27 s), though the
            // overdue thread had taken the job too.
            #expect(all.contains { $0.name == "bg-overdue" }, "run only by \(all), answered by \(answer)")
            for place in all { Self.expectScheduledAsNamed(place, base: base) }
            if all.first?.name == "bg-idle" { #expect(all.map(\.name).prefix(2) == ["bg-idle", "bg-overdue"]) }
        }
    #endif
}
