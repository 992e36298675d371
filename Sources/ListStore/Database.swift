import Storage

/// A store's view of one SQLite connection: statements with store errors.
///
/// Every SQLite failure becomes a `storageFailure` carrying SQLite's message
/// and statement, so a store method throws exactly one error type.
struct Database {
    let connection: Connection

    func execute(_ sql: String) throws(StoreError) {
        do { try connection.execute(sql) } catch { throw StoreError.storage(error) }
    }

    func run(_ sql: String, _ values: SQLValue...) throws(StoreError) {
        do {
            let statement = try connection.prepare(sql)
            defer { statement.reset() }
            try statement.bind(values)
            try statement.run()
        } catch {
            throw StoreError.storage(error)
        }
    }

    func rows<T>(_ sql: String, _ values: [SQLValue], _ read: (Row) -> T) throws(StoreError) -> [T] {
        do {
            let statement = try connection.prepare(sql)
            defer { statement.reset() }
            try statement.bind(values)
            var results: [T] = []
            while try statement.step() { results.append(read(statement.row)) }
            return results
        } catch {
            throw StoreError.storage(error)
        }
    }

    func first<T>(_ sql: String, _ values: SQLValue..., read: (Row) -> T) throws(StoreError) -> T? {
        do {
            let statement = try connection.prepare(sql)
            defer { statement.reset() }
            try statement.bind(values)
            return try statement.step() ? read(statement.row) : nil
        } catch {
            throw StoreError.storage(error)
        }
    }

    /// Streams rows to `visit` until it returns `false`, without materializing them.
    func forEach(_ sql: String, _ values: [SQLValue], _ visit: (Row) throws(StoreError) -> Bool) throws(StoreError) {
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
            guard try visit(statement.row) else { return }
        }
    }

    func integrityCheck() throws(StoreError) -> [String] {
        do { return try connection.integrityCheck() } catch { throw StoreError.storage(error) }
    }

    func integer(_ sql: String, _ values: SQLValue...) throws(StoreError) -> Int64 {
        do {
            let statement = try connection.prepare(sql)
            defer { statement.reset() }
            try statement.bind(values)
            return try statement.step() ? statement.row.int64(0) : 0
        } catch {
            throw StoreError.storage(error)
        }
    }
}

@available(*, unavailable)
extension Database: Sendable {}

extension StoreError {
    /// The disk holding the database, or the database's size limit, has no room left.
    static let databaseFull = StoreError(
        .storageFull,
        "the database is full: the disk holding it (or its size limit) has no room for this write. "
            + "Nothing of it was kept; writes acknowledged before are intact, and reads still work.")

    static func storage(_ error: SQLiteError) -> StoreError {
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

extension Row {
    /// The text of column `index` as an id; the store writes only validated ids.
    func identifier(_ index: Int32) -> Identifier {
        Identifier(storedText: text(index))
    }
}

extension Identifier {
    /// An id read back from the database, which holds only validated ids.
    init(storedText: String) {
        self.rawValue = storedText
    }
}
