import ListModel
import ListStore
import ListdTestSupport
import Synchronization
import Testing

/// Catch-ups run on reader threads beside the writer (the rank index from the
/// ``IndexBoard``, moved to each reader's snapshot): net changes asked while
/// random writes commit, each from a random version the test has seen, replay
/// stage by stage to exactly the snapshot at the version they name. The
/// oracle is the same as ``ChangeEnginePropertyTests``' (an independent UIKit
/// batch-update model over snapshots kept at every version).
@Suite struct ConcurrentCatchUpTests {
    /// Versions the writer has reached, with the snapshot at each.
    final class States: Sendable {
        private let states = Mutex<[Int64: ListSnapshot]>([:])
        private let finished = Atomic<Bool>(false)
        /// Answers the readers have had so far.
        let answered = Atomic<Int>(0)

        func record(_ snapshot: ListSnapshot) { states.withLock { $0[snapshot.version] = snapshot } }
        subscript(version: Int64) -> ListSnapshot? { states.withLock { $0[version] } }
        var versions: [Int64] { states.withLock { Array($0.keys) } }
        var isFinished: Bool { finished.load(ordering: .acquiring) }
        func finish() { finished.store(true, ordering: .releasing) }
    }

    static let writes = longTests ? 2_000 : 300

    /// No reader answered within 30 s of a write.
    struct NoAnswer: Error {}

    @Test(arguments: StoreKind.tested, [UInt64(1), 2, 3])
    func catchUpsBesideWritesReplayToTheVersionTheyName(_ kind: StoreKind, seed: UInt64) async throws {
        var configuration = StoreConfiguration(
            fullSync: false, maxModelBytes: 48, historyVersions: 10_000, positionGap: seed % 2 == 1 ? 4 : 1 << 20)
        // A published index moved to a reader's snapshot must agree with it:
        // the store would recover (rebuild from the rows), but here it must never have to.
        let inconsistencies = Inconsistencies()
        configuration.onInconsistency = { inconsistencies.record($0) }
        defer { #expect(inconsistencies.all == [], "seed \(seed): the store found itself inconsistent") }
        try await withStore(kind, configuration) { store in
            let list = id("l")
            let created = try await store.createList(
                id: list, name: "start",
                sections: [
                    NewSection(id: id("a"), items: (0..<400).map { NewItem(id: id("a\($0)")) }),
                    NewSection(id: id("b"), items: (0..<10).map { NewItem(id: id("b\($0)")) }),
                ])
            let states = States()
            states.record(created)

            let writer = Task {
                var rng = SeededGenerator(seed: seed)
                var current = created
                for _ in 0..<Self.writes {
                    var reference = ReferenceList(name: "start", maxModelBytes: 48)
                    reference.sections = current.sections
                    let ops = HistoryPropertyTests.randomOps(from: reference, using: &rng)
                    guard let result = try? await store.apply(ops, to: list, expectedVersion: nil), result.changed
                    else { continue }
                    // The only writer: the snapshot read now is the one at its version.
                    current = try await store.snapshot(of: list)
                    #expect(current.version == result.version)
                    states.record(current)
                    // Writes and answers interleave whatever the machine's speed (under
                    // AddressSanitizer the nice +10 catch-up thread is far slower): the next
                    // write waits for an answer asked since this one.
                    let mark = states.answered.load(ordering: .acquiring)
                    let deadline = ContinuousClock.now + .seconds(30)
                    while states.answered.load(ordering: .acquiring) <= mark {
                        guard ContinuousClock.now < deadline else { throw NoAnswer() }
                        try await Task.sleep(for: .milliseconds(1))
                    }
                }
                states.finish()
            }
            // Three readers ask concurrently from random versions they have seen.
            let answers = try await withThrowingTaskGroup(of: [(Int64, ChangeSince)].self) { group in
                for reader in 0..<3 {
                    group.addTask {
                        var rng = SeededGenerator(seed: seed &* 31 &+ UInt64(reader))
                        var answers: [(Int64, ChangeSince)] = []
                        // One question per version the writer reaches, at most: asking
                        // in a tight loop would only take the writer's CPU.
                        var asked = 0
                        while !states.isFinished {
                            let versions = states.versions
                            guard versions.count > asked, let since = versions.randomElement(using: &rng) else {
                                try await Task.sleep(for: .milliseconds(1))
                                continue
                            }
                            asked = versions.count
                            answers.append((since, try await store.changes(of: list, since: since)))
                            states.answered.add(1, ordering: .releasing)
                        }
                        return answers
                    }
                }
                var all: [(Int64, ChangeSince)] = []
                for try await answers in group { all += answers }
                return all
            }
            try await writer.value

            var checked = 0
            var spans: Set<Int64> = []
            for (since, answer) in answers {
                guard case .change(let change) = answer else {
                    Issue.record("seed \(seed): a reset for v\(since), inside the history")
                    continue
                }
                let old = try #require(states[since])
                let new = try #require(states[change.to], "seed \(seed): an answer at v\(change.to), never reached")
                #expect(change.from == since)
                try ChangeEnginePropertyTests().check(
                    change, from: old, to: new, movedSince: [(sections: [], items: [], everything: true)],
                    "seed \(seed) v\(since)→v\(change.to)")
                checked += 1
                spans.insert(change.to - since)
            }
            #expect(checked >= Self.writes / 2, "seed \(seed): only \(checked) answers checked")
            #expect(spans.count > 10, "seed \(seed): answers spanned too few distances: \(spans.sorted())")
        }
    }
}
