import ListModel
import ListStore
import ListdTestSupport
import Storage
import Testing

/// History rows carry their version's after-image (migration 0008), and a
/// catch-up reads a span from history alone when every row of it has one.
/// Random op batches and PUTs (renumbering often) on a SQLite store; the rows
/// are then read with a connection of the test's own.
@Suite struct HistoryAfterImageTests {
    /// Runs `writes` random writes on list `l` of a fresh store and returns the
    /// store, its database path (kept by `directory`) and the versions written.
    static func randomHistory(
        seed: UInt64, writes: Int, in directory: borrowing TemporaryDirectory
    ) async throws -> (SQLiteStore, [Int64: ListSnapshot]) {
        var configuration = StoreConfiguration(
            fullSync: false, maxModelBytes: 48, historyVersions: 10_000, positionGap: 4)
        configuration.migrationsDirectory = migrationsDirectory
        let store = try await SQLiteStore(path: directory.databasePath, configuration: configuration)
        var rng = SeededGenerator(seed: seed)
        let list = id("l")
        var states: [Int64: ListSnapshot] = [1: try await store.createList(id: list, name: "start", sections: [])]
        var version: Int64 = 1
        for _ in 0..<writes {
            var reference = ReferenceList(name: "start", maxModelBytes: 48)
            reference.sections = states[version]?.sections ?? []
            let result: WriteResult
            do throws(StoreError) {
                if Int.random(in: 0..<15, using: &rng) == 0 {
                    let (name, sections) = HistoryPropertyTests.randomBody(from: reference, using: &rng)
                    result = try await store.replace(
                        list, name: name, sections: sections.map(\.asNew), expectedVersion: nil)
                } else {
                    result = try await store.apply(
                        HistoryPropertyTests.randomOps(from: reference, using: &rng), to: list, expectedVersion: nil)
                }
            } catch {
                continue
            }
            guard result.changed else { continue }
            version = result.version
            states[version] = try await store.snapshot(of: list)
        }
        return (store, states)
    }

    static func count(_ connection: Connection, _ sql: String) throws -> Int64 {
        guard case .integer(let count) = try connection.scalar(sql) else { return -1 }
        return count
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func everyRowsAfterImageIsTheNextRowsBeforeImageAndTheLastOneIsTheCurrentRow(seed: UInt64) async throws {
        let directory = try TemporaryDirectory()
        let (store, states) = try await Self.randomHistory(seed: seed, writes: 200, in: directory)
        await store.close()
        #expect(states.count > 100, "seed \(seed): too few writes changed the list")
        let connection = try Connection(path: directory.databasePath)
        defer { connection.close() }
        #expect(try Self.count(connection, "SELECT count(*) FROM history") > 200)
        #expect(try Self.count(connection, "SELECT count(*) FROM history WHERE kind != 0 AND after_state IS NULL") == 0)
        // Row k's after-image is row k+1's before-image, entity by entity.
        let chainBreaks = try Self.count(
            connection,
            """
            SELECT count(*) FROM history h JOIN history n
                ON n.list_id = h.list_id AND n.kind = h.kind AND n.entity_id = h.entity_id
                AND n.version = (SELECT min(version) FROM history x
                    WHERE x.list_id = h.list_id AND x.kind = h.kind AND x.entity_id = h.entity_id
                    AND x.version > h.version)
            WHERE h.kind != 0 AND (h.after_state IS NOT n.existed
                OR (n.existed = 1 AND (h.after_position IS NOT n.position OR h.after_model IS NOT n.model
                    OR h.after_section_id IS NOT n.section_id)))
            """)
        #expect(chainBreaks == 0, "seed \(seed)")
        // The last row's after-image is the entity's current row, or its absence.
        let last = """
            SELECT * FROM history h WHERE h.version = (SELECT max(version) FROM history x
                WHERE x.list_id = h.list_id AND x.kind = h.kind AND x.entity_id = h.entity_id)
            """
        let staleItems = try Self.count(
            connection,
            """
            SELECT count(*) FROM (\(last)) l LEFT JOIN items i ON i.list_id = l.list_id AND i.id = l.entity_id
            WHERE l.kind = 2 AND NOT (
                (l.after_state = 1 AND i.section_id IS l.after_section_id AND i.position IS l.after_position
                    AND i.model IS l.after_model)
                OR (l.after_state = 0 AND i.id IS NULL))
            """)
        let staleSections = try Self.count(
            connection,
            """
            SELECT count(*) FROM (\(last)) l LEFT JOIN sections s ON s.list_id = l.list_id AND s.id = l.entity_id
            WHERE l.kind = 1 AND NOT (
                (l.after_state = 1 AND s.position IS l.after_position AND s.model IS l.after_model)
                OR (l.after_state = 0 AND s.id IS NULL))
            """)
        #expect(staleItems == 0 && staleSections == 0, "seed \(seed)")
    }

    /// Rows written before the migration have no after-image: a span holding
    /// one is read with the join, and its answer is the one history alone gave.
    @Test func aSpanWithRowsFromBeforeTheMigrationIsAnsweredTheSameWithTheJoin() async throws {
        let directory = try TemporaryDirectory()
        let (store, states) = try await Self.randomHistory(seed: 7, writes: 150, in: directory)
        let list = id("l")
        let versions = states.keys.sorted()
        let current = try #require(versions.last)
        let asked = stride(from: 0, to: versions.count - 1, by: max(1, versions.count / 12)).map { versions[$0] }
        var fromHistory: [Int64: ChangeSince] = [:]
        for since in asked { fromHistory[since] = try await store.changes(of: list, since: since) }
        let connection = try Connection(path: directory.databasePath)
        defer { connection.close() }
        // As a database migrated from before 0008: the middle of the history without after-images.
        let middle = versions[versions.count / 2]
        try connection.execute(
            """
            UPDATE history SET after_state = NULL, after_section_id = NULL, after_position = NULL, after_model = NULL
            WHERE version <= \(middle)
            """)
        #expect(try Self.count(connection, "SELECT count(*) FROM history WHERE after_state IS NULL") > 0)
        for since in asked {
            let answer = try await store.changes(of: list, since: since)
            #expect(answer == fromHistory[since], "since v\(since) of v\(current)")
            if case .reset = answer { Issue.record("since v\(since): a reset inside the history") }
        }
        await store.close()
    }
}
