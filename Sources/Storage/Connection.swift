import CSQLite

/// One open SQLite database connection, confined to one thread.
///
/// The connection is opened with `SQLITE_OPEN_NOMUTEX`: SQLite does no locking
/// of its own around this handle, so the handle, its statements and its rows
/// must only ever be used from one thread at a time (the type is deliberately
/// not `Sendable`). Use one connection per thread — a writer thread owns the
/// write connection, each reader thread its own — and let WAL mode run readers
/// beside the writer. Connections to the same file in different threads are
/// fine; that is what WAL is for.
///
/// On open the connection sets its pragmas (see `ConnectionOptions`), enables
/// extended result codes, and verifies that WAL actually took.
///
/// ```swift
/// let db = try Connection(path: "listd.sqlite")
/// try db.execute("CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, name TEXT) STRICT")
/// try db.transaction(.immediate) {
///     try db.run("INSERT INTO t(name) VALUES (?)", "apple")
/// }
/// let names = try db.query("SELECT name FROM t ORDER BY id") { $0.text(0) }
/// ```
public final class Connection {
    /// The path the connection was opened with (`:memory:` for a private
    /// in-memory database).
    public let path: String
    /// The options the connection was opened with.
    public let options: ConnectionOptions

    let database: DatabaseHandle
    private var cache: StatementCache
    /// Kept alive for SQLite's WAL hook (``handOffCheckpoints(atPages:backstopPages:due:)``).
    private var checkpointHook: CheckpointHook?
    private var savepointDepth = 0

    /// Opens (and by default creates) the database at `path` and configures it.
    ///
    /// - Throws: `SQLiteError` when the file cannot be opened, a pragma fails,
    ///   or WAL was requested and the file stayed in another journal mode (a
    ///   network file system, or another process holding it in rollback mode).
    public init(path: String, options: ConnectionOptions = .init()) throws(SQLiteError) {
        self.path = path
        self.options = options
        self.cache = StatementCache(capacity: options.statementCacheCapacity)

        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        var name = path
        if options.immutable {
            flags |= SQLITE_OPEN_READONLY | SQLITE_OPEN_URI
            name = "file:" + Connection.uriEscaped(path) + "?immutable=1"
        } else if options.readOnly {
            flags |= SQLITE_OPEN_READONLY
        } else {
            flags |= SQLITE_OPEN_READWRITE
            if options.create { flags |= SQLITE_OPEN_CREATE }
        }
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(name, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            // sqlite3_open_v2 allocates a handle even when it fails, to carry
            // the message; read it, then free the handle.
            var error = SQLiteError.current(handle, code: code)
            error.message += " (opening \(path))"
            sqlite3_close_v2(handle)
            throw error
        }
        self.database = DatabaseHandle(pointer: handle)
        // From here on a throw runs deinit, which closes the handle.
        try configure()
    }

    deinit {
        close()
    }

    /// `path` with the characters a `file:` URI gives a meaning (`%`, `?`, `#`) escaped.
    static func uriEscaped(_ path: String) -> String {
        var escaped = ""
        for character in path {
            switch character {
            case "%": escaped += "%25"
            case "?": escaped += "%3F"
            case "#": escaped += "%23"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// Closes the connection; calling it again does nothing.
    ///
    /// An open transaction is rolled back. Statements a caller still holds
    /// fail with `SQLITE_MISUSE` from then on.
    public func close() {
        cache.removeAll()
        database.close()
        checkpointHook = nil
    }

    /// Whether `close()` has been called.
    public var isClosed: Bool { database.pointer == nil }

    private func configure() throws(SQLiteError) {
        let db = try database.checkOpen()
        sqlite3_extended_result_codes(db, 1)

        let timeout = options.busyTimeout.components
        let milliseconds = timeout.seconds * 1000 + timeout.attoseconds / 1_000_000_000_000_000
        sqlite3_busy_timeout(db, Int32(clamping: max(0, milliseconds)))

        if options.journalModeWAL && !options.readOnly && !options.immutable {
            let mode = try switchToWAL(timeout: options.busyTimeout)
            // An in-memory database cannot use WAL; it reports "memory".
            if mode != "wal" && !(mode == "memory" && isInMemory) {
                throw SQLiteError(
                    extendedCode: SQLITE_ERROR,
                    message: "could not switch \(path) to WAL: journal_mode stayed \(mode) "
                        + "(WAL needs shared memory on a local file system)")
            }
        }

        try execute("PRAGMA synchronous=\(options.synchronous.rawValue.uppercased())")
        try execute("PRAGMA foreign_keys=\(options.foreignKeys ? "ON" : "OFF")")
        // Temporary tables and sort spills stay in memory: listd's temporary
        // data is small, and a temp file would add I/O to sorts.
        try execute("PRAGMA temp_store=MEMORY")
        try execute("PRAGMA cache_size=-\(max(0, options.cacheSizeKiB))")
        try execute("PRAGMA journal_size_limit=\(options.journalSizeLimit)")
    }

    /// Sets `journal_mode=WAL` and returns the mode SQLite reports.
    ///
    /// While another connection is creating or converting the same file,
    /// SQLite answers the journal-mode change with `SQLITE_BUSY` at once,
    /// without calling the busy handler; so retry here, within the same
    /// busy timeout the handler would have used.
    private func switchToWAL(timeout: Duration) throws(SQLiteError) -> String {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        var pause: Int32 = 1
        while true {
            do {
                let current = try pragmaText("PRAGMA journal_mode").lowercased()
                if current == "wal" { return current }
                return try pragmaText("PRAGMA journal_mode=WAL").lowercased()
            } catch {
                guard error.isBusy, clock.now < deadline else { throw error }
                sqlite3_sleep(pause)
                pause = min(pause * 2, 50)
            }
        }
    }

    private func pragmaText(_ sql: String) throws(SQLiteError) -> String {
        let statement = try makeStatement(sql)
        guard try statement.step() else {
            throw SQLiteError(extendedCode: SQLITE_ERROR, message: "pragma returned no row", sql: sql)
        }
        return statement.row.text(0)
    }

    /// Whether this is a private in-memory or temporary database (SQLite
    /// reports an empty file name for those).
    public var isInMemory: Bool {
        guard let db = database.pointer, let name = sqlite3_db_filename(db, "main") else { return true }
        return name.pointee == 0
    }

    // MARK: Running SQL

    /// Runs one or more `;`-separated statements that take no parameters
    /// (schema scripts, pragmas, `BEGIN`/`COMMIT`).
    ///
    /// - Throws: the first failing statement's error; earlier statements of
    ///   the script stay applied unless a transaction surrounds the call.
    public func execute(_ sql: String) throws(SQLiteError) {
        let db = try database.checkOpen(sql: sql)
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(db, sql, nil, nil, &message)
        guard code == SQLITE_OK else {
            var error = SQLiteError.current(db, code: code, sql: sql)
            if let message {
                error.message = String(cString: message)
            }
            sqlite3_free(message)
            throw error
        }
    }

    /// A statement for `sql` from the connection's cache, reset and with
    /// cleared bindings, compiled on a miss.
    ///
    /// `sql` must hold exactly one statement (comments and white space
    /// around it are fine): use `execute(_:)` for scripts. If the cached
    /// statement is still being stepped by an earlier caller (a nested query
    /// of the same SQL), a private uncached copy is returned instead, so the
    /// outer iteration is never disturbed. Two callers that hold the same
    /// SQL's statement without stepping it share one object: finish with one
    /// before preparing the other, or use `makeStatement(_:)`.
    ///
    /// - Complexity: O(1) on a hit.
    public func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        if let statement = cache.lookup(sql) {
            sqlite3_reset(statement.pointer)
            sqlite3_clear_bindings(statement.pointer)
            return statement
        }
        let cacheable = cache.capacity > 0 && cache.lookupWouldMiss(sql)
        let statement = try compile(sql, persistent: cacheable)
        if cacheable { cache.insert(statement) }
        return statement
    }

    /// A new statement for `sql` that bypasses the cache, for SQL run once.
    public func makeStatement(_ sql: String) throws(SQLiteError) -> Statement {
        try compile(sql, persistent: false)
    }

    private func compile(_ sql: String, persistent: Bool) throws(SQLiteError) -> Statement {
        let db = try database.checkOpen(sql: sql)
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        var pointer: OpaquePointer?
        var extraStatement = false
        let code = sql.withCString { text -> Int32 in
            var tail: UnsafePointer<CChar>?
            let code = sqlite3_prepare_v3(db, text, -1, flags, &pointer, &tail)
            guard code == SQLITE_OK, pointer != nil else { return code }
            // Anything after the statement other than white space and
            // comments would be silently ignored: refuse it instead.
            while let rest = tail, rest.pointee != 0 {
                var next: OpaquePointer?
                var nextTail: UnsafePointer<CChar>?
                let nextCode = sqlite3_prepare_v3(db, rest, -1, 0, &next, &nextTail)
                if nextCode != SQLITE_OK || next != nil {
                    sqlite3_finalize(next)
                    extraStatement = true
                    return SQLITE_OK
                }
                tail = nextTail
            }
            return SQLITE_OK
        }
        guard code == SQLITE_OK else {
            throw SQLiteError.current(db, code: code, sql: sql)
        }
        guard let pointer else {
            throw SQLiteError.misuse("no SQL statement to prepare", sql: sql)
        }
        guard !extraStatement else {
            sqlite3_finalize(pointer)
            throw SQLiteError.misuse(
                "prepare takes exactly one statement; use execute(_:) for several", sql: sql)
        }
        return Statement(pointer: pointer, database: database, sql: sql, isCached: persistent)
    }

    /// Binds `values` to `sql` (one statement), steps it to completion and
    /// resets it.
    ///
    /// ```swift
    /// try db.run("UPDATE items SET model = ? WHERE id = ?", model, id)
    /// ```
    public func run(_ sql: String, _ values: (any SQLBindable)?...) throws(SQLiteError) {
        try run(sql, arguments: values)
    }

    /// `run(_:_:)` with the values in an array.
    public func run(_ sql: String, arguments values: [(any SQLBindable)?]) throws(SQLiteError) {
        let statement = try prepare(sql)
        defer { finish(statement) }
        try statement.bind(values)
        while try statement.step() {}
    }

    /// Runs a query and maps every row with `row`.
    ///
    /// The statement is reset afterwards even when `row` throws, so no read
    /// transaction is left open.
    ///
    /// ```swift
    /// let ids = try db.query("SELECT id FROM items WHERE list = ?", list) { $0.text(0) }
    /// ```
    public func query<T>(
        _ sql: String, _ values: (any SQLBindable)?..., row read: (Row) throws -> T
    ) throws -> [T] {
        try query(sql, arguments: values, row: read)
    }

    /// `query(_:_:row:)` with the values in an array.
    public func query<T>(
        _ sql: String, arguments values: [(any SQLBindable)?], row read: (Row) throws -> T
    ) throws -> [T] {
        let statement = try prepare(sql)
        defer { finish(statement) }
        try statement.bind(values)
        var results: [T] = []
        while try statement.step() {
            results.append(try read(statement.row))
        }
        return results
    }

    /// The first row of a query mapped with `row`, or `nil` when there is none.
    public func queryFirst<T>(
        _ sql: String, _ values: (any SQLBindable)?..., row read: (Row) throws -> T
    ) throws -> T? {
        let statement = try prepare(sql)
        defer { finish(statement) }
        try statement.bind(values)
        return try statement.step() ? read(statement.row) : nil
    }

    /// The first column of the first row, in its stored type, or `nil` when
    /// the query returns no row.
    public func scalar(_ sql: String, _ values: (any SQLBindable)?...) throws(SQLiteError) -> SQLValue? {
        let statement = try prepare(sql)
        defer { finish(statement) }
        try statement.bind(values)
        guard try statement.step(), statement.columnCount > 0 else { return nil }
        return statement.row.value(0)
    }

    /// Releases the statement's read snapshot and bound buffers.
    private func finish(_ statement: Statement) {
        sqlite3_reset(statement.pointer)
        sqlite3_clear_bindings(statement.pointer)
    }

    // MARK: State

    /// Rows changed by the most recent `INSERT`, `UPDATE` or `DELETE`.
    public var changes: Int {
        guard let db = database.pointer else { return 0 }
        return Int(sqlite3_changes64(db))
    }

    /// Rows changed since the connection opened.
    public var totalChanges: Int {
        guard let db = database.pointer else { return 0 }
        return Int(sqlite3_total_changes64(db))
    }

    /// The rowid of the most recent successful `INSERT`.
    public var lastInsertRowID: Int64 {
        guard let db = database.pointer else { return 0 }
        return sqlite3_last_insert_rowid(db)
    }

    /// Whether a transaction is open (SQLite is not in autocommit mode).
    public var isInTransaction: Bool {
        guard let db = database.pointer else { return false }
        return sqlite3_get_autocommit(db) == 0
    }

    /// Counters of the statement cache.
    public var statementCacheStatistics: StatementCacheStatistics { cache.statistics }

    /// Drops every cached statement (they are finalized once no caller holds them).
    public func clearStatementCache() {
        cache.removeAll()
    }

    // MARK: Transactions

    /// Runs `body` in a transaction: commits when it returns, rolls back when
    /// it (or the commit) throws, and rethrows.
    ///
    /// Use `.immediate` for any transaction that writes, so the write lock is
    /// taken (waiting up to the busy timeout) before any work is done.
    /// Transactions do not nest; use `savepoint(_:)` inside one.
    public func transaction<T>(_ kind: TransactionKind = .deferred, _ body: () throws -> T) throws -> T {
        try run("BEGIN \(kind.rawValue)")
        let result: T
        do {
            result = try body()
        } catch {
            rollbackIfNeeded()
            throw error
        }
        do {
            try run("COMMIT")
        } catch {
            rollbackIfNeeded()
            throw error
        }
        return result
    }

    /// Runs `body` in a savepoint (`sp1`, `sp2`, … by nesting depth): releases
    /// it when `body` returns; rolls back to it and releases it when `body`
    /// throws, then rethrows, so the enclosing transaction continues as if
    /// `body` never ran.
    ///
    /// Outside a transaction the outermost savepoint acts as a deferred
    /// transaction that commits on release.
    public func savepoint<T>(_ body: () throws -> T) throws -> T {
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        let name = "sp\(savepointDepth)"
        try run("SAVEPOINT \(name)")
        let result: T
        do {
            result = try body()
        } catch {
            undoSavepoint(name)
            throw error
        }
        do {
            try run("RELEASE \(name)")
        } catch {
            undoSavepoint(name)
            throw error
        }
        return result
    }

    /// Rolls back after a failure; a failure here cannot be reported better
    /// than the error that caused it, so it is dropped (SQLite may already
    /// have rolled back by itself, e.g. after `SQLITE_FULL`).
    private func rollbackIfNeeded() {
        guard isInTransaction else { return }
        try? run("ROLLBACK")
    }

    private func undoSavepoint(_ name: String) {
        guard isInTransaction else { return }
        try? run("ROLLBACK TO \(name)")
        try? run("RELEASE \(name)")
    }

    // MARK: Maintenance

    /// Copies the WAL back into the database file.
    ///
    /// SQLite checkpoints by itself every 1,000 pages; call this for a
    /// `.truncate` before a backup, or on shutdown.
    @discardableResult
    public func checkpoint(_ mode: CheckpointMode = .passive) throws(SQLiteError) -> CheckpointResult {
        let db = try database.checkOpen()
        let sqliteMode: Int32 =
            switch mode {
            case .passive: SQLITE_CHECKPOINT_PASSIVE
            case .full: SQLITE_CHECKPOINT_FULL
            case .restart: SQLITE_CHECKPOINT_RESTART
            case .truncate: SQLITE_CHECKPOINT_TRUNCATE
            }
        var logFrames: Int32 = 0
        var checkpointed: Int32 = 0
        let code = sqlite3_wal_checkpoint_v2(db, nil, sqliteMode, &logFrames, &checkpointed)
        guard code == SQLITE_OK else {
            throw SQLiteError.current(db, code: code, sql: "checkpoint (\(mode))")
        }
        return CheckpointResult(logFrames: Int(logFrames), checkpointedFrames: Int(checkpointed))
    }

    /// Leaves the WAL's checkpoints to another connection (usually on another
    /// thread): after a commit that leaves at least `pages` frames in the log,
    /// `due` is called on the committing thread (it should only signal), and
    /// this connection does not checkpoint, unless the log has grown past
    /// `backstopPages` (the other connection fell behind), when it does, as
    /// SQLite's own autocheckpoint would. Replaces `PRAGMA wal_autocheckpoint`.
    ///
    /// Why: a checkpoint copies the log into the database file and syncs it.
    /// Done by the committing connection, the next transaction waits for that
    /// copy; done beside it, it does not (WAL lets a checkpoint run beside a
    /// writer).
    public func handOffCheckpoints(atPages pages: Int, backstopPages: Int, due: @escaping @Sendable () -> Void)
        throws(SQLiteError)
    {
        let db = try database.checkOpen()
        let hook = CheckpointHook(pages: Int32(clamping: pages), backstop: Int32(clamping: backstopPages), due: due)
        checkpointHook = hook
        sqlite3_wal_hook(
            db,
            { context, db, name, frames in
                guard let context else { return SQLITE_OK }
                let hook = Unmanaged<CheckpointHook>.fromOpaque(context).takeUnretainedValue()
                if frames >= hook.backstop {
                    // Passive: copies what readers allow and never waits.
                    _ = sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                } else if frames >= hook.pages {
                    hook.due()
                }
                return SQLITE_OK
            }, Unmanaged.passUnretained(hook).toOpaque())
    }

    /// Runs `PRAGMA integrity_check` and returns its complaints; an intact
    /// database gives `[]`.
    public func integrityCheck() throws(SQLiteError) -> [String] {
        let statement = try makeStatement("PRAGMA integrity_check")
        var lines: [String] = []
        while try statement.step() {
            lines.append(statement.row.text(0))
        }
        return lines == ["ok"] ? [] : lines
    }
}

@available(*, unavailable)
extension Connection: Sendable {}

/// What SQLite's WAL hook of a connection needs (see ``Connection/handOffCheckpoints(atPages:backstopPages:due:)``).
private final class CheckpointHook {
    let pages: Int32
    let backstop: Int32
    let due: @Sendable () -> Void

    init(pages: Int32, backstop: Int32, due: @escaping @Sendable () -> Void) {
        self.pages = pages
        self.backstop = backstop
        self.due = due
    }
}
