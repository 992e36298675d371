import Dispatch
import Foundation
import ListModel
import ListStore
import ListdTestSupport
import ReactiveCore
import Synchronization
import Testing

@testable import ListAPI

/// The commit router: heads recorded on the committing thread, observers
/// called on the fan-out queue, a list's commits in order and none lost, in
/// batches when they come faster than the observers take them.
@Suite struct CommitRouterTests {
    static func commit(_ list: String, _ version: Int64, deleted: Bool = false) -> Commit {
        Commit(list: Identifier(list)!, epoch: "e", version: version, deleted: deleted)
    }

    /// What an observer heard, batch by batch.
    final class Heard: Sendable {
        let batches = Mutex<[[Commit]]>([])
        var versions: [Int64] { batches.withLock { $0.flatMap { $0.map(\.version) } } }
        var count: Int { batches.withLock { $0.count } }
    }

    @Test func theHeadIsCurrentWhenAcceptReturnsAndObserversHearOffTheCallersThread() async throws {
        let router = CommitRouter()
        let heard = Heard()
        let observing = Atomic<Bool>(false)
        let subscription = router.commits(of: Identifier("a")).subscribe(onNext: { commits in
            // Blocks the fan-out queue until the test has looked at the head:
            // the caller of accept must not be held by an observer.
            while !observing.load(ordering: .acquiring) {}
            heard.batches.withLock { $0.append(commits) }
        })
        router.accept(Self.commit("a", 2))
        #expect(router.head(of: Identifier("a"))?.version == 2, "recorded before accept returned")
        observing.store(true, ordering: .releasing)
        await router.drain()
        #expect(heard.versions == [2])
        subscription.dispose()
    }

    @Test func commitsThatComeWhileTheFanOutIsBusyArriveInOrderInOneBatchPerList() async throws {
        let router = CommitRouter()
        let a = Heard()
        let b = Heard()
        let gate = DispatchSemaphore(value: 0)
        let entered = Atomic<Bool>(false)
        let first = router.commits(of: Identifier("a")).subscribe(onNext: { commits in
            if !entered.exchange(true, ordering: .acquiringAndReleasing) { gate.wait() }
            a.batches.withLock { $0.append(commits) }
        })
        let second = router.commits(of: Identifier("b")).subscribe(onNext: { commits in
            b.batches.withLock { $0.append(commits) }
        })
        router.accept(Self.commit("a", 2))
        try await waitUntil("the fan-out is inside the first observer") { entered.load(ordering: .acquiring) }
        for version in Int64(3)...50 {
            router.accept(Self.commit("a", version))
            router.accept(Self.commit("b", version))
        }
        router.accept(Self.commit("a", 51, deleted: true))
        gate.signal()
        await router.drain()
        #expect(a.versions == Array(2...51), "every commit of a, in order")
        #expect(b.versions == Array(3...50))
        #expect(a.count == 2, "the first commit alone, then everything queued behind it in one batch")
        #expect(b.count == 1)
        #expect((router.head(of: Identifier("a"))?.version ?? -1) < 0, "a deleted list has no head")
        first.dispose()
        second.dispose()
    }

    @Test func aFollowerThatSubscribesThenReadsTheHeadNeverMissesACommit() async throws {
        let router = CommitRouter()
        let list = Identifier("l")
        // The store calls accept on its own committing thread, not the
        // cooperative pool (where, with every suite starting at once on two
        // cores, a detached task once did not start within the wait's 10 s),
        // so the writer is a thread started here, not a task.
        let writerDone = Flag()
        Thread.detachNewThread {
            for version in Int64(1)...2_000 { router.accept(Self.commit("l", version)) }
            writerDone.raise()
        }
        // Followers come and go while commits arrive: each subscribes, then reads
        // the head; it must hear of every commit after that head.
        var checked = 0
        while checked < 200 {
            let heard = Heard()
            let subscription = router.commits(of: list).subscribe(onNext: { commits in
                heard.batches.withLock { $0.append(commits) }
            })
            // No head yet (or -1 while only followers are known): nothing committed.
            let head = max(0, router.head(of: list)?.version ?? 0)
            try await waitUntil("a commit after v\(head), or the last one") {
                heard.versions.contains { $0 > head } || head == 2_000
            }
            if head < 2_000 {
                let after = heard.versions.filter { $0 > head }
                #expect(after.first == head + 1, "the commit right after the head it read")
            }
            subscription.dispose()
            checked += 1
        }
        try await waitUntil("the writer thread ends") { writerDone.isRaised }
    }
}

/// A flag one thread raises and another reads.
private final class Flag: Sendable {
    private let raised = Atomic<Bool>(false)
    func raise() { raised.store(true, ordering: .releasing) }
    var isRaised: Bool { raised.load(ordering: .acquiring) }
}
