import CLibPQ

/// Why a PostgreSQL call failed: the server's SQLSTATE and messages, or
/// libpq's message when there was no server answer (connection refused, lost).
///
/// Modelled on SQLite's error in `Storage`: enough for an operator to act on
/// (the code, the server's message, detail and hint, the statement).
public struct PostgresError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where the failure happened.
    public enum Kind: Sendable, Hashable {
        /// Connecting failed, or the connection was lost (no usable answer).
        case connection
        /// The server answered with an error (it carries a SQLSTATE).
        case server
        /// The caller misused the API or the answer was not what was asked
        /// (a column out of range, a value of another type).
        case misuse
    }

    /// Where the failure happened.
    public var kind: Kind
    /// The five-character SQLSTATE, such as `23505` (unique violation); `nil`
    /// when the server did not answer.
    public var sqlState: String?
    /// The primary message (the server's, or libpq's).
    public var message: String
    /// The server's optional detail and hint.
    public var detail: String?
    public var hint: String?
    /// The statement that failed, when there was one.
    public var sql: String?
    /// The constraint that refused a row (`lists_pkey`), when one did.
    public var constraint: String?

    /// Creates an error.
    public init(
        _ kind: Kind, sqlState: String? = nil, message: String, detail: String? = nil, hint: String? = nil,
        sql: String? = nil
    ) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.hint = hint
        self.sql = sql
    }

    /// `23505`: a unique constraint refused a row.
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// `40001` or `40P01`: a serialization failure or deadlock; retrying may succeed.
    public var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }
    /// The connection is gone (lost, refused, or the server said class 08 or
    /// 57P01/57P02/57P03: shutting down, crashed, cannot connect now).
    public var isConnectionFailure: Bool {
        kind == .connection || sqlState?.hasPrefix("08") == true
            || ["57P01", "57P02", "57P03"].contains(sqlState ?? "")
    }

    public var description: String {
        var text = message
        if let sqlState { text = "\(text) (SQLSTATE \(sqlState))" }
        if let detail { text += "; detail: \(detail)" }
        if let hint { text += "; hint: \(hint)" }
        if let sql { text += "; statement: \(Self.shortened(sql))" }
        return text
    }

    /// The first 200 characters of a statement on one line, for messages.
    static func shortened(_ sql: String) -> String {
        let line = sql.split(whereSeparator: \.isNewline).map { $0.trimmingSpaces }.joined(separator: " ")
        return line.count > 200 ? String(line.prefix(200)) + "…" : line
    }

    /// The error a failed result carries.
    static func from(result: OpaquePointer?, connection: OpaquePointer?, sql: String?) -> PostgresError {
        guard let result else {
            return PostgresError(.connection, message: connectionMessage(connection), sql: sql)
        }
        func field(_ code: UInt8) -> String? {
            guard let text = PQresultErrorField(result, Int32(code)) else { return nil }
            return String(cString: text)
        }
        let sqlState = field(UInt8(ascii: "C"))
        let message = field(UInt8(ascii: "M")) ?? trimmed(String(cString: PQresultErrorMessage(result)))
        var error = PostgresError(
            sqlState == nil ? .connection : .server, sqlState: sqlState,
            message: message.isEmpty ? connectionMessage(connection) : message,
            detail: field(UInt8(ascii: "D")), hint: field(UInt8(ascii: "H")), sql: sql)
        error.constraint = field(UInt8(ascii: "n"))
        return error
    }

    /// libpq's last message on `connection`, trimmed.
    static func connectionMessage(_ connection: OpaquePointer?) -> String {
        guard let connection, let text = PQerrorMessage(connection) else { return "no connection" }
        let message = trimmed(String(cString: text))
        return message.isEmpty ? "the connection failed" : message
    }

    static func trimmed(_ text: String) -> String {
        String(text.trimmingSpaces)
    }
}

extension StringProtocol {
    var trimmingSpaces: SubSequence {
        var start = startIndex
        var end = endIndex
        while start < end, self[start].isWhitespace { start = index(after: start) }
        while end > start, self[index(before: end)].isWhitespace { end = index(before: end) }
        return self[start..<end]
    }
}
