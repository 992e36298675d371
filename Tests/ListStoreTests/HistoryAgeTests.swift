import ListModel
import ListdTestSupport
import Storage
import Testing

@testable import ListStore

/// The age limit on history, driven by a writer with a clock the test sets: a
/// write skips looking for aged-out versions while the first kept version is
/// known to be recent, and the floor still lands exactly where the rule puts
/// it (the state at V is kept while V+1 committed within the age).
@Suite struct HistoryAgeTests {
    static let section = Identifier(storedText: "s")

    static func insert(_ item: String) -> [ListOperation] {
        [.insertItem(section: section, item: NewItem(id: Identifier(storedText: item)), at: nil)]
    }

    /// A migrated SQLite file and a writer on it, with a 1,000 ms age limit.
    static func writer(in directory: borrowing TemporaryDirectory) async throws -> ListWriter {
        var configuration = StoreConfiguration(fullSync: false)
        configuration.migrationsDirectory = migrationsDirectory
        let store = try await SQLiteStore(path: directory.databasePath, configuration: configuration)
        await store.close()
        var writerConfiguration = StoreConfiguration(fullSync: false)
        writerConfiguration.historyAge = .milliseconds(1_000)
        return ListWriter(
            db: Database(connection: try Connection(path: directory.databasePath)), configuration: writerConfiguration)
    }

    static func floor(of list: Identifier, _ writer: ListWriter) throws -> Int64? {
        try writer.db.first("SELECT history_floor FROM lists WHERE id = ?", list.sql) { $0.int64(0) }
    }

    @Test func theFloorFollowsTheAgeLimitThoughMostWritesSkipTheLookup() async throws {
        let directory = try TemporaryDirectory()
        let writer = try await Self.writer(in: directory)
        let list = Identifier(storedText: "l")
        _ = try writer.createList(id: list, name: "", sections: [NewSection(id: Self.section)], now: 0)
        // Versions 2, 3, 4 committed at 100, 200, 300: nothing is a second old yet.
        for (index, now) in [100, 200, 300].enumerated() {
            _ = try writer.apply(Self.insert("a\(index)"), to: list, expectedVersion: nil, now: Int64(now))
        }
        #expect(try Self.floor(of: list, writer) == 1)
        #expect(writer.ageQuietUntil[list] == 1_100, "v2, committed at 100, is the first version above the floor")

        // At 1,150 the states at v1 and v2 were replaced more than a second ago (v2 at 100, v3 at 200 > 150).
        _ = try writer.apply(Self.insert("b"), to: list, expectedVersion: nil, now: 1_150)
        #expect(try Self.floor(of: list, writer) == 2)
        #expect(writer.ageQuietUntil[list] == 1_200)

        // At 1,190 nothing more can age out (v3 committed at 200): the lookup is skipped.
        _ = try writer.apply(Self.insert("c"), to: list, expectedVersion: nil, now: 1_190)
        #expect(try Self.floor(of: list, writer) == 2)

        // At 1,250 the state at v3 aged out (v4 at 300 is within the second).
        _ = try writer.apply(Self.insert("d"), to: list, expectedVersion: nil, now: 1_250)
        #expect(try Self.floor(of: list, writer) == 3)
        #expect(writer.ageQuietUntil[list] == 1_300)

        // Much later, every version but the last is old; the floor rises to the one before it.
        _ = try writer.apply(Self.insert("e"), to: list, expectedVersion: nil, now: 10_000)
        #expect(try Self.floor(of: list, writer) == 7)
    }

    /// What a write learned in a transaction that rolled back is forgotten:
    /// the version it saw may not exist.
    @Test func aRollbackForgetsWhatTheWritesLearned() async throws {
        let directory = try TemporaryDirectory()
        let writer = try await Self.writer(in: directory)
        let list = Identifier(storedText: "l")
        _ = try writer.createList(id: list, name: "", sections: [NewSection(id: Self.section)], now: 0)
        _ = try writer.apply(Self.insert("a"), to: list, expectedVersion: nil, now: 100)
        #expect(writer.ageQuietUntil[list] != nil)
        writer.writeRolledBack()
        #expect(writer.ageQuietUntil.isEmpty)
        _ = try writer.apply(Self.insert("b"), to: list, expectedVersion: nil, now: 200)
        #expect(writer.ageQuietUntil[list] != nil)
        writer.transactionRolledBack()
        #expect(writer.ageQuietUntil.isEmpty)
    }
}
