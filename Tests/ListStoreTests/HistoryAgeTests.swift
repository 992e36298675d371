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

    /// The flag idle pruning finds a list by (`prune_pending`, which the
    /// partial index `lists_to_prune` names) is set exactly while history is
    /// left below the floor: a write that jumps the floor further than it
    /// prunes sets it, idle pruning clears it once caught up, and a write
    /// that keeps up leaves it alone.
    @Test func aListLeftBehindIsFlaggedUntilPruningCatchesUp() async throws {
        let directory = try TemporaryDirectory()
        let writer = try await Self.writer(in: directory)
        let list = Identifier(storedText: "l")
        func marks() throws -> (floor: Int64, pruned: Int64, pending: Int64)? {
            try writer.db.first(
                "SELECT history_floor, history_pruned, prune_pending FROM lists WHERE id = ?", list.sql
            ) { ($0.int64(0), $0.int64(1), $0.int64(2)) }
        }
        _ = try writer.createList(id: list, name: "", sections: [NewSection(id: Self.section)], now: 0)
        for index in 0..<20 {
            _ = try writer.apply(Self.insert("a\(index)"), to: list, expectedVersion: nil, now: Int64(100 + index))
        }
        #expect(try marks()! == (1, 1, 0), "nothing is a second old yet")

        // Every version but the last aged out at once: the floor jumps to 21,
        // the write prunes 8 versions of it and flags the rest.
        _ = try writer.apply(Self.insert("b"), to: list, expectedVersion: nil, now: 10_000)
        #expect(try marks()! == (21, 9, 1))
        let flagged = try writer.db.rows("SELECT id FROM lists WHERE prune_pending = 1", []) { $0.identifier(0) }
        #expect(flagged == [list])
        #expect(try writer.idleCandidates(now: 10_000).contains(list))

        var steps = 0
        while try writer.pruneIdle([list], now: 10_000) {
            steps += 1
            let (floor, pruned, pending) = try #require(try marks())
            #expect(pending == (pruned < floor ? 1 : 0))
            #expect(steps < 10)
        }
        #expect(try marks()! == (21, 21, 0))
        #expect(try writer.db.rows("SELECT id FROM lists WHERE prune_pending = 1", []) { $0.identifier(0) }.isEmpty)

        // A write that keeps up moves the floor and the mark together and leaves the flag at 0.
        _ = try writer.apply(Self.insert("c"), to: list, expectedVersion: nil, now: 20_000)
        let (floor, pruned, pending) = try #require(try marks())
        #expect(floor == 22 && pruned == 22 && pending == 0)
    }
}
