import CLibPQ

/// The rows of one statement's answer, owning libpq's result until released.
///
/// Values are read by row and column index with typed accessors; a value is
/// decoded from the text PostgreSQL sent (results are requested in text
/// format), by the column's type.
public final class Rows {
    private let result: OpaquePointer
    /// The statement, for error messages.
    let sql: String

    init(_ result: OpaquePointer, sql: String) {
        self.result = result
        self.sql = sql
    }

    deinit { PQclear(result) }

    /// How many rows the answer has.
    public var count: Int { Int(PQntuples(result)) }
    /// How many columns each row has.
    public var columnCount: Int { Int(PQnfields(result)) }
    /// How many rows an `INSERT`, `UPDATE` or `DELETE` touched (0 otherwise).
    public var affectedRows: Int {
        guard let text = PQcmdTuples(result) else { return 0 }
        return Int(String(cString: text)) ?? 0
    }

    /// The name of column `column`.
    public func columnName(_ column: Int) -> String {
        guard column >= 0, column < columnCount, let name = PQfname(result, Int32(column)) else { return "" }
        return String(cString: name)
    }

    /// The row at `index` (0..<count).
    public subscript(index: Int) -> Row {
        precondition(index >= 0 && index < count, "row \(index) out of 0..<\(count)")
        return Row(result: self, index: Int32(index))
    }

    /// Every row, read by `read`.
    public func map<T>(_ read: (Row) throws(PostgresError) -> T) throws(PostgresError) -> [T] {
        var values: [T] = []
        values.reserveCapacity(count)
        for index in 0..<count { values.append(try read(self[index])) }
        return values
    }

    // MARK: Raw access, for Row

    func isNull(_ row: Int32, _ column: Int32) -> Bool { PQgetisnull(result, row, column) == 1 }

    func type(_ column: Int32) -> UInt32 { PQftype(result, column) }

    func checkColumn(_ column: Int) throws(PostgresError) -> Int32 {
        guard column >= 0, column < columnCount else {
            throw PostgresError(.misuse, message: "column \(column) out of 0..<\(columnCount)", sql: sql)
        }
        return Int32(column)
    }

    /// The integer in the column's text, read from libpq's bytes without
    /// making a `String` first; nil when they are not a decimal `Int64`.
    func integer(_ row: Int32, _ column: Int32) -> Int64? {
        guard let value = PQgetvalue(result, row, column) else { return nil }
        let length = Int(PQgetlength(result, row, column))
        return value.withMemoryRebound(to: UInt8.self, capacity: length) {
            Self.decimal(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    /// `bytes` as a decimal `Int64` (an optional sign, then digits only), or
    /// nil: what `Int64(_: String)` accepts, without the string.
    static func decimal(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        var index = 0
        var negative = false
        if let first = bytes.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") {
            negative = first == UInt8(ascii: "-")
            index = 1
        }
        guard index < bytes.count else { return nil }
        // Accumulated negatively, so Int64.min parses too.
        var value: Int64 = 0
        while index < bytes.count {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (tens, overflowed) = value.multipliedReportingOverflow(by: 10)
            let (next, underflowed) = tens.subtractingReportingOverflow(Int64(digit))
            guard !overflowed, !underflowed else { return nil }
            value = next
            index += 1
        }
        if negative { return value }
        let (positive, overflowed) = Int64(0).subtractingReportingOverflow(value)
        return overflowed ? nil : positive
    }

    func text(_ row: Int32, _ column: Int32) -> String {
        guard let value = PQgetvalue(result, row, column) else { return "" }
        let length = Int(PQgetlength(result, row, column))
        return value.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }
}

@available(*, unavailable)
extension Rows: Sendable {}

/// One row of a ``Rows``: typed reads by column index.
///
/// A read of another type than the column's, or of NULL where a value is
/// required, throws `misuse` naming the column: a schema/code mismatch, never
/// something a client's input can cause.
public struct Row {
    let result: Rows
    let index: Int32

    /// The column's value, decoded by its type.
    public func value(_ column: Int) throws(PostgresError) -> PostgresValue {
        let column = try result.checkColumn(column)
        if result.isNull(index, column) { return .null }
        let type = result.type(column)
        if PostgresType.isInteger(type) {
            // Parsed from libpq's bytes: no string for a number.
            guard let value = result.integer(index, column) else {
                throw mismatch(Int(column), "an integer", result.text(index, column))
            }
            return .integer(value)
        }
        let text = result.text(index, column)
        switch type {
        case PostgresType.float4, PostgresType.float8:
            guard let value = Double(text) ?? Self.special(text) else { throw mismatch(Int(column), "a number", text) }
            return .double(value)
        case PostgresType.bool:
            return .bool(text == "t")
        case PostgresType.bytea:
            guard let bytes = Self.unhex(text) else { throw mismatch(Int(column), "bytea hex", text) }
            return .bytes(bytes)
        default:
            return .text(text)
        }
    }

    /// The column's integer, nil for NULL, for a reader that wants speed
    /// over checks: a column of an integer type is parsed straight from
    /// libpq's bytes; any other column, or one out of range, is nil too.
    /// (``optionalInt64(_:)`` says which it was.)
    public func integerIfPresent(_ column: Int) -> Int64? {
        guard column >= 0, column < result.columnCount else { return nil }
        let column = Int32(column)
        guard !result.isNull(index, column), PostgresType.isInteger(result.type(column)) else { return nil }
        return result.integer(index, column)
    }

    /// Whether the column holds text as PostgreSQL sends it for any type
    /// that is not a number, a boolean or bytea (whose text ``value(_:)``
    /// decodes): then ``optionalText(_:)`` is its value.
    public func isPlainText(_ column: Int) -> Bool {
        guard column >= 0, column < result.columnCount else { return false }
        return !PostgresType.isDecoded(result.type(Int32(column)))
    }

    /// Whether the column is NULL.
    public func isNull(_ column: Int) throws(PostgresError) -> Bool {
        result.isNull(index, try result.checkColumn(column))
    }

    public func int64(_ column: Int) throws(PostgresError) -> Int64 {
        guard case .integer(let value) = try value(column) else { throw typeError(column, "an integer") }
        return value
    }

    public func int(_ column: Int) throws(PostgresError) -> Int { Int(try int64(column)) }

    public func double(_ column: Int) throws(PostgresError) -> Double {
        switch try value(column) {
        case .double(let value): return value
        case .integer(let value): return Double(value)
        default: throw typeError(column, "a number")
        }
    }

    public func bool(_ column: Int) throws(PostgresError) -> Bool {
        guard case .bool(let value) = try value(column) else { throw typeError(column, "a boolean") }
        return value
    }

    /// The column's text (any non-NULL column has one: its text form).
    public func text(_ column: Int) throws(PostgresError) -> String {
        let checked = try result.checkColumn(column)
        guard !result.isNull(index, checked) else { throw typeError(column, "text") }
        return result.text(index, checked)
    }

    /// The column's text, or nil for NULL.
    public func optionalText(_ column: Int) throws(PostgresError) -> String? {
        try isNull(column) ? nil : try text(column)
    }

    /// The column's integer, or nil for NULL.
    public func optionalInt64(_ column: Int) throws(PostgresError) -> Int64? {
        try isNull(column) ? nil : try int64(column)
    }

    public func bytes(_ column: Int) throws(PostgresError) -> [UInt8] {
        guard case .bytes(let value) = try value(column) else { throw typeError(column, "bytea") }
        return value
    }

    private func typeError(_ column: Int, _ expected: String) -> PostgresError {
        PostgresError(
            .misuse,
            message: "column \(column) (\(result.columnName(column))) is not \(expected) "
                + "(type oid \(column < result.columnCount ? result.type(Int32(column)) : 0))",
            sql: result.sql)
    }

    private func mismatch(_ column: Int, _ expected: String, _ text: String) -> PostgresError {
        PostgresError(
            .misuse,
            message: "column \(column) (\(result.columnName(column))) holds \(text.prefix(40)), not \(expected)",
            sql: result.sql)
    }

    private static func special(_ text: String) -> Double? {
        switch text {
        case "NaN": .nan
        case "Infinity": .infinity
        case "-Infinity": -.infinity
        default: nil
        }
    }

    /// Decodes bytea's hex output form, `\x0a1b…`.
    static func unhex(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0 else {
            return nil
        }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity((utf8.count - 2) / 2)
        var i = 2
        while i < utf8.count {
            guard let high = nibble(utf8[i]), let low = nibble(utf8[i + 1]) else { return nil }
            bytes.append(high << 4 | low)
            i += 2
        }
        return bytes
    }
}

@available(*, unavailable)
extension Row: Sendable {}
