import Foundation
import ListModel
import ListStore
import Synchronization
import Testing

@Suite struct GroupCommitTests {
    @Test(arguments: StoreKind.tested)
    func concurrentWritersFailAloneAndEveryAcknowledgedWriteIsVisible(_ kind: StoreKind) async throws {
        try await withStore(kind, StoreConfiguration(fullSync: true)) { store in
            let lists = (0..<4).map { id("list\($0)") }
            for list in lists {
                _ = try await store.createList(id: list, name: "", sections: [NewSection(id: id("s"))])
            }
            let commits = CommitRecorder()
            let subscription = store.onCommit { commits.append($0) }
            let callers = 64
            let writesPerCaller = 10
            // Each caller writes to one list; every third write is bad in one of two ways.
            let outcomes = try await withThrowingTaskGroup(of: [(Identifier, Identifier, StoreError.Kind?)].self) {
                group in
                for caller in 0..<callers {
                    group.addTask {
                        var outcomes: [(Identifier, Identifier, StoreError.Kind?)] = []
                        let list = lists[caller % lists.count]
                        for write in 0..<writesPerCaller {
                            let item = id("c\(caller)-w\(write)")
                            var ops: [ListOperation] = [.insertItem(section: id("s"), item: NewItem(id: item), at: 0)]
                            var expected: Int64? = nil
                            switch write % 3 {
                            case 1: ops.append(.deleteItem(id: id("missing")))
                            case 2 where write % 2 == 0: expected = -1
                            default: break
                            }
                            do throws(StoreError) {
                                _ = try await store.apply(ops, to: list, expectedVersion: expected)
                                outcomes.append((list, item, nil))
                            } catch {
                                outcomes.append((list, item, error.kind))
                            }
                        }
                        return outcomes
                    }
                }
                var all: [(Identifier, Identifier, StoreError.Kind?)] = []
                for try await outcome in group { all += outcome }
                return all
            }
            subscription.cancel()
            let counters = store.counters
            for list in lists {
                let snapshot = try await store.snapshot(of: list)
                let present = Set(snapshot.sections[0].items.map(\.id))
                let mine = outcomes.filter { $0.0 == list }
                let acknowledged = Set(mine.filter { $0.2 == nil }.map(\.1))
                #expect(present == acknowledged)
                #expect(snapshot.version == Int64(acknowledged.count) + 1)
                let feed = commits.all.filter { $0.list == list }.map(\.version)
                #expect(feed == Array(2...snapshot.version))
            }
            let failures = outcomes.compactMap(\.2)
            #expect(failures.count == callers * 5)
            #expect(failures.filter { $0 == .itemNotFound }.count == callers * 3)
            #expect(
                failures.allSatisfy { kind in
                    if case .versionMismatch(expected: -1, _) = kind { return true }
                    return kind == .itemNotFound
                })
            #expect(counters.writes == callers * writesPerCaller - failures.count + lists.count)
            #expect(counters.commits <= counters.writes)
        }
    }
}
