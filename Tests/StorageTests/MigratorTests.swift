import CSQLite
import Dispatch
import Foundation
import ListdTestSupport
import SchemaMigration
import Synchronization
import Testing

@testable import Storage

@Suite struct MigratorTests {
    static let createLists = "CREATE TABLE lists(id TEXT PRIMARY KEY, name TEXT NOT NULL) STRICT;\n"
    static let createItems =
        "CREATE TABLE items(id TEXT PRIMARY KEY, list TEXT NOT NULL REFERENCES lists(id)) STRICT;\n"
        + "CREATE INDEX items_by_list ON items(list);\n"
    static let addColumn = "ALTER TABLE lists ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;\n"

    /// A folder with the first `count` of three migrations, a README and a hidden file.
    private func folder(count: Int = 2) throws -> TemporaryDirectory {
        let dir = try TemporaryDirectory()
        let files = [
            ("0001_create_lists.sql", Self.createLists), ("0002_create_items.sql", Self.createItems),
            ("0003_add-epoch.sql", Self.addColumn),
        ]
        for (name, sql) in files.prefix(count) {
            try dir.write(name, sql)
        }
        try dir.write("README.md", "not a migration")
        try dir.write(".0009_hidden.sql", "garbage")
        return dir
    }

    private func tables(_ db: Connection) throws -> [String] {
        try db.query("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name") { $0.text(0) }
    }

    private func migrationError(_ body: () throws -> Void) -> MigrationError? {
        do {
            try body()
            return nil
        } catch let error as MigrationError {
            return error
        } catch {
            return nil
        }
    }

    @Test func loadsNumberedFilesInOrderWithFileChecksums() throws {
        let dir = try folder(count: 3)
        let migrator = try Migrator(directory: dir.url)
        #expect(migrator.migrations.map(\.id) == [1, 2, 3])
        #expect(migrator.migrations.map(\.name) == ["create_lists", "create_items", "add-epoch"])
        #expect(migrator.migrations[0].sql == Self.createLists)
        #expect(migrator.migrations[0].checksum == Migration.checksum(of: Array(Self.createLists.utf8)))
        #expect(migrator.migrations[0] == Migration(id: 1, name: "create_lists", sql: Self.createLists))
        #expect(migrator.migrations[2].fileName == "0003_add-epoch.sql")
    }

    @Test func migratesAnEmptyDatabaseAndRecordsEachMigration() throws {
        let dir = try folder()
        let dbDir = try TemporaryDirectory()
        let db = try Connection(path: dbDir.path("m.sqlite"))
        let migrator = try Migrator(directory: dir.url)
        #expect(try migrator.pending(db).map(\.id) == [1, 2])
        #expect(try tables(db) == [], "pending() changes nothing")

        let applied = try migrator.migrate(db)
        #expect(applied.map(\.id) == [1, 2])
        #expect(try tables(db) == ["items", "lists", "schema_migrations"])
        let recorded = try migrator.applied(db)
        #expect(recorded.map(\.id) == [1, 2])
        #expect(recorded.map(\.name) == ["create_lists", "create_items"])
        #expect(recorded.map(\.checksum) == migrator.migrations.map(\.checksum))
        for row in recorded {
            #expect(row.appliedAt.count == 24 && row.appliedAt.hasSuffix("Z") && row.appliedAt.contains("T"))
        }
        #expect(try migrator.pending(db) == [])
        #expect(try db.integrityCheck() == [])
    }

    @Test func runningTwiceIsHarmless() throws {
        let dir = try folder()
        let db = try Connection(path: ":memory:")
        let migrator = try Migrator(directory: dir.url)
        #expect(try migrator.migrate(db).count == 2)
        let before = try migrator.applied(db)
        #expect(try migrator.migrate(db) == [])
        #expect(try Migrator(directory: dir.url).migrate(db) == [])
        #expect(try migrator.applied(db) == before)
    }

    @Test func migratesAnExistingDatabaseOnlyForward() throws {
        let dir = try folder(count: 1)
        let dbDir = try TemporaryDirectory()
        let path = dbDir.path("m.sqlite")
        do {
            let db = try Connection(path: path)
            #expect(try Migrator(directory: dir.url).migrate(db).map(\.id) == [1])
            try db.run("INSERT INTO lists(id, name) VALUES ('groceries', 'Groceries')")
        }
        try dir.write("0002_create_items.sql", Self.createItems)
        try dir.write("0003_add-epoch.sql", Self.addColumn)
        let db = try Connection(path: path)
        let migrator = try Migrator(directory: dir.url)
        #expect(try migrator.pending(db).map(\.id) == [2, 3])
        #expect(try migrator.migrate(db).map(\.id) == [2, 3])
        #expect(try db.scalar("SELECT name || ':' || epoch FROM lists") == .text("Groceries:0"))
    }

    @Test func refusesADatabaseWithAnUnknownMigration() throws {
        let newer = try folder(count: 3)
        let older = try folder(count: 2)
        let db = try Connection(path: ":memory:")
        try Migrator(directory: newer.url).migrate(db)
        let migrator = try Migrator(directory: older.url)
        let before = try migrator.applied(db)

        let error = try #require(migrationError { _ = try migrator.migrate(db) })
        #expect(error == .unknownMigration(id: 3, name: "add-epoch"))
        #expect(error.description.contains("0003_add-epoch"))
        #expect(error.description.contains("newer listd"))
        #expect(migrationError { _ = try migrator.pending(db) } == error)
        #expect(try migrator.applied(db) == before)
    }

    @Test func refusesAnAppliedMigrationWhoseFileChanged() throws {
        let dir = try folder()
        let db = try Connection(path: ":memory:")
        let original = try Migrator(directory: dir.url)
        try original.migrate(db)
        try dir.write("0002_create_items.sql", Self.createItems + "-- an innocent comment\n")
        try dir.write("0003_add-epoch.sql", Self.addColumn)
        let edited = try Migrator(directory: dir.url)

        let error = try #require(migrationError { _ = try edited.migrate(db) })
        guard case .checksumMismatch(let id, let name, let recorded, let actual) = error else {
            Issue.record("expected checksumMismatch, got \(error)")
            return
        }
        #expect(id == 2)
        #expect(name == "create_items")
        #expect(recorded == original.migrations[1].checksum)
        #expect(actual == edited.migrations[1].checksum)
        #expect(error.description.contains("0002_create_items.sql"))
        #expect(error.description.contains("must never change"))
        // Nothing after the refusal was applied: 0003 stays pending.
        #expect(try db.scalar("SELECT count(*) FROM schema_migrations") == .integer(2))
        #expect(try db.query("SELECT name FROM pragma_table_info('lists')") { $0.text(0) } == ["id", "name"])
    }

    @Test func refusesARenamedAppliedMigration() throws {
        let db = try Connection(path: ":memory:")
        try Migrator(migrations: [Migration(id: 1, name: "create_lists", sql: Self.createLists)]).migrate(db)
        let renamed = Migrator(migrations: [Migration(id: 1, name: "lists", sql: Self.createLists)])
        let error = try #require(migrationError { _ = try renamed.migrate(db) })
        #expect(error == .nameMismatch(id: 1, recorded: "create_lists", actual: "lists"))
        #expect(error.description.contains("rename it back"))
    }

    @Test(arguments: [
        "1_short.sql", "0001-dash.sql", "0001_.sql", "abcd_letters.sql", "0000_zero.sql", "0001_with space.sql",
        "0001_ünïcode.sql", "_0001.sql", "0001.sql",
    ])
    func refusesBadFileNames(name: String) throws {
        let dir = try folder()
        try dir.write(name, "SELECT 1;")
        let error = try #require(migrationError { _ = try Migrator(directory: dir.url) })
        #expect(error == .badFileName(name))
        #expect(error.description.contains("NNNN_name.sql"))
    }

    @Test func refusesDuplicateIds() throws {
        let dir = try folder()
        try dir.write("00002_again.sql", "SELECT 1;")
        let error = try #require(migrationError { _ = try Migrator(directory: dir.url) })
        #expect(error == .duplicateId(2, names: ["0002_again.sql", "0002_create_items.sql"]))

        let inCode = Migrator(migrations: [Migration(id: 1, name: "a", sql: ""), Migration(id: 1, name: "b", sql: "")])
        let db = try Connection(path: ":memory:")
        #expect(migrationError { _ = try inCode.migrate(db) } == .duplicateId(1, names: ["0001_a.sql", "0001_b.sql"]))
        #expect(try tables(db) == [])
    }

    @Test func refusesGapsInIds() throws {
        let dir = try folder(count: 1)
        try dir.write("0003_add-epoch.sql", Self.addColumn)
        let error = try #require(migrationError { _ = try Migrator(directory: dir.url) })
        #expect(error == .missingId(2))
        #expect(error.description.contains("id 2 is missing"))
    }

    @Test func aFailingMigrationLeavesNothingHalfApplied() throws {
        let dir = try folder(count: 1)
        // Its first statement succeeds, its second fails: the table must not survive.
        try dir.write("0002_broken.sql", "CREATE TABLE half(x INTEGER) STRICT;\nINSERT INTO nowhere VALUES (1);\n")
        let dbDir = try TemporaryDirectory()
        let db = try Connection(path: dbDir.path("m.sqlite"))
        let migrator = try Migrator(directory: dir.url)

        let error = try #require(migrationError { _ = try migrator.migrate(db) })
        guard case .failed(let migration, let cause) = error else {
            Issue.record("expected failed, got \(error)")
            return
        }
        #expect(migration.id == 2)
        #expect(cause.message == "no such table: nowhere")
        #expect(error.description.contains("0002_broken.sql"))
        #expect(!db.isInTransaction)
        #expect(try tables(db) == ["lists", "schema_migrations"])
        #expect(try migrator.applied(db).map(\.id) == [1])

        // The failed file was never recorded, so fixing it in place is allowed.
        try dir.write("0002_broken.sql", "CREATE TABLE half(x INTEGER) STRICT;\n")
        #expect(try Migrator(directory: dir.url).migrate(db).map(\.id) == [2])
        #expect(try tables(db) == ["half", "lists", "schema_migrations"])
    }

    @Test func aMigrationThatCommitsItselfIsReported() throws {
        let db = try Connection(path: ":memory:")
        let migrator = Migrator(migrations: [
            Migration(id: 1, name: "sneaky", sql: "CREATE TABLE a(x INTEGER) STRICT; COMMIT;")
        ])
        let error = try #require(migrationError { _ = try migrator.migrate(db) })
        guard case .failed(let migration, let cause) = error else {
            Issue.record("expected failed, got \(error)")
            return
        }
        #expect(migration.name == "sneaky")
        #expect(cause.message.contains("COMMIT"))
        #expect(try migrator.applied(db) == [])
    }

    @Test func unreadableFolderAndNonUTF8File() throws {
        let dir = try TemporaryDirectory()
        let missing = dir.url.appendingPathComponent("nope")
        guard case .unreadable(let path, _) = try #require(migrationError { _ = try Migrator(directory: missing) })
        else {
            Issue.record("expected unreadable")
            return
        }
        #expect(path == missing.path)

        try Data([0x53, 0xFF, 0xFE]).write(to: dir.url.appendingPathComponent("0001_binary.sql"))
        let error = try #require(migrationError { _ = try Migrator(directory: dir.url) })
        #expect(error.description.contains("not valid UTF-8"))
    }

    @Test func emptyFolderMeansNothingToDo() throws {
        let dir = try TemporaryDirectory()
        let db = try Connection(path: ":memory:")
        let migrator = try Migrator(directory: dir.url)
        #expect(migrator.migrations == [])
        #expect(try migrator.migrate(db) == [])
        #expect(try migrator.pending(db) == [])
    }

    @Test func readOnlyConnectionCanListPendingMigrations() throws {
        let dir = try folder()
        let dbDir = try TemporaryDirectory()
        let path = dbDir.path("m.sqlite")
        do {
            let db = try Connection(path: path)
            try Migrator(migrations: [try Migrator(directory: dir.url).migrations[0]]).migrate(db)
        }
        let reader = try Connection(path: path, options: .init(readOnly: true))
        #expect(try Migrator(directory: dir.url).pending(reader).map(\.id) == [2])
    }

    /// Two processes starting at once must not both apply a migration: the
    /// check is repeated under each migration's write lock.
    @Test func concurrentMigratorsApplyEachMigrationOnce() async throws {
        let dbDir = try TemporaryDirectory()
        let path = dbDir.path("race.sqlite")
        let migrations = (1...8).map { id in
            Migration(id: id, name: "step\(id)", sql: "CREATE TABLE t\(id)(x INTEGER) STRICT;")
        }
        let outcomes = Mutex<[Result<[Int], MigrationError>]>([])
        let group = DispatchGroup()
        for _ in 0..<2 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                let outcome: Result<[Int], MigrationError>
                do {
                    let db = try Connection(path: path)
                    outcome = .success(try Migrator(migrations: migrations).migrate(db).map(\.id))
                } catch let error as MigrationError {
                    outcome = .failure(error)
                } catch {
                    outcome = .failure(.database(DatabaseFailure(code: nil, message: "\(error)")))
                }
                outcomes.withLock { $0.append(outcome) }
            }
        }
        // Waited for on a thread of its own: blocking here would hold one of
        // Swift's cooperative threads (two on a two-core machine) from every other suite.
        try await blocking { group.wait() }
        let applied = try outcomes.withLock { results in try results.map { try $0.get() } }
        #expect(applied.count == 2)
        #expect(applied.flatMap { $0 }.sorted() == Array(1...8))
        let db = try Connection(path: path)
        #expect(try Migrator(migrations: migrations).applied(db).map(\.id) == Array(1...8))
    }
}
