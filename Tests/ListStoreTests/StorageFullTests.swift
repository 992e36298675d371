import Foundation
import ListModel
import ListStore
import Testing

/// A full disk, made with SQLite's `max_page_count`: writes fail as `storageFull` (never a
/// generic failure), every acknowledged write stays, reads go on, and writes work again
/// when space returns.
@Suite struct StorageFullTests {
    @Test func aFullDatabaseRefusesWritesKeepsWhatWasAcknowledgedAndRecovers() async throws {
        var configuration = StoreConfiguration(fullSync: false)
        configuration.maxDatabasePages = 60
        try await withStore(.sqlite, configuration) { store in
            _ = try await store.createList(id: id("big"), name: "", sections: [])
            _ = try await store.createList(id: id("groceries"), name: "", sections: [])
            let padding = String(repeating: "x", count: 8000)
            var acknowledged: Set<String> = []
            var fullErrors: [StoreError] = []
            // Rounds of concurrent writes, so some meet the full database inside a group commit.
            round: for round in 0..<100 {
                let results = await withTaskGroup(of: (String, StoreError?).self) { group in
                    for index in 0..<6 {
                        let section = "s\(round)-\(index)"
                        group.addTask {
                            let error = await storeError { () throws(StoreError) in
                                _ = try await store.apply(
                                    [
                                        .insertSection(
                                            NewSection(id: id(section), model: model(#"{"p":"\#(padding)"}"#)), at: nil)
                                    ],
                                    to: id("big"), expectedVersion: nil)
                            }
                            return (section, error)
                        }
                    }
                    var results: [(String, StoreError?)] = []
                    for await result in group { results.append(result) }
                    return results
                }
                for (section, error) in results {
                    if let error { fullErrors.append(error) } else { acknowledged.insert(section) }
                }
                if !fullErrors.isEmpty { break round }
            }
            #expect(!fullErrors.isEmpty, "the database never filled up")
            for error in fullErrors {
                #expect(error.kind == .storageFull, "\(error)")
                #expect(error.detail.contains("full"))
            }
            // Everything acknowledged is there, nothing else; reads still work.
            let big = try await store.snapshot(of: id("big"))
            #expect(Set(big.sections.map(\.id.rawValue)) == acknowledged)
            #expect(big.version == Int64(acknowledged.count) + 1)
            #expect(try await store.snapshot(of: id("groceries")).sections.isEmpty)
            // Space returns: deleting the big list frees its pages, and writes work again.
            _ = try await store.deleteList(id("big"), expectedVersion: nil)
            let written = try await store.apply(
                [.insertSection(NewSection(id: id("fruit"), model: model(#"{"p":"\#(padding)"}"#)), at: nil)],
                to: id("groceries"), expectedVersion: nil)
            #expect(written.version == 2)
            #expect(try await store.snapshot(of: id("groceries")).outline == "fruit[]")
        }
    }
}
