import CSQLite
import Dispatch
import Foundation
import ListdTestSupport
import Synchronization
import Testing

@testable import Storage

@Suite struct ConnectionTests {
    @Test func opensWithWALForeignKeysAndFullSync() throws {
        let dir = try TemporaryDirectory()
        let db = try Connection(path: dir.path("a.sqlite"))
        #expect(try db.scalar("PRAGMA journal_mode") == .text("wal"))
        #expect(try db.scalar("PRAGMA foreign_keys") == .integer(1))
        #expect(try db.scalar("PRAGMA synchronous") == .integer(2))
        #expect(try db.scalar("PRAGMA busy_timeout") == .integer(5000))
        #expect(try db.scalar("PRAGMA temp_store") == .integer(2))
        #expect(try db.scalar("PRAGMA cache_size") == .integer(-8192))
        #expect(try db.scalar("PRAGMA journal_size_limit") == .integer(64 << 20))
        #expect(!db.isInMemory)
        #expect(FileManager.default.fileExists(atPath: dir.path("a.sqlite")))
    }

    @Test(arguments: Synchronous.allCases)
    func synchronousOptionIsApplied(level: Synchronous) throws {
        let dir = try TemporaryDirectory()
        let db = try Connection(
            path: dir.path("a.sqlite"),
            options: .init(busyTimeout: .milliseconds(250), synchronous: level, foreignKeys: false))
        #expect(try db.scalar("PRAGMA synchronous") == .integer(level.pragmaNumber))
        #expect(try db.scalar("PRAGMA busy_timeout") == .integer(250))
        #expect(try db.scalar("PRAGMA foreign_keys") == .integer(0))
    }

    @Test func inMemoryDatabaseKeepsItsMemoryJournal() throws {
        let db = try Connection(path: ":memory:")
        #expect(db.isInMemory)
        #expect(try db.scalar("PRAGMA journal_mode") == .text("memory"))
    }

    @Test func foreignKeysAreEnforced() throws {
        let db = try Connection(path: ":memory:")
        try db.execute(
            """
            CREATE TABLE parent(id INTEGER PRIMARY KEY) STRICT;
            CREATE TABLE child(id INTEGER PRIMARY KEY, parent INTEGER NOT NULL REFERENCES parent(id)) STRICT;
            """)
        let error = try #require(sqliteError { try db.run("INSERT INTO child(id, parent) VALUES (1, 42)") })
        #expect(error.isConstraintViolation)
        #expect(error.isForeignKeyViolation)
        #expect(error.extendedCode == SQLITE_CONSTRAINT_FOREIGNKEY)
    }

    @Test func missingFileWithoutCreateFailsWithCantOpen() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("absent.sqlite")
        let error = try #require(sqliteError { _ = try Connection(path: path, options: .init(create: false)) })
        #expect(error.code == SQLITE_CANTOPEN)
        #expect(error.message.contains(path))
        #expect(error.isStorageFailure)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func readOnlyConnectionReadsAndRefusesWrites() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("r.sqlite")
        let writer = try Connection(path: path)
        try writer.execute("CREATE TABLE t(v INTEGER) STRICT; INSERT INTO t VALUES (7);")
        let reader = try Connection(path: path, options: .init(readOnly: true))
        #expect(try reader.scalar("SELECT v FROM t") == .integer(7))
        #expect(try reader.scalar("PRAGMA journal_mode") == .text("wal"))
        let error = try #require(sqliteError { try reader.run("INSERT INTO t VALUES (8)") })
        #expect(error.code == SQLITE_READONLY)
    }

    @Test func closeIsIdempotentAndLaterUseIsAMisuseError() throws {
        let db = try Connection(path: ":memory:")
        let held = try db.prepare("SELECT 1")
        db.close()
        db.close()
        #expect(db.isClosed)
        #expect(!db.isInTransaction)
        #expect(db.changes == 0)
        #expect(sqliteError { try db.execute("SELECT 1") }?.isMisuse == true)
        #expect(sqliteError { _ = try db.prepare("SELECT 1") }?.isMisuse == true)
        let stepError = try #require(sqliteError { _ = try held.step() })
        #expect(stepError.isMisuse)
        #expect(stepError.message.contains("closed"))
        #expect(stepError.sql == "SELECT 1")
    }

    @Test func changesAndLastInsertRowID() throws {
        let db = try Connection(path: ":memory:")
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT) STRICT")
        try db.run("INSERT INTO t(v) VALUES (?), (?), (?)", "a", "b", "c")
        #expect(db.changes == 3)
        #expect(db.lastInsertRowID == 3)
        try db.run("UPDATE t SET v = 'z' WHERE id > ?", 1)
        #expect(db.changes == 2)
        #expect(db.totalChanges == 5)
    }

    @Test func integrityCheckOfAHealthyDatabaseIsEmpty() throws {
        let dir = try TemporaryDirectory()
        let db = try Connection(path: dir.path("i.sqlite"))
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT UNIQUE) STRICT")
        for index in 0..<100 {
            try db.run("INSERT INTO t(v) VALUES (?)", "v\(index)")
        }
        #expect(try db.integrityCheck() == [])
    }

    @Test func checkpointTruncateEmptiesTheLog() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("c.sqlite")
        let db = try Connection(path: path)
        try db.execute("CREATE TABLE t(v BLOB) STRICT")
        try db.run("INSERT INTO t VALUES (?)", [UInt8](repeating: 1, count: 50_000))
        let walSize = { (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? -1 }
        #expect(walSize() > 0)
        let result = try db.checkpoint(.truncate)
        #expect(result.logFrames == 0)
        #expect(walSize() == 0)
        let passive = try db.checkpoint()
        #expect(passive.checkpointedFrames <= passive.logFrames)
    }

    @Test func executeRunsScriptsAndPrepareRefusesThem() throws {
        let db = try Connection(path: ":memory:")
        try db.execute("CREATE TABLE a(x INTEGER) STRICT; INSERT INTO a VALUES (1); INSERT INTO a VALUES (2);")
        #expect(try db.scalar("SELECT sum(x) FROM a") == .integer(3))
        let error = try #require(sqliteError { _ = try db.prepare("SELECT 1; SELECT 2") })
        #expect(error.isMisuse)
        #expect(error.message.contains("exactly one statement"))
        // Trailing separators and comments are not a second statement.
        #expect(try db.scalar("SELECT 5; -- five\n ; /* done */") == .integer(5))
        #expect(sqliteError { _ = try db.prepare("  -- nothing\n") }?.isMisuse == true)
    }

    /// Connections racing to open a brand-new file all end up in WAL: SQLite
    /// refuses a concurrent journal-mode change with an immediate
    /// `SQLITE_BUSY`, which the connection must wait out, not report.
    @Test func concurrentOpensOfAFreshFileAllGetWAL() async throws {
        let dir = try TemporaryDirectory()
        let failures = Mutex<[String]>([])
        for round in 0..<SeededGenerator.cases(normal: 25, long: 200) {
            let path = dir.path("fresh\(round).sqlite")
            let group = DispatchGroup()
            for _ in 0..<4 {
                group.enter()
                Thread.detachNewThread {
                    defer { group.leave() }
                    do {
                        let db = try Connection(path: path)
                        let mode = try db.scalar("PRAGMA journal_mode")
                        if mode != .text("wal") {
                            failures.withLock { $0.append("round \(round): journal_mode \(String(describing: mode))") }
                        }
                    } catch {
                        failures.withLock { $0.append("round \(round): \(error)") }
                    }
                }
            }
            // On a thread of its own: blocking here would hold one of Swift's
            // cooperative threads (two on a two-core machine) from every other suite.
            try await blocking { group.wait() }
        }
        #expect(failures.withLock { $0 } == [])
    }
}

@Suite struct ImmutableConnectionTests {
    /// `listd migrate --dry-run` reads a database this way: it must leave no file behind.
    @Test func anImmutableReadCreatesNoLogFiles() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "listd-immutable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("a?b#c%d.sqlite").path
        do {
            let writer = try Connection(path: path)
            try writer.execute("CREATE TABLE t(x); INSERT INTO t VALUES (42)")
            writer.close()
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["a?b#c%d.sqlite"])
        var options = ConnectionOptions()
        options.immutable = true
        let reader = try Connection(path: path, options: options)
        #expect(try reader.scalar("SELECT x FROM t") == .integer(42))
        #expect(throws: SQLiteError.self) { try reader.execute("INSERT INTO t VALUES (1)") }
        reader.close()
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["a?b#c%d.sqlite"])
    }
}
