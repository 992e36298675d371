import Foundation
import JSON
import ListModel
import ListStore
import Storage
import Testing

/// SQLite's text index keeps no copy of the text (migration 0004): an entry is
/// removed by handing FTS5 the text it was indexed with. These writes remove
/// entries every way the store does (an update, a deleted item, a deleted
/// section, the index turned off, the list deleted while indexed) and check
/// that `q` still finds exactly the right items and that FTS5's own integrity
/// check passes.
@Suite struct TextIndexTests {
    static func item(_ name: String, _ text: String) -> NewItem {
        NewItem(id: id(name), model: Model(.object(["name": .string(text)])))
    }

    static func found(_ store: SQLiteStore, _ list: Identifier, _ term: String) async throws -> [String] {
        let page = try await store.items(of: list, query: ItemQuery(text: term, limit: 100))
        #expect(page.plan == .text)
        return page.entries.map(\.item.id.rawValue).sorted()
    }

    /// FTS5's 'integrity-check' on the text index, through a connection of its own.
    static func checkIntegrity(_ path: String) throws {
        let connection = try Connection(path: path)
        defer { connection.close() }
        try connection.execute("INSERT INTO item_text (item_text, rank) VALUES ('integrity-check', 0)")
    }

    @Test func entriesGoEveryWayTheStoreRemovesThem() async throws {
        let directory = try TemporaryDirectory()
        let store = try await SQLiteStore(
            path: directory.databasePath,
            configuration: StoreConfiguration(migrationsDirectory: migrationsDirectory, fullSync: false))
        let list = id("l")
        _ = try await store.createList(
            id: list, name: "",
            sections: [
                NewSection(id: id("a"), items: [Self.item("a1", "apple pie"), Self.item("a2", "apricot jam")]),
                NewSection(id: id("b"), items: [Self.item("b1", "banana apple"), Self.item("b2", "blueberry")]),
            ])
        #expect(try await store.setTextIndex(true, on: list, progress: { _, _ in }))
        #expect(try await Self.found(store, list, "apple") == ["a1", "b1"])

        // An update removes the old text and adds the new.
        _ = try await store.apply(
            [.updateItem(id: id("a1"), model: Model(.object(["name": .string("cherry tart")])))], to: list,
            expectedVersion: nil)
        #expect(try await Self.found(store, list, "apple") == ["b1"])
        #expect(try await Self.found(store, list, "cherry") == ["a1"])
        // A deleted item and a deleted section take their entries with them.
        _ = try await store.apply([.deleteItem(id: id("a2"))], to: list, expectedVersion: nil)
        #expect(try await Self.found(store, list, "apricot") == [])
        _ = try await store.apply([.deleteSection(id: id("b"))], to: list, expectedVersion: nil)
        #expect(try await Self.found(store, list, "apple") == [])
        try Self.checkIntegrity(directory.databasePath)

        // Off and on again: the index is rebuilt from the items.
        _ = try await store.apply(
            [.insertItem(section: id("a"), item: Self.item("a3", "apple crumble"), at: nil)], to: list,
            expectedVersion: nil)
        #expect(try await store.setTextIndex(false, on: list, progress: { _, _ in }))
        _ = try await store.apply(
            [.insertItem(section: id("a"), item: Self.item("a4", "apple sauce"), at: nil)], to: list,
            expectedVersion: nil)
        #expect(try await store.setTextIndex(true, on: list, progress: { _, _ in }))
        #expect(try await Self.found(store, list, "apple") == ["a3", "a4"])
        try Self.checkIntegrity(directory.databasePath)

        // A list deleted while indexed, then created again under the same id
        // (whose items may reuse the rows' ids): only the new items are found.
        _ = try await store.deleteList(list, expectedVersion: nil)
        _ = try await store.createList(
            id: list, name: "", sections: [NewSection(id: id("a"), items: [Self.item("n1", "grape")])])
        #expect(try await store.setTextIndex(true, on: list, progress: { _, _ in }))
        #expect(try await Self.found(store, list, "apple") == [])
        #expect(try await Self.found(store, list, "grape") == ["n1"])
        try Self.checkIntegrity(directory.databasePath)
        await store.close()
    }
}
