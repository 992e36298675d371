import ListModel
import ListStore
import ListdTestSupport
import Testing

/// History of a list nobody writes any more is pruned in idle time once it is
/// older than `historyAge`, on both stores (not only when the list is next written).
@Suite struct IdlePruningTests {
    @Test(arguments: StoreKind.tested)
    func anIdleListsOldHistoryIsPrunedWithoutAnotherWrite(_ kind: StoreKind) async throws {
        var configuration = StoreConfiguration(fullSync: false)
        configuration.historyAge = .seconds(1)
        try await withStore(kind, configuration) { store in
            let list = id("idle")
            _ = try await store.createList(id: list, name: "", sections: [NewSection(id: id("s"))])
            var version: Int64 = 1
            for index in 0..<5 {
                version = try await store.apply(
                    [.insertItem(section: id("s"), item: NewItem(id: id("i\(index)")), at: nil)], to: list,
                    expectedVersion: version
                ).version
            }
            // A write prunes only versions older than the window, never itself: after the
            // last write the floor is below its version, and only idle pruning raises it there.
            let pruned = try await eventually(15) {
                try await store.snapshots(of: list, at: [1]).historyFloor == version
            }
            #expect(pruned, "the idle list's history was never pruned")
            #expect(try await store.snapshot(of: list).version == version)
        }
    }
}
