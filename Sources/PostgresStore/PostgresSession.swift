import ListStore
import Postgres
import Storage

/// The list store's SQL on a PostgreSQL session: `?` placeholders become
/// `$1, $2…` (translated once per statement and prepared once per session),
/// values and rows convert between the store's ``SQLValue`` and PostgreSQL's,
/// and errors become ``StoreError``s.
final class PostgresSession: SQLSession {
    let connection: Postgres.Connection
    private var translated: [String: String] = [:]
    let dialect = SQLDialect.postgreSQL

    init(_ connection: Postgres.Connection) {
        self.connection = connection
    }

    func execute(_ sql: String) throws(StoreError) {
        do { try connection.execute(sql) } catch { throw StoreError.postgres(error) }
    }

    /// REPEATABLE READ: every statement of the read sees the same snapshot, as
    /// one SQLite read transaction does.
    func beginRead() throws(StoreError) {
        try execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    }

    func rows(_ sql: String, _ values: [SQLValue]) throws(StoreError) -> [[SQLValue]] {
        let statement = translate(sql)
        do {
            let rows = try connection.query(statement, values.map(\.postgres))
            var result: [[SQLValue]] = []
            result.reserveCapacity(rows.count)
            for index in 0..<rows.count {
                let row = rows[index]
                var columns: [SQLValue] = []
                columns.reserveCapacity(rows.columnCount)
                for column in 0..<rows.columnCount { columns.append(try row.value(column).sqlValue) }
                result.append(columns)
            }
            return result
        } catch {
            throw StoreError.postgres(error)
        }
    }

    /// ``rows(_:_:)`` read lazily: each row hands out its columns as they are
    /// read, straight from libpq's result (no array of values per row).
    func forEachRow(
        _ sql: String, _ values: [SQLValue], _ visit: (any SQLSessionRow) throws(StoreError) -> Bool
    ) throws(StoreError) {
        let rows: Postgres.Rows
        do { rows = try connection.query(translate(sql), values.map(\.postgres)) } catch {
            throw StoreError.postgres(error)
        }
        guard rows.count > 0 else { return }
        let row = LazyRow(rows[0])
        for index in 0..<rows.count {
            row.row = rows[index]
            guard try visit(row) else { return }
        }
    }

    /// The statements in one pipeline (``Postgres/Connection/queries(_:_:)``):
    /// PostgreSQL answers the next while `visit` reads one.
    func forEachRow(
        _ statements: [(sql: String, values: [SQLValue])],
        _ visit: (any SQLSessionRow) throws(StoreError) -> Bool
    ) throws(StoreError) {
        var stopped = false
        var failure: StoreError?
        do {
            try connection.queries(statements.map { (translate($0.sql), $0.values.map(\.postgres)) }) { _, rows in
                guard !stopped, rows.count > 0 else { return }
                let row = LazyRow(rows[0])
                for index in 0..<rows.count {
                    row.row = rows[index]
                    do throws(StoreError) {
                        guard try visit(row) else {
                            stopped = true
                            return
                        }
                    } catch {
                        failure = error
                        stopped = true
                        return
                    }
                }
            }
        } catch {
            throw StoreError.postgres(error)
        }
        if let failure { throw failure }
    }

    /// A row of a ``Rows``, decoding a column when it is read. One object
    /// walks a statement's rows (``SQLSessionRow``: a row is good only during
    /// its visit), so the store's reads pass a reference and no row allocates.
    private final class LazyRow: SQLSessionRow {
        var row: Postgres.Row

        init(_ row: Postgres.Row) { self.row = row }

        /// A column the row does not have, or text its type cannot parse, reads as NULL,
        /// as in ``rows(_:_:)``'s callers' lenient reads (neither happens with the store's own SQL).
        func value(_ column: Int32) -> SQLValue {
            (try? row.value(Int(column)))?.sqlValue ?? .null
        }

        /// An integer column straight from libpq's bytes; any other through ``value(_:)``.
        func int64(_ column: Int32) -> Int64? {
            row.integerIfPresent(Int(column)) ?? value(column).storeInt64
        }

        /// A text column as PostgreSQL sent it; a number, boolean or bytea through ``value(_:)``.
        func text(_ column: Int32) -> String? {
            row.isPlainText(Int(column)) ? (try? row.optionalText(Int(column))) : value(column).storeText
        }
    }

    /// Sends the statement in the connection's pipeline inside a transaction
    /// (its failure surfaces at the next statement that reads, or at the
    /// writer's `RELEASE`), so a write's `INSERT`s and `UPDATE`s cost no round
    /// trip of their own.
    func run(_ sql: String, _ values: [SQLValue]) throws(StoreError) {
        let statement = translate(sql)
        do { try connection.enqueue(statement, values.map(\.postgres)) } catch { throw StoreError.postgres(error) }
    }

    /// `sql` with each `?` outside quotes replaced by `$n`.
    private func translate(_ sql: String) -> String {
        if let done = translated[sql] { return done }
        var out = ""
        var number = 0
        var quote: Character?
        for character in sql {
            if let open = quote {
                if character == open { quote = nil }
                out.append(character)
            } else if character == "'" || character == "\"" {
                quote = character
                out.append(character)
            } else if character == "?" {
                number += 1
                out += "$\(number)"
            } else {
                out.append(character)
            }
        }
        translated[sql] = out
        return out
    }
}

@available(*, unavailable)
extension PostgresSession: Sendable {}

extension SQLValue {
    var postgres: PostgresValue {
        switch self {
        case .null: .null
        case .integer(let value): .integer(value)
        case .real(let value): .double(value)
        case .text(let value): .text(value)
        case .blob(let value): .bytes(value)
        }
    }
}

extension PostgresValue {
    var sqlValue: SQLValue {
        switch self {
        case .null: .null
        case .integer(let value): .integer(value)
        case .double(let value): .real(value)
        case .bool(let value): .integer(value ? 1 : 0)
        case .text(let value): .text(value)
        case .bytes(let value): .blob(value)
        }
    }
}

extension StoreError {
    /// A PostgreSQL failure as the store reports it: a race on a new list's id
    /// is the client's conflict; anything else is a storage failure.
    static func postgres(_ error: PostgresError) -> StoreError {
        if error.isUniqueViolation, error.constraint == "lists_pkey" {
            return StoreError(.listAlreadyExists, "the list already exists (created concurrently)")
        }
        return StoreError(.storageFailure, "storage failure: \(error)")
    }
}
