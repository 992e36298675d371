import CSQLite

/// Owns the `sqlite3*` of one connection, shared by the connection and its
/// statements so a statement that outlives `Connection.close()` fails cleanly
/// instead of touching a closed handle.
final class DatabaseHandle {
    /// The open handle, or `nil` once closed.
    private(set) var pointer: OpaquePointer?

    init(pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        close()
    }

    /// Closes the handle; idempotent.
    ///
    /// `sqlite3_close_v2` (not `sqlite3_close`) because a caller may still hold
    /// a statement: SQLite then keeps the handle as a zombie until the last
    /// statement is finalized, instead of failing with `SQLITE_BUSY`.
    func close() {
        guard let pointer else { return }
        self.pointer = nil
        sqlite3_close_v2(pointer)
    }

    /// The open handle, or a misuse error naming the statement.
    @discardableResult
    func checkOpen(sql: String? = nil) throws(SQLiteError) -> OpaquePointer {
        guard let pointer else {
            throw SQLiteError.misuse("the connection is closed", sql: sql)
        }
        return pointer
    }
}

@available(*, unavailable)
extension DatabaseHandle: Sendable {}
