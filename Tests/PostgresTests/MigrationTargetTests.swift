import Dispatch
import Foundation
import ListdTestSupport
import SchemaMigration
import Synchronization
import Testing

@testable import Postgres

/// The repository's PostgreSQL migrations.
let postgresMigrations = ListdProcess.migrations.appendingPathComponent("postgres")

func migrationError(_ body: () throws -> Void) -> MigrationError? {
    do {
        try body()
        return nil
    } catch let error as MigrationError {
        return error
    } catch {
        return nil
    }
}

@Suite(.enabled(if: TestPostgres.enabled, Comment(rawValue: TestPostgres.skipReason)))
struct MigrationTargetTests {
    static func tables(_ db: Connection) throws -> [String] {
        try db.query("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY 1").map {
            row throws(PostgresError) in try row.text(0)
        }
    }

    @Test func theRealMigrationsApplyOnceAndAgainIsHarmless() async throws {
        try await withDatabase { db, _ throws in
            let migrator = try Migrator(directory: postgresMigrations)
            #expect(try migrator.pending(db).map(\.id) == migrator.migrations.map(\.id))
            let applied = try migrator.migrate(db)
            #expect(applied.map(\.id) == migrator.migrations.map(\.id))
            #expect(try migrator.migrate(db).isEmpty)
            #expect(try migrator.pending(db).isEmpty)
            #expect(
                try Self.tables(db).sorted() == [
                    "commits", "history", "idempotency_keys", "item_values", "items", "list_index_paths",
                    "list_indexes",
                    "list_text_indexes", "lists", "renumbered_keys", "renumberings", "schema_migrations", "sections",
                    "versions",
                ])
            let recorded = try migrator.applied(db)
            #expect(recorded.map(\.checksum) == migrator.migrations.map(\.checksum))
            #expect(recorded.allSatisfy { $0.appliedAt.hasSuffix("Z") && $0.appliedAt.count == 24 })
        }
    }

    @Test func refusesChangedUnknownAndRenamedMigrations() async throws {
        try await withDatabase { db, _ throws in
            let first = Migration(id: 1, name: "one", sql: "CREATE TABLE one (x int8);")
            try Migrator(migrations: [first]).migrate(db)
            let edited = Migration(id: 1, name: "one", sql: "CREATE TABLE one (x text);")
            guard
                case .checksumMismatch(1, "one", _, _) = migrationError({
                    try Migrator(migrations: [edited]).migrate(db)
                })
            else {
                Issue.record("an edited applied migration was not refused")
                return
            }
            guard case .unknownMigration(1, "one") = migrationError({ _ = try Migrator(migrations: []).pending(db) })
            else {
                Issue.record("an unknown applied migration was not refused")
                return
            }
            let renamed = Migration(id: 1, name: "uno", sql: first.sql)
            guard case .nameMismatch = migrationError({ try Migrator(migrations: [renamed]).migrate(db) }) else {
                Issue.record("a renamed migration was not refused")
                return
            }
            #expect(try Self.tables(db) == ["one", "schema_migrations"])
        }
    }

    @Test func aFailingMigrationLeavesNothingHalfAppliedAndCarriesTheSQLState() async throws {
        try await withDatabase { db, _ throws in
            let migrations = [
                Migration(id: 1, name: "ok", sql: "CREATE TABLE ok (x int8);"),
                Migration(id: 2, name: "broken", sql: "CREATE TABLE half (x int8);\nINSERT INTO nowhere VALUES (1);"),
            ]
            let error = migrationError { try Migrator(migrations: migrations).migrate(db) }
            guard case .failed(let migration, let cause) = error else {
                Issue.record("expected failed, got \(String(describing: error))")
                return
            }
            #expect(migration.id == 2)
            #expect(cause.code == "SQLSTATE 42P01")
            #expect(cause.message.contains("nowhere"))
            #expect(db.transactionState == .idle)
            #expect(try Self.tables(db) == ["ok", "schema_migrations"])
            #expect(try Migrator(migrations: migrations).applied(db).map(\.id) == [1])
        }
    }

    @Test func aMigrationThatCommitsItselfIsReported() async throws {
        try await withDatabase { db, _ throws in
            let sneaky = Migration(id: 1, name: "sneaky", sql: "CREATE TABLE a (x int8); COMMIT;")
            guard case .failed(_, let cause) = migrationError({ try Migrator(migrations: [sneaky]).migrate(db) }) else {
                Issue.record("a migration ending the transaction was not reported")
                return
            }
            #expect(cause.message.contains("COMMIT"))
            #expect(try Migrator(migrations: [sneaky]).applied(db).isEmpty)
        }
    }

    /// Several instances starting at once: each migration is applied exactly once.
    @Test func concurrentMigratorsApplyEachMigrationOnce() async throws {
        let database = try await TestPostgres.createDatabase()
        defer { database.drop() }
        let migrations = (1...8).map { Migration(id: $0, name: "step\($0)", sql: "CREATE TABLE t\($0) (x int8);") }
        let outcomes = Mutex<[String]>([])
        let group = DispatchGroup()
        for _ in 0..<3 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                do {
                    let db = try Connection(url: database.url)
                    let applied = try Migrator(migrations: migrations).migrate(db).map(\.id)
                    outcomes.withLock { $0.append(applied.map(String.init).joined(separator: ",")) }
                } catch {
                    outcomes.withLock { $0.append("error: \(error)") }
                }
            }
        }
        try await blocking { group.wait() }
        let results = outcomes.withLock { $0 }
        #expect(!results.contains { $0.hasPrefix("error") }, "\(results)")
        let applied = results.flatMap { $0.split(separator: ",").compactMap { Int($0) } }
        #expect(applied.sorted() == Array(1...8))
    }
}
