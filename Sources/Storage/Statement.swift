import CSQLite

/// A compiled SQL statement: bind parameters, step through rows, reset.
///
/// Get one from `Connection.prepare(_:)`, which hands out statements from the
/// connection's cache already reset and with cleared bindings. A statement
/// belongs to its connection's thread, like the connection itself.
///
/// A statement that has stepped but not reached its end keeps a read
/// transaction open (and, in WAL mode, pins the snapshot). Call `reset()` when
/// you stop early; `Connection.run` and `Connection.query` do this for you.
public final class Statement {
    /// The `sqlite3_stmt`, finalized in `deinit`.
    let pointer: OpaquePointer
    /// The owning connection's handle; kept alive so finalizing stays valid
    /// even after the connection closed (SQLite's `sqlite3_close_v2` waits for
    /// the last statement).
    let database: DatabaseHandle
    /// The SQL this statement was compiled from.
    public let sql: String
    /// Whether the statement lives in the connection's cache.
    let isCached: Bool

    init(pointer: OpaquePointer, database: DatabaseHandle, sql: String, isCached: Bool) {
        self.pointer = pointer
        self.database = database
        self.sql = sql
        self.isCached = isCached
    }

    deinit {
        sqlite3_finalize(pointer)
    }

    /// The number of `?` parameters the statement takes.
    public var parameterCount: Int32 { sqlite3_bind_parameter_count(pointer) }

    /// The number of columns each result row has (zero for statements that
    /// return no rows).
    public var columnCount: Int32 { sqlite3_column_count(pointer) }

    /// The result column names, in order.
    public var columnNames: [String] {
        (0..<columnCount).map { String(cString: sqlite3_column_name(pointer, $0)) }
    }

    /// Whether the statement only reads (`sqlite3_stmt_readonly`).
    public var isReadOnly: Bool { sqlite3_stmt_readonly(pointer) != 0 }

    /// Binds every parameter, in order, replacing earlier bindings.
    ///
    /// - Throws: `SQLITE_RANGE` when the count differs from `parameterCount`
    ///   (a silent `NULL` for a forgotten parameter is a bug, not a feature),
    ///   `SQLITE_MISMATCH` for a NaN, or what SQLite reports.
    public func bind(_ values: [SQLValue]) throws(SQLiteError) {
        let expected = parameterCount
        guard values.count == Int(expected) else {
            throw SQLiteError(
                extendedCode: SQLITE_RANGE,
                message: "statement takes \(expected) parameter(s) but \(values.count) value(s) were bound",
                sql: sql)
        }
        for (offset, value) in values.enumerated() {
            try bind(value, at: Int32(offset + 1))
        }
    }

    /// Binds Swift values, in order; `nil` binds `NULL`.
    public func bind(_ values: [(any SQLBindable)?]) throws(SQLiteError) {
        try bind(values.map { $0?.sqlValue ?? .null })
    }

    /// Binds one parameter; `index` counts from 1, as in SQLite.
    ///
    /// Text and blobs are copied into SQLite's memory (`SQLITE_TRANSIENT`), so
    /// the Swift value need not outlive this call. That costs one copy, the
    /// same as a Swift-side buffer would, without tying a pointer's lifetime
    /// to a later `step()`.
    ///
    /// - Throws: `SQLITE_RANGE` for an index outside `1...parameterCount`,
    ///   `SQLITE_MISMATCH` for NaN (SQLite would silently store `NULL`).
    public func bind(_ value: SQLValue, at index: Int32) throws(SQLiteError) {
        try database.checkOpen(sql: sql)
        let count = parameterCount
        guard index >= 1, index <= count else {
            throw SQLiteError(
                extendedCode: SQLITE_RANGE,
                message: "parameter index \(index) is outside 1...\(count)", sql: sql)
        }
        let code: Int32
        switch value {
        case .null:
            code = sqlite3_bind_null(pointer, index)
        case .integer(let number):
            code = sqlite3_bind_int64(pointer, index, number)
        case .real(let number):
            guard !number.isNaN else {
                throw SQLiteError(
                    extendedCode: SQLITE_MISMATCH,
                    message: "cannot bind NaN to parameter \(index): SQLite would store NULL", sql: sql)
            }
            code = sqlite3_bind_double(pointer, index, number)
        case .text(var text):
            code = text.withUTF8 { buffer -> Int32 in
                if let base = buffer.baseAddress, buffer.count > 0 {
                    return base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                        sqlite3_bind_text64(
                            pointer, index, $0, sqlite3_uint64(buffer.count), sqliteTransient, UInt8(SQLITE_UTF8))
                    }
                }
                // A NULL pointer would bind NULL; empty text needs a real pointer.
                var terminator: CChar = 0
                return sqlite3_bind_text(pointer, index, &terminator, 0, sqliteTransient)
            }
        case .blob(let bytes):
            if bytes.isEmpty {
                // A NULL pointer would bind NULL; a zero-length zeroblob is an empty blob.
                code = sqlite3_bind_zeroblob(pointer, index, 0)
            } else {
                code = bytes.withUnsafeBytes {
                    sqlite3_bind_blob64(pointer, index, $0.baseAddress, sqlite3_uint64($0.count), sqliteTransient)
                }
            }
        }
        guard code == SQLITE_OK else {
            throw SQLiteError.current(database.pointer, code: code, sql: sql)
        }
    }

    /// Binds one Swift value; `index` counts from 1.
    public func bind(_ value: (any SQLBindable)?, at index: Int32) throws(SQLiteError) {
        try bind(value?.sqlValue ?? .null, at: index)
    }

    /// Sets every parameter back to `NULL` and frees bound text and blobs.
    public func clearBindings() {
        sqlite3_clear_bindings(pointer)
    }

    /// Runs the statement to its next row.
    ///
    /// - Returns: `true` when a row is available in `row`, `false` when the
    ///   statement is done.
    /// - Throws: the error SQLite reports, with this statement's SQL. The
    ///   statement is reset, so its locks are released and it can run again.
    public func step() throws(SQLiteError) -> Bool {
        try database.checkOpen(sql: sql)
        let code = sqlite3_step(pointer)
        switch code {
        case SQLITE_ROW:
            return true
        case SQLITE_DONE:
            return false
        default:
            let error = SQLiteError.current(database.pointer, code: code, sql: sql)
            sqlite3_reset(pointer)
            throw error
        }
    }

    /// Steps to completion, ignoring any rows (for writes, DDL, `RETURNING`
    /// you do not need), then resets.
    public func run() throws(SQLiteError) {
        defer { sqlite3_reset(pointer) }
        while try step() {}
    }

    /// Rewinds the statement so it can run again; bindings stay.
    ///
    /// Any error of the last step was already thrown by `step()`, so the
    /// result code `sqlite3_reset` repeats is ignored here.
    public func reset() {
        sqlite3_reset(pointer)
    }

    /// Whether the statement has stepped and not yet finished or been reset.
    public var isBusy: Bool { sqlite3_stmt_busy(pointer) != 0 }

    /// The current row. Valid only after `step()` returned `true` and until
    /// the next `step()` or `reset()`.
    public var row: Row { Row(statement: self) }
}

@available(*, unavailable)
extension Statement: Sendable {}

/// `SQLITE_TRANSIENT`: tells SQLite to copy bound bytes before returning.
var sqliteTransient: sqlite3_destructor_type {
    unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
}
