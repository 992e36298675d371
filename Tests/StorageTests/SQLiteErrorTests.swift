import CSQLite
import Glibc
import Testing

@testable import Storage

@Suite struct SQLiteErrorTests {
    @Test func uniqueViolationCarriesCodesMessageAndSQL() throws {
        let db = try Connection(path: ":memory:")
        try db.execute("CREATE TABLE items(id TEXT PRIMARY KEY, v INTEGER) STRICT")
        let sql = "INSERT INTO items(id, v) VALUES (?, ?)"
        try db.run(sql, "apple", 1)
        let error = try #require(sqliteError { try db.run(sql, "apple", 2) })
        #expect(error.code == SQLITE_CONSTRAINT)
        #expect(error.code == 19)
        #expect(error.extendedCode == SQLITE_CONSTRAINT_PRIMARYKEY)
        #expect(error.message == "UNIQUE constraint failed: items.id")
        #expect(error.sql == sql)
        #expect(error.isConstraintViolation)
        #expect(error.isUniqueViolation)
        #expect(!error.isBusy)
        #expect(
            error.description
                == "SQLite error 19 (SQLITE_CONSTRAINT_PRIMARYKEY): UNIQUE constraint failed: items.id — while running: \(sql)"
        )
    }

    @Test func uniqueIndexViolationHasTheUniqueExtendedCode() throws {
        let db = try Connection(path: ":memory:")
        try db.execute("CREATE TABLE items(n INTEGER PRIMARY KEY, id TEXT UNIQUE) STRICT")
        try db.run("INSERT INTO items(id) VALUES ('a')")
        let error = try #require(sqliteError { try db.run("INSERT INTO items(id) VALUES ('a')") })
        #expect(error.extendedCode == SQLITE_CONSTRAINT_UNIQUE)
        #expect(error.extendedCode == 2067)
        #expect(error.codeName == "SQLITE_CONSTRAINT_UNIQUE")
        #expect(
            error.description.hasPrefix(
                "SQLite error 19 (SQLITE_CONSTRAINT_UNIQUE): UNIQUE constraint failed: items.id"))
    }

    @Test func strictTypeViolationAndNotNull() throws {
        let db = try Connection(path: ":memory:")
        try db.execute("CREATE TABLE t(n INTEGER NOT NULL) STRICT")
        let datatype = try #require(sqliteError { try db.run("INSERT INTO t VALUES (?)", "text") })
        #expect(datatype.extendedCode == SQLITE_CONSTRAINT_DATATYPE)
        #expect(datatype.isDatatypeViolation)
        let notNull = try #require(sqliteError { try db.run("INSERT INTO t VALUES (?)", nil as Int?) })
        #expect(notNull.extendedCode == SQLITE_CONSTRAINT_NOTNULL)
        #expect(notNull.isNotNullViolation)
        try db.execute("CREATE TABLE c(n INTEGER CHECK (n > 0)) STRICT")
        let check = try #require(sqliteError { try db.run("INSERT INTO c VALUES (?)", 0) })
        #expect(check.isCheckViolation)
        #expect(check.message.contains("CHECK constraint failed"))
    }

    @Test func syntaxErrorFromPrepareAndFromExecute() throws {
        let db = try Connection(path: ":memory:")
        let prepared = try #require(sqliteError { _ = try db.prepare("SELEC 1") })
        #expect(prepared.code == SQLITE_ERROR)
        #expect(prepared.message.contains("syntax error"))
        #expect(prepared.sql == "SELEC 1")
        let executed = try #require(sqliteError { try db.execute("CREATE TABLE a(x); SELEC 1") })
        #expect(executed.code == SQLITE_ERROR)
        #expect(executed.message.contains("syntax error"))
        #expect(executed.sql == "CREATE TABLE a(x); SELEC 1")
        let missing = try #require(sqliteError { _ = try db.prepare("SELECT * FROM nowhere") })
        #expect(missing.message == "no such table: nowhere")
    }

    @Test func busyWriterTimesOutWithSQLiteBusy() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("b.sqlite")
        let first = try Connection(path: path)
        let second = try Connection(path: path, options: .init(busyTimeout: .milliseconds(20)))
        try first.execute("CREATE TABLE t(v INTEGER) STRICT")
        try first.execute("BEGIN IMMEDIATE")
        let error = try #require(sqliteError { try second.execute("BEGIN IMMEDIATE") })
        #expect(error.isBusy)
        #expect(error.code == SQLITE_BUSY)
        try first.execute("COMMIT")
        try second.execute("BEGIN IMMEDIATE; COMMIT;")
    }

    @Test func codeNames() {
        #expect(SQLiteError.name(of: SQLITE_BUSY) == "SQLITE_BUSY")
        #expect(SQLiteError.name(of: SQLITE_IOERR_FSYNC) == "SQLITE_IOERR_FSYNC")
        #expect(SQLiteError.name(of: SQLITE_BUSY | (42 << 8)) == "SQLITE_BUSY (extended \(SQLITE_BUSY | (42 << 8)))")
        #expect(SQLiteError.name(of: 200) == "SQLITE_UNKNOWN_200")
        let error = SQLiteError(extendedCode: SQLITE_IOERR_WRITE, message: "disk I/O error")
        #expect(error.code == SQLITE_IOERR)
        #expect(error.isStorageFailure)
        #expect(error.description == "SQLite error 10 (SQLITE_IOERR_WRITE): disk I/O error")
    }

    /// A full disk is not always `SQLITE_FULL`: the torture harness's full tmpfs
    /// (seed 32) made SQLite fail the commit with `SQLITE_IOERR_SHMSIZE` (the WAL's
    /// shared-memory index could not grow), which listd answered 500, not 507.
    @Test func aFullDiskIsFullWhateverTheIOErrorItCameAs() {
        #expect(SQLiteError(extendedCode: SQLITE_FULL, message: "database or disk is full").isFull)
        #expect(SQLiteError(extendedCode: SQLITE_IOERR_SHMSIZE, message: "disk I/O error").isFull)
        var write = SQLiteError(extendedCode: SQLITE_IOERR_WRITE, message: "disk I/O error")
        #expect(!write.isFull)
        write.systemErrno = ENOSPC
        #expect(write.isFull)
        write.systemErrno = EDQUOT
        #expect(write.isFull)
        write.systemErrno = EIO
        #expect(!write.isFull)
        #expect(write.isStorageFailure)
        var constraint = SQLiteError(extendedCode: SQLITE_CONSTRAINT_UNIQUE, message: "UNIQUE constraint failed")
        constraint.systemErrno = ENOSPC
        #expect(!constraint.isFull)
    }
}
