import Foundation
import JSON
import ListModel
import ListStore
import ListdTestSupport
import Storage
import Synchronization
import Testing

/// SQLite's text index is brought up to date once per commit from the rows
/// its triggers noted (migration 0007), with the text each noted row had when
/// it was last indexed. A random workload of concurrent writes, so that a
/// commit holds several and one item may change more than once in it (text
/// changed or kept, items inserted and deleted, rowids reused, sections and
/// lists deleted, whole-list replacement, the index turned off and on, a write
/// that fails inside a commit), must leave every entry of the index, term by
/// term and position by position, equal to an index built afresh from the
/// items, after every round.
@Suite struct TextIndexEntriesTests {
    /// Entries stored but not expected, and expected but not stored, read
    /// through fts5vocab from the index and from one rebuilt in memory.
    static func difference(_ path: String) throws -> (extra: Int64, missing: Int64, pending: Int64) {
        let connection = try Connection(path: path)
        defer { connection.close() }
        try connection.execute(
            """
            CREATE VIRTUAL TABLE temp.rebuilt USING fts5 (body, tokenize = 'trigram', content = '', columnsize = 0);
            INSERT INTO temp.rebuilt (rowid, body)
            SELECT items.rowid, (SELECT coalesce(group_concat(value, char(10)), '') FROM json_tree(items.model) WHERE type = 'text')
            FROM items JOIN list_text_indexes t ON t.list_id = items.list_id;
            CREATE VIRTUAL TABLE temp.stored_entries USING fts5vocab (main, item_text, instance);
            CREATE VIRTUAL TABLE temp.rebuilt_entries USING fts5vocab (temp, rebuilt, instance);
            """)
        func count(_ sql: String) throws -> Int64 {
            guard case .integer(let count) = try connection.scalar(sql) else { return -1 }
            return count
        }
        let stored = "SELECT term, doc, col, offset FROM temp.stored_entries"
        let rebuilt = "SELECT term, doc, col, offset FROM temp.rebuilt_entries"
        return (
            try count("SELECT count(*) FROM (\(stored) EXCEPT \(rebuilt))"),
            try count("SELECT count(*) FROM (\(rebuilt) EXCEPT \(stored))"),
            try count("SELECT count(*) FROM item_text_pending")
        )
    }

    /// A model whose strings are one of a few (so a rewrite often keeps the
    /// text), nested or not, with a number that changes.
    static func model(_ random: inout SeededGenerator) throws -> Model {
        let words = ["apple pie", "Äpfel", "banana", "cherry 𝄞 tart", ""]
        let word = words[Int.random(in: 0..<words.count, using: &random)]
        let text =
            switch Int.random(in: 0..<3, using: &random) {
            case 0: "{\"name\": \"\(word)\", \"n\": \(Int.random(in: 0..<1000, using: &random))}"
            case 1: "{\"tags\": [\"\(word)\", {\"deep\": \"x\(Int.random(in: 0..<2, using: &random))\"}]}"
            default: "{\"n\": \(Int.random(in: 0..<1000, using: &random))}"
            }
        return try Model(parsing: Array(text.utf8))
    }

    /// Concurrent writes of a round may delete what another one changes.
    static let expectedFailures: Set<StoreError.Kind> = [.itemNotFound, .sectionNotFound, .duplicateId]

    @Test(arguments: [1, 2, 3] as [UInt64])
    func entriesMatchARebuildAfterEveryRound(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        let directory = try TemporaryDirectory()
        let largestCommit = Mutex(0)
        var configuration = StoreConfiguration(migrationsDirectory: migrationsDirectory, fullSync: false)
        configuration.onGroupCommit = { writes in largestCommit.withLock { $0 = max($0, writes) } }
        let store = try await SQLiteStore(path: directory.databasePath, configuration: configuration)
        let list = id("l")
        let other = id("m")
        let sections = ["a", "b"]
        func create(_ list: Identifier) async throws {
            _ = try await store.createList(id: list, name: "", sections: sections.map { NewSection(id: id($0)) })
            _ = try await store.setTextIndex(true, on: list, progress: { _, _ in })
        }
        try await create(list)
        // A second list, indexed or not, shares the rowids of the items table.
        _ = try await store.createList(id: other, name: "", sections: [NewSection(id: id("o"))])
        var next = 0
        var failures = 0
        for round in 0..<120 {
            let snapshot = try await store.snapshot(of: list)
            let items = snapshot.sections.flatMap { section in section.items.map(\.id) }
            let present = snapshot.sections.map(\.id)
            // Several writes at once, queued together: most share a commit.
            var writes: [(Identifier, [ListOperation])] = []
            for _ in 0..<Int.random(in: 1...8, using: &random) {
                let item = items.isEmpty ? nil : items[Int.random(in: 0..<items.count, using: &random)]
                switch Int.random(in: 0..<20, using: &random) {
                case 0...4 where !present.isEmpty:
                    next += 1
                    let section = present[Int.random(in: 0..<present.count, using: &random)]
                    writes.append(
                        (
                            list,
                            [
                                .insertItem(
                                    section: section, item: NewItem(id: id("i\(next)"), model: try Self.model(&random)),
                                    at: 0)
                            ]
                        ))
                case 5...10 where item != nil:
                    writes.append((list, [.updateItem(id: item!, model: try Self.model(&random))]))
                case 11 where item != nil:
                    // Changed twice in one write.
                    writes.append(
                        (
                            list,
                            [
                                .updateItem(id: item!, model: try Self.model(&random)),
                                .updateItem(id: item!, model: try Self.model(&random)),
                            ]
                        ))
                case 12 where item != nil:
                    writes.append((list, [.deleteItem(id: item!)]))
                case 13 where item != nil:
                    // Fails after changing the item: the write is rolled back inside the commit.
                    writes.append(
                        (
                            list,
                            [.updateItem(id: item!, model: try Self.model(&random)), .deleteItem(id: id("missing"))]
                        ))
                case 14 where present.count > 1:
                    writes.append(
                        (list, [.deleteSection(id: present[Int.random(in: 0..<present.count, using: &random)])]))
                case 15 where present.count < sections.count:
                    if let missing = sections.map({ id($0) }).first(where: { !present.contains($0) }) {
                        writes.append((list, [.insertSection(NewSection(id: missing), at: 0)]))
                    }
                case 16:
                    next += 1
                    writes.append(
                        (
                            other,
                            [
                                .insertItem(
                                    section: id("o"), item: NewItem(id: id("o\(next)"), model: try Self.model(&random)),
                                    at: 0)
                            ]
                        ))
                default:
                    break
                }
            }
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for (target, ops) in writes {
                    group.addTask {
                        do {
                            _ = try await store.apply(ops, to: target, expectedVersion: nil)
                            return true
                        } catch let error as StoreError where Self.expectedFailures.contains(error.kind) {
                            return false
                        }
                    }
                }
                for try await succeeded in group where !succeeded { failures += 1 }
            }
            // Now and then, between rounds: the whole list replaced, the index off and on, the list deleted.
            switch Int.random(in: 0..<12, using: &random) {
            case 0:
                _ = try await store.replace(
                    list, name: nil,
                    sections: [
                        NewSection(id: id("a"), items: [NewItem(id: id("r\(round)"), model: try Self.model(&random))])
                    ],
                    indexes: [], expectedVersion: nil)
            case 1:
                _ = try await store.setTextIndex(false, on: list, progress: { _, _ in })
                _ = try await store.setTextIndex(true, on: list, progress: { _, _ in })
            case 2:
                _ = try await store.setTextIndex(Bool.random(using: &random), on: other, progress: { _, _ in })
            case 3:
                _ = try await store.deleteList(list, expectedVersion: nil)
                try await create(list)
            default:
                break
            }
            let difference = try Self.difference(directory.databasePath)
            #expect(difference == (0, 0, 0), "seed \(seed), round \(round): \(difference)")
            if difference != (0, 0, 0) { break }
        }
        #expect(failures > 0, "the workload never rolled a write back inside a commit")
        #expect(largestCommit.withLock { $0 } > 1, "no commit held more than one write")
        try TextIndexTests.checkIntegrity(directory.databasePath)
        await store.close()
    }

    /// Another program that writes items leaves notes; listd applies them when it opens the file.
    @Test func notesLeftByAnotherProgramAreAppliedOnOpen() async throws {
        let directory = try TemporaryDirectory()
        let configuration = StoreConfiguration(migrationsDirectory: migrationsDirectory, fullSync: false)
        let list = id("l")
        do {
            let store = try await SQLiteStore(path: directory.databasePath, configuration: configuration)
            _ = try await store.createList(
                id: list, name: "", sections: [NewSection(id: id("a"), items: [TextIndexTests.item("a1", "apple pie")])]
            )
            _ = try await store.setTextIndex(true, on: list, progress: { _, _ in })
            await store.close()
        }
        do {
            let connection = try Connection(path: directory.databasePath)
            defer { connection.close() }
            try connection.execute(#"UPDATE items SET model = '{"name":"cherry tart"}' WHERE id = 'a1'"#)
        }
        #expect(try Self.difference(directory.databasePath) != (0, 0, 0))
        let store = try await SQLiteStore(path: directory.databasePath, configuration: configuration)
        #expect(try Self.difference(directory.databasePath) == (0, 0, 0))
        #expect(try await TextIndexTests.found(store, list, "cherry") == ["a1"])
        #expect(try await TextIndexTests.found(store, list, "apple") == [])
        await store.close()
    }
}
