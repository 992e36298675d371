import ListModel
import ListdTestSupport
import Storage
import Testing

@testable import ListStore

/// SQLite prunes idempotency records in the order they were claimed (rowid,
/// migration 0011), a bounded step at a time, with a clock the test sets:
/// a record goes once it is past the retention, never before, and a step
/// costs the records it looks at, not the table.
@Suite struct IdempotencyPruneTests {
    static func writer(in directory: borrowing TemporaryDirectory) async throws -> ListWriter {
        var configuration = StoreConfiguration(fullSync: false)
        configuration.migrationsDirectory = migrationsDirectory
        let store = try await SQLiteStore(path: directory.databasePath, configuration: configuration)
        await store.close()
        return ListWriter(
            db: Database(connection: try Connection(path: directory.databasePath)),
            configuration: StoreConfiguration(fullSync: false))
    }

    static func claim(_ key: String, at now: Int64, _ writer: ListWriter) throws {
        try writer.db.claimIdempotencyKey(
            IdempotencyClaim(caller: "c", key: key, fingerprint: "f"), answer: nil, now: now)
    }

    static func keys(_ writer: ListWriter) throws -> [String] {
        try writer.db.rows("SELECT idem_key FROM idempotency_keys ORDER BY rowid", []) { $0.text(0) }
    }

    @Test func theAgeIndexIsGone() async throws {
        let directory = try TemporaryDirectory()
        let writer = try await Self.writer(in: directory)
        let indexes = try writer.db.rows(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'idempotency_keys'", []
        ) { $0.text(0) }
        #expect(indexes == ["idempotency_keys_by_key"], "a claim updates the table and its unique key only")
    }

    @Test func recordsGoOldestFirstInBoundedStepsAndNeverBeforeTheirTime() async throws {
        let directory = try TemporaryDirectory()
        let writer = try await Self.writer(in: directory)
        for index in 0..<10 { try Self.claim("k\(index)", at: Int64(100 + index), writer) }
        // Claimed at 100...109: before 105, five are due; a step of 3 removes three and says more may remain.
        #expect(try writer.db.pruneIdempotencyKeys(before: 105, limit: 3))
        #expect(try Self.keys(writer) == (3..<10).map { "k\($0)" })
        #expect(try !writer.db.pruneIdempotencyKeys(before: 105, limit: 3), "two were due; nothing more")
        #expect(try Self.keys(writer) == (5..<10).map { "k\($0)" })
        #expect(try !writer.db.pruneIdempotencyKeys(before: 105, limit: 3), "k5 is not due")
        #expect(try Self.keys(writer).count == 5)
    }

    @Test func aRecordClaimedUnderAClockSetBackIsPrunedLateNeverEarly() async throws {
        let directory = try TemporaryDirectory()
        let writer = try await Self.writer(in: directory)
        // The clock read 500 for the first claim, then was set back to 100.
        try Self.claim("early", at: 500, writer)
        for index in 0..<4 { try Self.claim("k\(index)", at: Int64(100 + index), writer) }
        // Within the step's window, the due ones go and the one not due stays.
        #expect(try !writer.db.pruneIdempotencyKeys(before: 200, limit: 8))
        #expect(try Self.keys(writer) == ["early"])
        // Beyond the window, due records wait behind it: a step looks at the first `limit` only.
        for index in 4..<8 { try Self.claim("k\(index)", at: Int64(100 + index), writer) }
        #expect(try !writer.db.pruneIdempotencyKeys(before: 200, limit: 1))
        #expect(try Self.keys(writer).count == 5, "late, never early")
        #expect(try writer.db.pruneIdempotencyKeys(before: 600, limit: 5))
        #expect(try Self.keys(writer).isEmpty)
    }
}
