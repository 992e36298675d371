import ListModel
import Storage

/// A database session other than SQLite's, as the list store drives it:
/// PostgreSQL's, from the `PostgresStore` module. It runs the store's portable
/// SQL (`?` placeholders, values as ``SQLValue``) and reports failures as
/// ``StoreError``s.
package protocol SQLSession: AnyObject {
    /// Runs a statement without parameters (transaction control).
    func execute(_ sql: String) throws(StoreError)
    /// Starts the transaction of one consistent read.
    func beginRead() throws(StoreError)
    /// Runs a statement with `values` bound to its `?`s and returns all its rows.
    func rows(_ sql: String, _ values: [SQLValue]) throws(StoreError) -> [[SQLValue]]
    /// Runs a statement with `values` bound to its `?`s and hands its rows to
    /// `visit` one at a time, until it returns false. A row's columns are
    /// decoded as `visit` reads them: a column it does not read costs nothing
    /// (a catch-up reads 10,000 history rows and, of most, half the columns).
    func forEachRow(
        _ sql: String, _ values: [SQLValue], _ visit: (any SQLSessionRow) throws(StoreError) -> Bool
    ) throws(StoreError)
    /// ``forEachRow(_:_:_:)`` over several statements' rows, one statement
    /// after the other, until `visit` returns false. A session may send them
    /// all at once, so the database answers the next while `visit` reads one.
    func forEachRow(
        _ statements: [(sql: String, values: [SQLValue])],
        _ visit: (any SQLSessionRow) throws(StoreError) -> Bool
    ) throws(StoreError)
    /// Runs a statement whose rows nobody reads (an `INSERT`, `UPDATE`,
    /// `DELETE`). A session may send it without waiting for its answer; its
    /// failure is then thrown by the session's next call that waits.
    func run(_ sql: String, _ values: [SQLValue]) throws(StoreError)
    /// What the store's SQL does differently on this session's database.
    var dialect: SQLDialect { get }
}

/// What the store's SQL does differently on each database, as named
/// questions: the list store asks these rather than which database it is on.
package struct SQLDialect: Sendable {
    /// The text index is a table the store keeps itself: SQLite's FTS5
    /// `item_text` (migrations 0004 and 0007), whose entries the writer adds
    /// and removes (``ListWriter/applyPendingText()``) and a text query
    /// searches with `MATCH`. Otherwise (PostgreSQL) it is an ordinary index
    /// the database keeps from the rows, and a text query scans.
    package let hasTextIndexTable: Bool
    /// Existing items get their declared index rows by inserting them with
    /// the insert trigger's formula (SQLite: the update trigger of migration
    /// 0006 skips a value that did not change, so rewriting a row adds
    /// nothing). Otherwise (PostgreSQL) each row is rewritten in place, which
    /// runs its trigger (migration 0002).
    package let indexesItemsByInserting: Bool
    /// Idempotency records are pruned in the order they were claimed, by
    /// rowid (SQLite, migration 0011: no index on `created_at` to update on
    /// each claim). Otherwise (PostgreSQL) through the index on `created_at`.
    package let prunesIdempotencyKeysByRowid: Bool
    /// How many versions of history one statement of a catch-up reads. On
    /// PostgreSQL, 2,000: the statements go in one pipeline, and the server
    /// produces the next span's rows while the store reads these. SQLite,
    /// in process, reads the whole span in one statement.
    package let historyVersionsPerStatement: Int

    /// SQLite's (``SQLiteStore``).
    package static let sqlite = SQLDialect(
        hasTextIndexTable: true, indexesItemsByInserting: true, prunesIdempotencyKeysByRowid: true,
        historyVersionsPerStatement: Int(Int32.max))
    /// PostgreSQL's (`PostgresStore`).
    package static let postgreSQL = SQLDialect(
        hasTextIndexTable: false, indexesItemsByInserting: false, prunesIdempotencyKeysByRowid: false,
        historyVersionsPerStatement: 2_000)
}

extension SQLSession {
    package func run(_ sql: String, _ values: [SQLValue]) throws(StoreError) {
        _ = try rows(sql, values)
    }

    /// The statements one at a time, for a session that cannot send them together.
    package func forEachRow(
        _ statements: [(sql: String, values: [SQLValue])],
        _ visit: (any SQLSessionRow) throws(StoreError) -> Bool
    ) throws(StoreError) {
        for statement in statements {
            var stopped = false
            try forEachRow(statement.sql, statement.values) { row throws(StoreError) in
                stopped = try !visit(row)
                return !stopped
            }
            if stopped { return }
        }
    }

    /// ``forEachRow(_:_:_:)`` over ``rows(_:_:)``, for a session that has no lazier way.
    package func forEachRow(
        _ sql: String, _ values: [SQLValue], _ visit: (any SQLSessionRow) throws(StoreError) -> Bool
    ) throws(StoreError) {
        for row in try rows(sql, values) {
            guard try visit(SQLValuesRow(values: row)) else { return }
        }
    }
}

/// One row of an ``SQLSession``'s answer, its columns read one at a time.
///
/// A row is good only while the `visit` it was handed to runs (a session may
/// hand every row of a statement in one object it moves along, as SQLite's
/// statement does): read what you need there. A class, so the store's reads
/// of a column pass a reference, not a copy of the row.
package protocol SQLSessionRow: AnyObject {
    /// Column `column`'s value: `.null` for NULL, or for a column the row does not have.
    func value(_ column: Int32) -> SQLValue
    /// Column `column` as an integer, nil for NULL; other values convert as
    /// ``StoreRow`` converts them (text is parsed, anything else unparsable is 0).
    func int64(_ column: Int32) -> Int64?
    /// Column `column` as text, nil for NULL; numbers in their decimal form.
    func text(_ column: Int32) -> String?
}

extension SQLSessionRow {
    package func int64(_ column: Int32) -> Int64? { value(column).storeInt64 }

    package func text(_ column: Int32) -> String? { value(column).storeText }
}

extension SQLValue {
    /// The value as the store reads an integer column: nil for NULL; see ``StoreRow`` for the rest.
    package var storeInt64: Int64? { isNull ? nil : StoreRow.int64(self) }

    /// The value as the store reads a text column: nil for NULL; see ``StoreRow`` for the rest.
    package var storeText: String? { isNull ? nil : StoreRow.text(self) }
}

/// A row whose columns are decoded already.
package final class SQLValuesRow: SQLSessionRow {
    package let values: [SQLValue]

    package init(values: [SQLValue]) { self.values = values }

    package func value(_ column: Int32) -> SQLValue {
        column >= 0 && Int(column) < values.count ? values[Int(column)] : .null
    }
}

/// A store's view of one database session: statements with store errors.
///
/// SQLite's connection is used directly (rows are streamed from the
/// statement); another backend is an ``SQLSession``. Every failure becomes a
/// `storageFailure` carrying the database's message and statement, so a store
/// method throws exactly one error type.
package struct Database {
    enum Backend {
        case sqlite(Connection)
        case session(any SQLSession)
    }

    let backend: Backend
    /// What the store's SQL does differently on this database.
    let dialect: SQLDialect

    init(connection: Connection) {
        backend = .sqlite(connection)
        dialect = .sqlite
    }

    package init(session: any SQLSession) {
        backend = .session(session)
        dialect = session.dialect
    }

    func execute(_ sql: String) throws(StoreError) {
        switch backend {
        case .sqlite(let connection):
            do { try connection.execute(sql) } catch { throw StoreError.storage(error) }
        case .session(let session):
            try session.execute(sql)
        }
    }

    /// Starts a read transaction that sees one state for all its statements.
    func beginRead() throws(StoreError) {
        switch backend {
        case .sqlite: try execute("BEGIN DEFERRED")
        case .session(let session): try session.beginRead()
        }
    }

    func run(_ sql: String, _ values: SQLValue...) throws(StoreError) {
        try run(sql, values)
    }

    func run(_ sql: String, _ values: [SQLValue]) throws(StoreError) {
        switch backend {
        case .sqlite(let connection):
            do {
                let statement = try connection.prepare(sql)
                defer { statement.reset() }
                try statement.bind(values)
                try statement.run()
            } catch {
                throw StoreError.storage(error)
            }
        case .session(let session):
            try session.run(sql, values)
        }
    }

    /// Runs `insert`, an `INSERT … ON CONFLICT … DO NOTHING` without a
    /// `RETURNING` clause, and tells whether it inserted its row. SQLite
    /// counts the changes (a `RETURNING` there fills a temporary table for
    /// every row, which costs more than the insert); another database is
    /// asked to return the row.
    func inserted(_ insert: String, _ values: SQLValue...) throws(StoreError) -> Bool {
        try inserted(insert, values: values)
    }

    /// ``inserted(_:_:)`` with the values in an array.
    func inserted(_ insert: String, values: [SQLValue]) throws(StoreError) -> Bool {
        switch backend {
        case .sqlite(let connection):
            try run(insert, values)
            return connection.changes > 0
        case .session(let session):
            return try !session.rows(insert + " RETURNING 1", values).isEmpty
        }
    }

    func rows<T>(_ sql: String, _ values: [SQLValue], _ read: (StoreRow) -> T) throws(StoreError) -> [T] {
        var results: [T] = []
        try forEach(sql, values) { row throws(StoreError) in
            results.append(read(row))
            return true
        }
        return results
    }

    func first<T>(_ sql: String, _ values: SQLValue..., read: (StoreRow) -> T) throws(StoreError) -> T? {
        try first(sql, values: values, read: read)
    }

    /// ``first(_:_:read:)`` with the values in an array.
    func first<T>(_ sql: String, values: [SQLValue], read: (StoreRow) -> T) throws(StoreError) -> T? {
        var result: T?
        try forEach(sql, values) { row throws(StoreError) in
            result = read(row)
            return false
        }
        return result
    }

    /// Streams rows to `visit` until it returns `false` (SQLite: without materializing them).
    func forEach(_ sql: String, _ values: [SQLValue], _ visit: (StoreRow) throws(StoreError) -> Bool)
        throws(StoreError)
    {
        switch backend {
        case .sqlite(let connection):
            let statement: Statement
            do {
                statement = try connection.prepare(sql)
                try statement.bind(values)
            } catch {
                throw StoreError.storage(error)
            }
            defer { statement.reset() }
            while true {
                let more: Bool
                do { more = try statement.step() } catch { throw StoreError.storage(error) }
                guard more else { return }
                guard try visit(StoreRow(.sqlite(statement.row))) else { return }
            }
        case .session(let session):
            try session.forEachRow(sql, values) { row throws(StoreError) in try visit(StoreRow(.session(row))) }
        }
    }

    /// ``forEach(_:_:_:)`` over several statements' rows, one statement after
    /// the other, until `visit` returns false. A session may send them together
    /// (PostgreSQL's does), so the database answers the next while `visit` reads one (a long read
    /// split into statements overlaps the database's work with the store's).
    func forEach(
        _ statements: [(sql: String, values: [SQLValue])], _ visit: (StoreRow) throws(StoreError) -> Bool
    ) throws(StoreError) {
        switch backend {
        case .sqlite:
            for statement in statements {
                var stopped = false
                try forEach(statement.sql, statement.values) { row throws(StoreError) in
                    stopped = try !visit(row)
                    return !stopped
                }
                if stopped { return }
            }
        case .session(let session):
            try session.forEachRow(statements) { row throws(StoreError) in try visit(StoreRow(.session(row))) }
        }
    }

    func integrityCheck() throws(StoreError) -> [String] {
        switch backend {
        case .sqlite(let connection):
            do { return try connection.integrityCheck() } catch { throw StoreError.storage(error) }
        case .session:
            return []
        }
    }

    func integer(_ sql: String, _ values: SQLValue...) throws(StoreError) -> Int64 {
        var result: Int64 = 0
        try forEach(sql, values) { row throws(StoreError) in
            result = row.int64(0)
            return false
        }
        return result
    }
}

/// One result row of either backend, read by column index. Reads convert like
/// SQLite's do (a NULL reads as 0 or ""), since the store reads only columns
/// of its own schema.
struct StoreRow {
    enum Source {
        case sqlite(Row)
        /// Another database's row, each column decoded when read.
        case session(any SQLSessionRow)
    }

    let source: Source

    init(_ source: Source) { self.source = source }

    func int64(_ index: Int32) -> Int64 {
        switch source {
        case .sqlite(let row): return row.int64(index)
        case .session(let row): return row.int64(index) ?? 0
        }
    }

    func int(_ index: Int32) -> Int { Int(int64(index)) }

    func text(_ index: Int32) -> String {
        switch source {
        case .sqlite(let row): return row.text(index)
        case .session(let row): return row.text(index) ?? ""
        }
    }

    func optionalText(_ index: Int32) -> String? {
        switch source {
        case .sqlite(let row): return row.optionalText(index)
        case .session(let row): return row.text(index)
        }
    }

    func optionalInt64(_ index: Int32) -> Int64? {
        switch source {
        case .sqlite(let row): return row.optionalInt64(index)
        case .session(let row): return row.int64(index)
        }
    }

    /// Column `index` as bytes, nil for NULL (text as its UTF-8 bytes).
    func optionalBlob(_ index: Int32) -> [UInt8]? {
        let value: SQLValue
        switch source {
        case .sqlite(let row): value = row.isNull(index) ? .null : .blob(row.blob(index))
        case .session(let row): value = row.value(index)
        }
        switch value {
        case .null: return nil
        case .blob(let bytes): return bytes
        default: return Array(Self.text(value).utf8)
        }
    }

    /// The text of column `index` as an id; the store writes only validated ids.
    func identifier(_ index: Int32) -> Identifier {
        Identifier(storedText: text(index))
    }

    static func int64(_ value: SQLValue) -> Int64 {
        switch value {
        case .integer(let value): return value
        case .real(let value): return Int64(exactly: value.rounded(.towardZero)) ?? 0
        case .text(let text): return Int64(text) ?? 0
        case .null, .blob: return 0
        }
    }

    static func text(_ value: SQLValue) -> String {
        switch value {
        case .text(let text): return text
        case .integer(let value): return String(value)
        case .real(let value): return String(value)
        case .blob(let bytes): return String(decoding: bytes, as: UTF8.self)
        case .null: return ""
        }
    }
}

@available(*, unavailable)
extension StoreRow: Sendable {}

@available(*, unavailable)
extension Database: Sendable {}

extension StoreError {
    /// The disk holding the database, or the database's size limit, has no room left.
    package static let databaseFull = StoreError(
        .storageFull,
        "the database is full: the disk holding it (or its size limit) has no room for this write. "
            + "Nothing of it was kept; writes acknowledged before are intact, and reads still work.")

    package static func storage(_ error: SQLiteError) -> StoreError {
        if error.isFull { return .databaseFull }
        return StoreError(.storageFailure, "storage failure: \(error)")
    }
}

extension Identifier {
    var sql: SQLValue { .text(rawValue) }
}

extension Int64 {
    var sql: SQLValue { .integer(self) }
}

extension Int {
    var sql: SQLValue { .integer(Int64(self)) }
}

extension String {
    var sql: SQLValue { .text(self) }
}
