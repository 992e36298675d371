import ListModel
import ListStore
import ListdTestSupport
import Testing

/// On PostgreSQL a catch-up reads the history of its span in statements of
/// 2,000 versions (`SQLDialect.historyVersionsPerStatement`), sent together: an entity
/// touched in several of them must take its state at V from the first
/// statement that has it and its state now from the last. Catch-ups whose
/// spans end on, just before and just after a statement's boundary, and one
/// over three statements, each checked as the property test checks them
/// (staged, applied by the UIKit model to the snapshot at V, giving the
/// snapshot now).
@Suite struct HistorySpanTests {
    @Test(arguments: StoreKind.tested)
    func catchUpsAcrossTheHistoryStatementsBoundariesReplayToTheCurrentSnapshot(_ kind: StoreKind) async throws {
        let writes = 4_200
        // Spans from the last version (writes + 1) of 4,200, 4,000, 2,001, 2,000 and 1,999 versions.
        let kept: Set<Int64> = [1, 201, 2_200, 2_201, 2_202]
        var rng = SeededGenerator(seed: 7)
        try await withStore(kind, StoreConfiguration(fullSync: false, historyVersions: 10_000)) { store in
            let list = id("spans")
            let items = (0..<40).map { id("i\($0)") }
            let created = try await store.createList(
                id: list, name: "", sections: [NewSection(id: id("s"), items: items.map { NewItem(id: $0) })])
            #expect(created.version == 1)
            var snapshots: [Int64: ListSnapshot] = [1: created]
            for step in 0..<writes {
                // Every write changes something: an update, and now and then a move.
                var ops: [ListOperation] = [
                    .updateItem(id: items[Int.random(in: 0..<items.count, using: &rng)], model: model("\(step)"))
                ]
                if step % 3 == 0 {
                    ops.append(
                        .moveItem(
                            id: items[Int.random(in: 0..<items.count, using: &rng)], section: nil,
                            to: Int.random(in: 0..<items.count, using: &rng)))
                }
                let result = try await store.apply(ops, to: list, expectedVersion: nil)
                if kept.contains(result.version) { snapshots[result.version] = try await store.snapshot(of: list) }
            }
            let now = try await store.snapshot(of: list)
            #expect(now.version == Int64(writes) + 1)
            for since in kept.sorted() {
                let old = try #require(snapshots[since], "no snapshot kept at v\(since)")
                switch try await store.changes(of: list, since: since) {
                case .reset:
                    Issue.record("\(kind): a reset for v\(since), inside the history")
                case .change(let change):
                    #expect(change.from == since && change.to == now.version)
                    try ChangeEnginePropertyTests().check(
                        change, from: old, to: now, movedSince: [(sections: [], items: [], everything: true)],
                        "\(kind) since v\(since) (\(now.version - since) versions)")
                }
            }
        }
    }
}
