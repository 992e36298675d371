/// One SQLite value, as stored in a cell or bound to a parameter.
///
/// SQLite has exactly five storage classes; this enum mirrors them so values
/// can be carried, compared and hashed without touching the C API.
public enum SQLValue: Sendable, Hashable {
    /// SQL `NULL`.
    case null
    /// A 64-bit signed integer.
    case integer(Int64)
    /// An IEEE-754 double. SQLite cannot store NaN (it would become `NULL`),
    /// so binding `.real(.nan)` throws `SQLITE_MISMATCH` instead of losing it.
    case real(Double)
    /// UTF-8 text; it may contain NUL characters.
    case text(String)
    /// Raw bytes; an empty blob stays an empty blob, never `NULL`.
    case blob([UInt8])

    /// Whether the value is SQL `NULL`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}

extension SQLValue: CustomStringConvertible {
    /// A short SQL-like rendering for logs and test failures.
    public var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .text(let value): "'" + value.replacingOccurrences(of: "'", with: "''") + "'"
        case .blob(let bytes):
            "x'"
                + bytes.map { byte in
                    let hex = String(byte, radix: 16, uppercase: true)
                    return byte < 16 ? "0" + hex : hex
                }.joined() + "'"
        }
    }
}

extension String {
    /// Replaces every occurrence of `target`, without Foundation.
    fileprivate func replacingOccurrences(of target: Character, with replacement: String) -> String {
        var result = ""
        result.reserveCapacity(utf8.count)
        for character in self {
            if character == target { result += replacement } else { result.append(character) }
        }
        return result
    }
}

/// A Swift value that can be bound to a statement parameter.
///
/// Conformances exist for `Int`, `Int64`, `Int32`, `Double`, `String`,
/// `Bool` (as 0/1), `[UInt8]` (as a blob), `SQLValue` itself, and `Optional` of
/// any of them (`nil` binds `NULL`). Add your own for domain types.
public protocol SQLBindable {
    /// The value to bind.
    var sqlValue: SQLValue { get }
}

extension SQLValue: SQLBindable {
    /// The value itself.
    public var sqlValue: SQLValue { self }
}

extension Int: SQLBindable {
    /// `.integer`.
    public var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Int64: SQLBindable {
    /// `.integer`.
    public var sqlValue: SQLValue { .integer(self) }
}

extension Int32: SQLBindable {
    /// `.integer`.
    public var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Double: SQLBindable {
    /// `.real`.
    public var sqlValue: SQLValue { .real(self) }
}

extension String: SQLBindable {
    /// `.text`.
    public var sqlValue: SQLValue { .text(self) }
}

extension Substring: SQLBindable {
    /// `.text`.
    public var sqlValue: SQLValue { .text(String(self)) }
}

extension Bool: SQLBindable {
    /// `.integer(1)` for `true`, `.integer(0)` for `false`, as SQLite itself does.
    public var sqlValue: SQLValue { .integer(self ? 1 : 0) }
}

extension Array: SQLBindable where Element == UInt8 {
    /// `.blob`.
    public var sqlValue: SQLValue { .blob(self) }
}

extension Optional: SQLBindable where Wrapped: SQLBindable {
    /// The wrapped value's, or `.null` for `nil`.
    public var sqlValue: SQLValue { self?.sqlValue ?? .null }
}
