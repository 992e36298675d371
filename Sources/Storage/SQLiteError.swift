import CSQLite
import Glibc

/// An error reported by SQLite, or by this wrapper when it refuses a misuse.
///
/// It carries everything an operator needs to act: the primary result code
/// (what kind of failure), the extended code (which variant, e.g. *which*
/// constraint), SQLite's own message and the statement that failed. Modelled on
/// GRDB's `DatabaseError`.
///
/// ```
/// SQLite error 19 (SQLITE_CONSTRAINT_UNIQUE): UNIQUE constraint failed: items.id — while running: INSERT INTO items …
/// ```
public struct SQLiteError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The primary result code, such as `SQLITE_CONSTRAINT` (19).
    public var code: Int32
    /// The extended result code, such as `SQLITE_CONSTRAINT_UNIQUE` (2067).
    ///
    /// Equal to `code` when SQLite reports no extended variant.
    public var extendedCode: Int32
    /// SQLite's message (`sqlite3_errmsg`) or this wrapper's own words.
    public var message: String
    /// The SQL text that failed, when the failure belongs to a statement.
    public var sql: String?
    /// The operating system's error behind an I/O error (`sqlite3_system_errno`,
    /// such as `ENOSPC`), or 0.
    public var systemErrno: Int32 = 0

    /// Makes an error from an extended (or primary) result code.
    ///
    /// The primary code is derived from the low byte, so callers need pass only
    /// the most precise code they have.
    public init(extendedCode: Int32, message: String, sql: String? = nil) {
        self.code = extendedCode & 0xFF
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
    }

    /// Makes an error from its parts as they are.
    public init(code: Int32, extendedCode: Int32, message: String, sql: String? = nil) {
        self.code = code
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
    }

    /// `"SQLite error 19 (SQLITE_CONSTRAINT_UNIQUE): … — while running: …"`.
    public var description: String {
        var text = "SQLite error \(code) (\(SQLiteError.name(of: extendedCode))): \(message)"
        if let sql {
            text += " — while running: \(sql)"
        }
        return text
    }

    /// The symbolic name of the extended code, such as `SQLITE_CONSTRAINT_UNIQUE`.
    public var codeName: String { SQLiteError.name(of: extendedCode) }

    /// Whether a constraint (UNIQUE, FOREIGN KEY, CHECK, NOT NULL, …) refused a write.
    public var isConstraintViolation: Bool { code == SQLITE_CONSTRAINT }
    /// Whether a UNIQUE or PRIMARY KEY constraint refused a write.
    public var isUniqueViolation: Bool {
        extendedCode == SQLITE_CONSTRAINT_UNIQUE || extendedCode == SQLITE_CONSTRAINT_PRIMARYKEY
    }
    /// Whether a FOREIGN KEY constraint refused a write.
    public var isForeignKeyViolation: Bool { extendedCode == SQLITE_CONSTRAINT_FOREIGNKEY }
    /// Whether a NOT NULL constraint refused a write.
    public var isNotNullViolation: Bool { extendedCode == SQLITE_CONSTRAINT_NOTNULL }
    /// Whether a CHECK constraint refused a write.
    public var isCheckViolation: Bool { extendedCode == SQLITE_CONSTRAINT_CHECK }
    /// Whether a STRICT table refused a value of the wrong type.
    public var isDatatypeViolation: Bool { extendedCode == SQLITE_CONSTRAINT_DATATYPE }
    /// Whether another connection held a lock past the busy timeout.
    public var isBusy: Bool { code == SQLITE_BUSY }
    /// Whether a lock conflict inside this same connection's shared cache (or a
    /// deadlock SQLite detected) stopped the statement.
    public var isLocked: Bool { code == SQLITE_LOCKED }
    /// Whether the disk is full or the database reached its size limit: `SQLITE_FULL`,
    /// or an I/O error the system gave as no space (`ENOSPC`, `EDQUOT`), or the WAL's
    /// shared-memory index that could not grow (`SQLITE_IOERR_SHMSIZE`: SQLite says
    /// so when a full disk refuses the `-shm` file's next pages, before any page of
    /// the database is written).
    public var isFull: Bool {
        code == SQLITE_FULL || extendedCode == SQLITE_IOERR_SHMSIZE
            || (code == SQLITE_IOERR && (systemErrno == ENOSPC || systemErrno == EDQUOT))
    }
    /// Whether the disk or the database file failed (I/O error, full disk,
    /// corruption): conditions an operator, not a caller, has to fix.
    public var isStorageFailure: Bool {
        code == SQLITE_IOERR || code == SQLITE_FULL || code == SQLITE_CORRUPT
            || code == SQLITE_NOTADB || code == SQLITE_CANTOPEN
    }
    /// Whether the wrapper or SQLite refused an API misuse (a programming error).
    public var isMisuse: Bool { code == SQLITE_MISUSE }

    /// Builds the error SQLite currently reports for `db`.
    static func current(_ db: OpaquePointer?, code: Int32, sql: String? = nil) -> SQLiteError {
        guard let db else {
            return SQLiteError(extendedCode: code, message: String(cString: sqlite3_errstr(code)), sql: sql)
        }
        var extended = sqlite3_extended_errcode(db)
        // The connection's last error may belong to another call when `code`
        // came from somewhere else (sqlite3_close, a result of an API that does
        // not set the error); trust `code` in that case.
        if extended & 0xFF != code & 0xFF {
            extended = code
        }
        var error = SQLiteError(extendedCode: extended, message: String(cString: sqlite3_errmsg(db)), sql: sql)
        if error.code == SQLITE_IOERR || error.code == SQLITE_FULL || error.code == SQLITE_CANTOPEN {
            error.systemErrno = sqlite3_system_errno(db)
        }
        return error
    }

    /// An error for a misuse this wrapper detects itself.
    static func misuse(_ message: String, sql: String? = nil) -> SQLiteError {
        SQLiteError(extendedCode: SQLITE_MISUSE, message: message, sql: sql)
    }

    /// The symbolic name of a primary or extended result code.
    public static func name(of code: Int32) -> String {
        if let name = extendedNames[code] { return name }
        if let name = primaryNames[code & 0xFF] {
            return code > 0xFF ? "\(name) (extended \(code))" : name
        }
        return "SQLITE_UNKNOWN_\(code)"
    }

    private static let primaryNames: [Int32: String] = [
        SQLITE_OK: "SQLITE_OK", SQLITE_ERROR: "SQLITE_ERROR", SQLITE_INTERNAL: "SQLITE_INTERNAL",
        SQLITE_PERM: "SQLITE_PERM", SQLITE_ABORT: "SQLITE_ABORT", SQLITE_BUSY: "SQLITE_BUSY",
        SQLITE_LOCKED: "SQLITE_LOCKED", SQLITE_NOMEM: "SQLITE_NOMEM", SQLITE_READONLY: "SQLITE_READONLY",
        SQLITE_INTERRUPT: "SQLITE_INTERRUPT", SQLITE_IOERR: "SQLITE_IOERR", SQLITE_CORRUPT: "SQLITE_CORRUPT",
        SQLITE_NOTFOUND: "SQLITE_NOTFOUND", SQLITE_FULL: "SQLITE_FULL", SQLITE_CANTOPEN: "SQLITE_CANTOPEN",
        SQLITE_PROTOCOL: "SQLITE_PROTOCOL", SQLITE_EMPTY: "SQLITE_EMPTY", SQLITE_SCHEMA: "SQLITE_SCHEMA",
        SQLITE_TOOBIG: "SQLITE_TOOBIG", SQLITE_CONSTRAINT: "SQLITE_CONSTRAINT", SQLITE_MISMATCH: "SQLITE_MISMATCH",
        SQLITE_MISUSE: "SQLITE_MISUSE", SQLITE_NOLFS: "SQLITE_NOLFS", SQLITE_AUTH: "SQLITE_AUTH",
        SQLITE_FORMAT: "SQLITE_FORMAT", SQLITE_RANGE: "SQLITE_RANGE", SQLITE_NOTADB: "SQLITE_NOTADB",
        SQLITE_NOTICE: "SQLITE_NOTICE", SQLITE_WARNING: "SQLITE_WARNING", SQLITE_ROW: "SQLITE_ROW",
        SQLITE_DONE: "SQLITE_DONE",
    ]

    private static let extendedNames: [Int32: String] = [
        SQLITE_CONSTRAINT_CHECK: "SQLITE_CONSTRAINT_CHECK",
        SQLITE_CONSTRAINT_COMMITHOOK: "SQLITE_CONSTRAINT_COMMITHOOK",
        SQLITE_CONSTRAINT_DATATYPE: "SQLITE_CONSTRAINT_DATATYPE",
        SQLITE_CONSTRAINT_FOREIGNKEY: "SQLITE_CONSTRAINT_FOREIGNKEY",
        SQLITE_CONSTRAINT_FUNCTION: "SQLITE_CONSTRAINT_FUNCTION",
        SQLITE_CONSTRAINT_NOTNULL: "SQLITE_CONSTRAINT_NOTNULL",
        SQLITE_CONSTRAINT_PINNED: "SQLITE_CONSTRAINT_PINNED",
        SQLITE_CONSTRAINT_PRIMARYKEY: "SQLITE_CONSTRAINT_PRIMARYKEY",
        SQLITE_CONSTRAINT_ROWID: "SQLITE_CONSTRAINT_ROWID",
        SQLITE_CONSTRAINT_TRIGGER: "SQLITE_CONSTRAINT_TRIGGER",
        SQLITE_CONSTRAINT_UNIQUE: "SQLITE_CONSTRAINT_UNIQUE",
        SQLITE_CONSTRAINT_VTAB: "SQLITE_CONSTRAINT_VTAB",
        SQLITE_BUSY_RECOVERY: "SQLITE_BUSY_RECOVERY", SQLITE_BUSY_SNAPSHOT: "SQLITE_BUSY_SNAPSHOT",
        SQLITE_BUSY_TIMEOUT: "SQLITE_BUSY_TIMEOUT",
        SQLITE_LOCKED_SHAREDCACHE: "SQLITE_LOCKED_SHAREDCACHE", SQLITE_LOCKED_VTAB: "SQLITE_LOCKED_VTAB",
        SQLITE_READONLY_RECOVERY: "SQLITE_READONLY_RECOVERY", SQLITE_READONLY_CANTLOCK: "SQLITE_READONLY_CANTLOCK",
        SQLITE_READONLY_ROLLBACK: "SQLITE_READONLY_ROLLBACK", SQLITE_READONLY_DBMOVED: "SQLITE_READONLY_DBMOVED",
        SQLITE_READONLY_CANTINIT: "SQLITE_READONLY_CANTINIT", SQLITE_READONLY_DIRECTORY: "SQLITE_READONLY_DIRECTORY",
        SQLITE_IOERR_READ: "SQLITE_IOERR_READ", SQLITE_IOERR_SHORT_READ: "SQLITE_IOERR_SHORT_READ",
        SQLITE_IOERR_WRITE: "SQLITE_IOERR_WRITE", SQLITE_IOERR_FSYNC: "SQLITE_IOERR_FSYNC",
        SQLITE_IOERR_DIR_FSYNC: "SQLITE_IOERR_DIR_FSYNC", SQLITE_IOERR_TRUNCATE: "SQLITE_IOERR_TRUNCATE",
        SQLITE_IOERR_FSTAT: "SQLITE_IOERR_FSTAT", SQLITE_IOERR_UNLOCK: "SQLITE_IOERR_UNLOCK",
        SQLITE_IOERR_RDLOCK: "SQLITE_IOERR_RDLOCK", SQLITE_IOERR_DELETE: "SQLITE_IOERR_DELETE",
        SQLITE_IOERR_NOMEM: "SQLITE_IOERR_NOMEM", SQLITE_IOERR_ACCESS: "SQLITE_IOERR_ACCESS",
        SQLITE_IOERR_LOCK: "SQLITE_IOERR_LOCK", SQLITE_IOERR_CLOSE: "SQLITE_IOERR_CLOSE",
        SQLITE_IOERR_SHMOPEN: "SQLITE_IOERR_SHMOPEN", SQLITE_IOERR_SHMSIZE: "SQLITE_IOERR_SHMSIZE",
        SQLITE_IOERR_SHMMAP: "SQLITE_IOERR_SHMMAP", SQLITE_IOERR_SEEK: "SQLITE_IOERR_SEEK",
        SQLITE_IOERR_MMAP: "SQLITE_IOERR_MMAP", SQLITE_IOERR_GETTEMPPATH: "SQLITE_IOERR_GETTEMPPATH",
        SQLITE_IOERR_CORRUPTFS: "SQLITE_IOERR_CORRUPTFS",
        SQLITE_CANTOPEN_NOTEMPDIR: "SQLITE_CANTOPEN_NOTEMPDIR", SQLITE_CANTOPEN_ISDIR: "SQLITE_CANTOPEN_ISDIR",
        SQLITE_CANTOPEN_FULLPATH: "SQLITE_CANTOPEN_FULLPATH",
        SQLITE_CORRUPT_VTAB: "SQLITE_CORRUPT_VTAB", SQLITE_CORRUPT_SEQUENCE: "SQLITE_CORRUPT_SEQUENCE",
        SQLITE_CORRUPT_INDEX: "SQLITE_CORRUPT_INDEX",
        SQLITE_ABORT_ROLLBACK: "SQLITE_ABORT_ROLLBACK",
        SQLITE_ERROR_MISSING_COLLSEQ: "SQLITE_ERROR_MISSING_COLLSEQ", SQLITE_ERROR_RETRY: "SQLITE_ERROR_RETRY",
        SQLITE_ERROR_SNAPSHOT: "SQLITE_ERROR_SNAPSHOT",
    ]
}
