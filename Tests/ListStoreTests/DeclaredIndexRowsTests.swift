import Foundation
import JSON
import ListModel
import ListStore
import ListdTestSupport
import Storage
import Testing

/// SQLite's declared-index rows are kept by triggers that delete a row by the
/// key they computed from the item's old model, section and position
/// (migration 0006): a random workload that changes items every way the store
/// does (updates, moves within and across sections, renumbering, deletions of
/// items, sections and lists, whole-list replacement, indexes added and
/// dropped) must leave `item_values` exactly equal to the rows computed
/// afresh from the items, after every write.
@Suite struct DeclaredIndexRowsTests {
    /// The rows a rebuild from the items gives (the insert trigger's formula).
    static let expected = """
        SELECT i.list_id, p.path, i.model -> p.json_path, i.section_id, i.position, i.id
        FROM items i JOIN list_index_paths p ON p.list_id = i.list_id
        WHERE json_type(i.model, p.json_path) IN ('null', 'true', 'false', 'integer', 'real', 'text')
        """
    static let stored = "SELECT list_id, path, value, section_id, position, item_id FROM item_values"

    /// The rows stored but not expected, and expected but not stored (both empty when consistent).
    static func difference(_ path: String) throws -> (extra: Int64, missing: Int64) {
        let connection = try Connection(path: path)
        defer { connection.close() }
        func count(_ sql: String) throws -> Int64 {
            guard case .integer(let count) = try connection.scalar("SELECT count(*) FROM (\(sql))") else { return -1 }
            return count
        }
        return (try count("\(stored) EXCEPT \(expected)"), try count("\(expected) EXCEPT \(stored)"))
    }

    /// A model with an indexed `k` (a number, `1` or `1.0`, or an object, not indexed), and
    /// `tags.0` as an array element, an object member or missing.
    static func model(_ random: inout SeededGenerator) throws -> Model {
        var fields: [String] = []
        switch Int.random(in: 0..<4, using: &random) {
        case 0: fields.append("\"k\": {\"nested\": null}")
        case 1: fields.append("\"k\": \(Int.random(in: 0..<3, using: &random)).0")
        default: fields.append("\"k\": \(Int.random(in: 0..<3, using: &random))")
        }
        switch Int.random(in: 0..<4, using: &random) {
        case 0: fields.append("\"tags\": [\"t\(Int.random(in: 0..<3, using: &random))\", true]")
        case 1: fields.append("\"tags\": {\"0\": \"é\(Int.random(in: 0..<3, using: &random))\"}")
        case 2: fields.append("\"tags\": []")
        default: break
        }
        return try Model(parsing: Array("{\(fields.joined(separator: ", "))}".utf8))
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func indexRowsMatchARebuildAfterEveryWrite(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        let directory = try TemporaryDirectory()
        let store = try await SQLiteStore(
            path: directory.databasePath,
            configuration: StoreConfiguration(migrationsDirectory: migrationsDirectory, fullSync: false))
        let list = id("l")
        let sections = ["a", "b", "c"]
        func create() async throws {
            _ = try await store.createList(
                id: list, name: "", sections: sections.map { NewSection(id: id($0)) }, indexes: [["k"], ["tags", "0"]])
        }
        try await create()
        var next = 0
        for step in 0..<300 {
            let snapshot = try await store.snapshot(of: list)
            let items = snapshot.sections.flatMap { section in section.items.map { ($0.id, section.id) } }
            let present = snapshot.sections.map(\.id)
            var ops: [ListOperation] = []
            switch Int.random(in: 0..<20, using: &random) {
            case 0...5 where !present.isEmpty:
                next += 1
                let section = present[Int.random(in: 0..<present.count, using: &random)]
                ops = [
                    .insertItem(
                        section: section, item: NewItem(id: id("i\(next)"), model: try Self.model(&random)), at: 0)
                ]
            case 6...8 where !items.isEmpty:
                let item = items[Int.random(in: 0..<items.count, using: &random)].0
                ops = [.updateItem(id: item, model: try Self.model(&random))]
            case 9...11 where !items.isEmpty && !present.isEmpty:
                let item = items[Int.random(in: 0..<items.count, using: &random)].0
                let section = present[Int.random(in: 0..<present.count, using: &random)]
                ops = [.moveItem(id: item, section: section, to: 0)]
            case 12...13 where !items.isEmpty:
                ops = [.deleteItem(id: items[Int.random(in: 0..<items.count, using: &random)].0)]
            case 14 where present.count > 1:
                ops = [.deleteSection(id: present[Int.random(in: 0..<present.count, using: &random)])]
            case 15 where present.count < sections.count:
                let missing = sections.map { id($0) }.first { !present.contains($0) }
                if let missing { ops = [.insertSection(NewSection(id: missing), at: 0)] }
            case 16:
                _ = try await store.dropIndex(["tags", "0"], from: list)
            case 17:
                _ = try await store.addIndex(["tags", "0"], to: list, progress: { _, _ in })
            case 18:
                _ = try await store.replace(
                    list, name: nil,
                    sections: [
                        NewSection(id: id("a"), items: [NewItem(id: id("r\(step)"), model: try Self.model(&random))])
                    ],
                    indexes: [["k"], ["tags", "0"]], expectedVersion: nil)
            default:
                _ = try await store.deleteList(list, expectedVersion: nil)
                try await create()
            }
            if !ops.isEmpty { _ = try await store.apply(ops, to: list, expectedVersion: nil) }
            let difference = try Self.difference(directory.databasePath)
            #expect(difference == (0, 0), "seed \(seed), step \(step): \(difference)")
            if difference != (0, 0) { break }
        }
        await store.close()
    }
}
