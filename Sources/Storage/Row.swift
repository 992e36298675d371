import CSQLite

/// The columns of the row a `Statement` currently points at.
///
/// A row is a view, not a copy: read what you need inside the `query` closure
/// or before the next `step()`. Column indexes count from 0. An index outside
/// `0..<columnCount` is a programming error and traps.
///
/// Typed readers convert as SQLite does (`int64` of a text column parses its
/// leading number, of `NULL` gives 0); use `value(_:)` when the type matters.
public struct Row {
    /// The statement this row belongs to.
    public let statement: Statement

    private var pointer: OpaquePointer { statement.pointer }

    /// The number of columns.
    public var columnCount: Int32 { sqlite3_column_count(pointer) }

    /// The name of column `index` (its `AS` alias when it has one).
    public func columnName(_ index: Int32) -> String {
        check(index)
        return String(cString: sqlite3_column_name(pointer, index))
    }

    /// The index of the first column named `name`, or `nil`.
    ///
    /// - Complexity: O(columns).
    public func columnIndex(named name: String) -> Int32? {
        (0..<columnCount).first { String(cString: sqlite3_column_name(pointer, $0)) == name }
    }

    /// Whether column `index` is `NULL`.
    public func isNull(_ index: Int32) -> Bool {
        check(index)
        return sqlite3_column_type(pointer, index) == SQLITE_NULL
    }

    /// Column `index` as a 64-bit integer.
    public func int64(_ index: Int32) -> Int64 {
        check(index)
        return sqlite3_column_int64(pointer, index)
    }

    /// Column `index` as an `Int`.
    public func int(_ index: Int32) -> Int {
        Int(truncatingIfNeeded: int64(index))
    }

    /// Column `index` as a `Bool` (non-zero is `true`).
    public func bool(_ index: Int32) -> Bool {
        int64(index) != 0
    }

    /// Column `index` as a `Double`.
    public func double(_ index: Int32) -> Double {
        check(index)
        return sqlite3_column_double(pointer, index)
    }

    /// Column `index` as text. NUL characters inside are kept; bytes that are
    /// not UTF-8 are replaced with U+FFFD.
    public func text(_ index: Int32) -> String {
        check(index)
        // sqlite3_column_text before sqlite3_column_bytes: the order SQLite
        // documents for getting the length of the converted text.
        guard let bytes = sqlite3_column_text(pointer, index) else { return "" }
        let count = Int(sqlite3_column_bytes(pointer, index))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// Column `index` as bytes; an empty blob gives `[]`.
    public func blob(_ index: Int32) -> [UInt8] {
        check(index)
        guard let bytes = sqlite3_column_blob(pointer, index) else { return [] }
        let count = Int(sqlite3_column_bytes(pointer, index))
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }

    /// Column `index` as text, or `nil` when it is `NULL`.
    public func optionalText(_ index: Int32) -> String? {
        isNull(index) ? nil : text(index)
    }

    /// Column `index` as an integer, or `nil` when it is `NULL`.
    public func optionalInt64(_ index: Int32) -> Int64? {
        isNull(index) ? nil : int64(index)
    }

    /// Column `index` in its stored type, without conversion.
    public func value(_ index: Int32) -> SQLValue {
        check(index)
        switch sqlite3_column_type(pointer, index) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(pointer, index))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(pointer, index))
        case SQLITE_TEXT: return .text(text(index))
        case SQLITE_BLOB: return .blob(blob(index))
        default: return .null
        }
    }

    /// Every column in its stored type.
    public var values: [SQLValue] {
        (0..<columnCount).map { value($0) }
    }

    private func check(_ index: Int32) {
        precondition(
            index >= 0 && index < sqlite3_column_count(pointer),
            "column \(index) is outside the \(sqlite3_column_count(pointer)) column(s) of: \(statement.sql)")
    }
}

@available(*, unavailable)
extension Row: Sendable {}
