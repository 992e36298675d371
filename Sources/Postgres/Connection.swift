import CLibPQ
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One PostgreSQL session through libpq, used by one thread at a time.
///
/// Statements take parameters (`$1`, `$2`…) as ``PostgresValue``s, never
/// spliced into the SQL; ``query(_:_:)`` prepares each distinct statement once
/// per connection and reuses it. Answers come back as a ``Rows`` of typed
/// rows; failures as ``PostgresError`` with the server's SQLSTATE. LISTEN
/// notifications are read with ``notifications(waitingUpTo:)``, which waits on
/// the connection's socket.
public final class Connection {
    /// libpq's handle; nil once closed.
    private var handle: OpaquePointer?
    /// Statements prepared on this session, by SQL text.
    private var prepared: [String: String] = [:]
    /// Statements sent in pipeline mode whose answers are not read yet (see ``enqueue(_:_:)``).
    private var queued: [String] = []

    /// Connects with a libpq connection string: a `postgres://user:pass@host:port/db?…`
    /// URL or `key=value` pairs. `settings` add or override libpq parameters
    /// (`keepalives_idle`, `tcp_user_timeout`, `application_name`…).
    ///
    /// - Throws: `.connection` with libpq's reason (the password never appears in it).
    public init(url: String, settings: [String: String] = [:]) throws(PostgresError) {
        // The URL is expanded as "dbname"; later keywords override what it sets.
        let pairs = [("dbname", url)] + settings.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        let handle = Self.withCStrings(pairs.map(\.0)) { keywords in
            Self.withCStrings(pairs.map(\.1)) { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard let handle else {
            throw PostgresError(.connection, message: "libpq could not allocate a connection")
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            // libpq's message may quote part of the URL (a malformed percent escape quotes its whole value).
            let message = ConnectionString.scrub(PostgresError.connectionMessage(handle), secretsOf: url)
            PQfinish(handle)
            throw PostgresError(.connection, message: "cannot connect to \(Self.redacted(url)): \(message)")
        }
        // Server notices (e.g. "already exists, skipping") are not errors; keep them off stderr.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        self.handle = handle
        if PQsetClientEncoding(handle, "UTF8") != 0 {
            let message = ConnectionString.scrub(PostgresError.connectionMessage(handle), secretsOf: url)
            close()
            throw PostgresError(.connection, message: "cannot use UTF8 as the client encoding: \(message)")
        }
    }

    /// Calls `body` with a NULL-terminated array of C strings.
    private static func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T) -> T {
        let copies = strings.map { strdup($0) }
        defer { for copy in copies { free(copy) } }
        let pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } } + [nil]
        return pointers.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { preconditionFailure("an array of at least one element") }
            return body(base)
        }
    }

    deinit { close() }

    /// Ends the session. Calls made afterwards fail with `.connection`.
    public func close() {
        if let handle { PQfinish(handle) }
        handle = nil
        prepared = [:]
        queued = []
    }

    /// Whether the session is open and usable (libpq's status is OK).
    public var isOpen: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// The server process serving this session (`pg_backend_pid()`).
    public var backendPID: Int32 {
        guard let handle else { return 0 }
        return PQbackendPID(handle)
    }

    /// The socket descriptor, for waiting on notifications; -1 when closed.
    public var socket: Int32 {
        guard let handle else { return -1 }
        return PQsocket(handle)
    }

    /// Where the session is in a transaction.
    public enum TransactionState: Sendable, Hashable {
        case idle, inTransaction, failed, busy, unknown
    }

    /// Where the session is in a transaction.
    public var transactionState: TransactionState {
        guard let handle else { return .unknown }
        switch PQtransactionStatus(handle) {
        case PQTRANS_IDLE: return .idle
        case PQTRANS_INTRANS: return .inTransaction
        case PQTRANS_INERROR: return .failed
        case PQTRANS_ACTIVE: return .busy
        default: return .unknown
        }
    }

    // MARK: Statements

    /// Runs one or more statements with no parameters (the simple protocol), such
    /// as a migration script. Returns the last statement's result.
    @discardableResult
    public func execute(_ sql: String) throws(PostgresError) -> Rows {
        let handle = try ready()
        return try check(PQexec(handle, sql), sql: sql)
    }

    /// Runs one statement with parameters, preparing it on first use on this
    /// connection and reusing the prepared statement afterwards.
    @discardableResult
    public func query(_ sql: String, _ parameters: PostgresValue...) throws(PostgresError) -> Rows {
        try query(sql, parameters)
    }

    /// Runs one statement with parameters (prepared once per connection).
    @discardableResult
    public func query(_ sql: String, _ parameters: [PostgresValue]) throws(PostgresError) -> Rows {
        let name = try prepare(sql)
        if !queued.isEmpty {
            // Behind statements still in the pipeline: one round trip for all of them and this one.
            try send(sql, prepared: name, parameters)
            guard let rows = try sync(keepingLast: true) else {
                throw PostgresError(.misuse, message: "the pipeline gave no answer to the statement", sql: sql)
            }
            return rows
        }
        let handle = try open()
        let result = withParameters(parameters) { count, values, lengths, formats in
            PQexecPrepared(handle, name, count, values, lengths, formats, 0)
        }
        return try check(result, sql: sql)
    }

    /// Runs one statement with parameters without preparing it (one round trip,
    /// parameter types declared from the values); for statements run once.
    @discardableResult
    public func queryOnce(_ sql: String, _ parameters: [PostgresValue]) throws(PostgresError) -> Rows {
        let handle = try ready()
        let types = parameters.map(\.typeOID)
        let result = types.withUnsafeBufferPointer { types in
            withParameters(parameters) { count, values, lengths, formats in
                PQexecParams(handle, sql, count, types.baseAddress, values, lengths, formats, 0)
            }
        }
        return try check(result, sql: sql)
    }

    /// Prepares `sql` under a generated name (once per connection) and returns the name.
    @discardableResult
    public func prepare(_ sql: String) throws(PostgresError) -> String {
        if let name = prepared[sql] { return name }
        let handle = try ready()
        let name = "listd_\(prepared.count + 1)"
        _ = try check(PQprepare(handle, name, sql, 0, nil), sql: sql)
        prepared[sql] = name
        return name
    }

    /// How many statements this connection has prepared.
    public var preparedCount: Int { prepared.count }

    // MARK: Pipelining

    /// The most statements kept in the pipeline before their answers are read:
    /// bounds what the server buffers for a client not yet reading.
    static let maxQueued = 128

    /// Sends a statement whose answer the caller does not need now, without
    /// waiting for it (libpq's pipeline mode).
    ///
    /// Inside a transaction, the statement travels to the server together with
    /// those queued after it; its answer is read by the next ``sync()``, or by
    /// the next call that waits for an answer (``query(_:_:)`` sends its
    /// statement behind the queued ones: one round trip for all), and the
    /// first error among them is thrown there; statements after a failed one
    /// do not run. Outside a transaction, the statement runs at once, so a
    /// failure is never reported to a later, unrelated call.
    /// Statements with parameters are prepared once per connection as by
    /// ``query(_:_:)``; without, they go unprepared (`SAVEPOINT`, `COMMIT`).
    /// `outsideTransaction`: queue it even outside a transaction (a `BEGIN`,
    /// whose failure the next call then reports).
    public func enqueue(_ sql: String, _ parameters: [PostgresValue] = [], outsideTransaction: Bool = false)
        throws(PostgresError)
    {
        guard !queued.isEmpty || transactionState == .inTransaction || (outsideTransaction && transactionState == .idle)
        else {
            if parameters.isEmpty { try execute(sql) } else { try query(sql, parameters) }
            return
        }
        let name = parameters.isEmpty ? nil : try prepare(sql)
        try send(sql, prepared: name, parameters)
        if queued.count >= Self.maxQueued { try sync() }
    }

    /// How many statements wait in the pipeline for their answers to be read.
    public var queuedCount: Int { queued.count }

    /// How many times the pipeline's answers were all read without an error:
    /// a statement queued when it read `n` has succeeded once it reads more than `n`.
    public private(set) var cleanSyncs = 0

    /// Sends one statement into the pipeline (entering pipeline mode first).
    private func send(_ sql: String, prepared name: String?, _ parameters: [PostgresValue]) throws(PostgresError) {
        let handle = try open()
        if queued.isEmpty, PQpipelineStatus(handle) == PQ_PIPELINE_OFF {
            guard PQenterPipelineMode(handle) == 1 else {
                throw PostgresError(
                    .misuse, message: "cannot enter pipeline mode: \(PostgresError.connectionMessage(handle))", sql: sql
                )
            }
        }
        var sent: Int32 = 0
        if let name {
            _ = withParameters(parameters) { count, values, lengths, formats in
                sent = PQsendQueryPrepared(handle, name, count, values, lengths, formats, 0)
                return nil
            }
        } else {
            sent = PQsendQueryParams(handle, sql, 0, nil, nil, nil, nil, 0)
        }
        guard sent == 1 else {
            let error = PostgresError(.connection, message: PostgresError.connectionMessage(handle), sql: sql)
            // The pipeline's state is unknown: the session is not reused.
            close()
            throw error
        }
        queued.append(sql)
    }

    /// Waits for the answers of the statements in the pipeline and leaves
    /// pipeline mode.
    /// - Returns: the last statement's command tag (`COMMIT`, `INSERT 0 1`…),
    ///   `nil` when nothing was queued.
    /// - Throws: the first statement's error (those after it did not run);
    ///   `.connection` when the session broke, which is then closed.
    @discardableResult
    public func sync() throws(PostgresError) -> String? {
        guard !queued.isEmpty else { return nil }
        var tag: String?
        _ = try sync(keepingLast: false, tag: &tag)
        return tag
    }

    private func sync(keepingLast: Bool) throws(PostgresError) -> Rows? {
        var tag: String?
        return try sync(keepingLast: keepingLast, tag: &tag)
    }

    private func sync(keepingLast: Bool, tag: inout String?) throws(PostgresError) -> Rows? {
        let count = queued.count
        var last: Rows?
        try readPipeline(tag: &tag) { index, result, sql in
            guard keepingLast, index == count - 1 else { return false }
            last = Rows(result, sql: sql)
            return true
        }
        return last
    }

    /// Sends the sync point behind the queued statements and reads every
    /// answer, then leaves pipeline mode. `keep` sees each successful answer
    /// before the first failure (the statement's index among those queued,
    /// libpq's result, the statement) and returns whether it took the result
    /// (else it is freed here).
    /// - Throws: the first statement's error (those after it did not run);
    ///   `.connection` when the session broke, which is then closed.
    private func readPipeline(
        tag: inout String?, _ keep: (Int, OpaquePointer, String) -> Bool
    ) throws(PostgresError) {
        let handle = try open()
        let statements = queued
        queued = []
        func broken(_ what: String) -> PostgresError {
            let error = PostgresError(
                .connection, message: "\(what): \(PostgresError.connectionMessage(handle))", sql: statements.last)
            close()
            return error
        }
        guard PQpipelineSync(handle) == 1 else { throw broken("cannot send the pipeline") }
        var firstError: PostgresError?
        // Each statement's answer ends with a NULL; the sync point's answer ends the pipeline.
        var answered = 0
        while true {
            guard let result = PQgetResult(handle) else {
                answered += 1
                if answered > statements.count || PQstatus(handle) != CONNECTION_OK {
                    throw broken("the pipeline ended early")
                }
                continue
            }
            let status = PQresultStatus(result)
            if status == PGRES_PIPELINE_SYNC {
                PQclear(result)
                break
            }
            let sql = answered < statements.count ? statements[answered] : ""
            switch status {
            case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
                tag = PQcmdStatus(result).map { String(cString: $0) }
                if firstError != nil || !keep(answered, result, sql) { PQclear(result) }
            case PGRES_PIPELINE_ABORTED:
                PQclear(result)
            default:
                if firstError == nil { firstError = PostgresError.from(result: result, connection: handle, sql: sql) }
                PQclear(result)
            }
        }
        guard answered == statements.count else { throw broken("the pipeline's answers do not match its statements") }
        guard PQexitPipelineMode(handle) == 1 else { throw broken("cannot leave pipeline mode") }
        if let firstError { throw firstError }
        cleanSyncs += 1
    }

    /// Runs `statements` in one pipeline and hands each one's rows to `each`
    /// (with the statement's index) as soon as they arrive, in order: while
    /// `each` reads one answer the server already works on the next, so a
    /// long read split into statements costs the longer of the two, not the
    /// sum. Statements queued before (``enqueue(_:_:outsideTransaction:)``)
    /// go first in the same pipeline. Every answer is read, whatever `each`
    /// does with them; the first statement's error is thrown once they are
    /// (the statements after it did not run, and `each` saw none of them).
    public func queries(
        _ statements: [(sql: String, parameters: [PostgresValue])], _ each: (Int, Rows) -> Void
    ) throws(PostgresError) {
        guard !statements.isEmpty else { return }
        for statement in statements { _ = try prepare(statement.sql) }
        let earlier = queued.count
        for statement in statements {
            try send(statement.sql, prepared: prepared[statement.sql], statement.parameters)
        }
        var tag: String?
        try readPipeline(tag: &tag) { index, result, sql in
            guard index >= earlier, PQresultStatus(result) == PGRES_TUPLES_OK else { return false }
            each(index - earlier, Rows(result, sql: sql))
            return true
        }
    }

    /// The handle, once the pipeline's answers are read (their first error is thrown here).
    private func ready() throws(PostgresError) -> OpaquePointer {
        if !queued.isEmpty { try sync() }
        return try open()
    }

    // MARK: Transactions

    /// Runs `body` in a transaction: `BEGIN` (with `mode`, e.g. `ISOLATION LEVEL
    /// SERIALIZABLE`), then `COMMIT` if it returns, `ROLLBACK` if it throws.
    @discardableResult
    public func transaction<T>(_ mode: String = "", _ body: () throws(PostgresError) -> T) throws(PostgresError) -> T {
        try execute(mode.isEmpty ? "BEGIN" : "BEGIN \(mode)")
        let value: T
        do {
            value = try body()
        } catch {
            rollbackQuietly()
            throw error
        }
        try execute("COMMIT")
        return value
    }

    /// `ROLLBACK` when in a transaction, ignoring failure (the session may be gone).
    public func rollbackQuietly() {
        _ = try? sync()
        guard handle != nil, transactionState == .inTransaction || transactionState == .failed else { return }
        _ = try? execute("ROLLBACK")
    }

    // MARK: LISTEN / NOTIFY

    /// A notification heard on a channel this session listens to.
    public struct Notification: Sendable, Hashable {
        public var channel: String
        public var payload: String
        /// The server process of the session that sent it.
        public var senderPID: Int32
    }

    /// Starts listening on `channel`.
    public func listen(_ channel: String) throws(PostgresError) {
        try execute("LISTEN \(Self.quoteIdentifier(channel))")
    }

    /// Sends `payload` on `channel` (delivered when the current transaction commits).
    public func notify(_ channel: String, payload: String) throws(PostgresError) {
        try query("SELECT pg_notify($1, $2)", .text(channel), .text(payload))
    }

    /// The notifications that have arrived, waiting up to `timeout` for the first
    /// one when none is buffered. Empty after a timeout.
    ///
    /// - Throws: `.connection` when the session is lost (the caller reconnects).
    public func notifications(waitingUpTo timeout: Duration) throws(PostgresError) -> [Notification] {
        _ = try ready()
        var heard = try drainNotifications()
        guard heard.isEmpty else { return heard }
        let handle = try open()
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(
            clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let ready = poll(&descriptor, 1, max(0, milliseconds))
        if ready < 0, errno != EINTR {
            throw PostgresError(.connection, message: "poll on the connection's socket failed: errno \(errno)")
        }
        if ready > 0 {
            guard PQconsumeInput(handle) == 1 else {
                throw PostgresError(.connection, message: PostgresError.connectionMessage(handle))
            }
            heard = try drainNotifications()
        }
        return heard
    }

    private func drainNotifications() throws(PostgresError) -> [Notification] {
        let handle = try open()
        var heard: [Notification] = []
        while let notify = PQnotifies(handle) {
            let note = notify.pointee
            heard.append(
                Notification(
                    channel: String(cString: note.relname), payload: note.extra.map { String(cString: $0) } ?? "",
                    senderPID: note.be_pid))
            PQfreemem(notify)
        }
        if heard.isEmpty, PQstatus(handle) != CONNECTION_OK {
            throw PostgresError(.connection, message: PostgresError.connectionMessage(handle))
        }
        return heard
    }

    // MARK: Helpers

    /// `"name"`, with embedded quotes doubled: a safe SQL identifier.
    public static func quoteIdentifier(_ name: String) -> String {
        "\"" + name.replacingAll("\"", with: "\"\"") + "\""
    }

    /// `url` (a URL or conninfo) with every secret replaced by `***`, for
    /// logs and messages; see ``ConnectionString``.
    public static func redacted(_ url: String) -> String {
        ConnectionString.redacted(url)
    }

    private func open() throws(PostgresError) -> OpaquePointer {
        guard let handle else { throw PostgresError(.connection, message: "the connection is closed") }
        return handle
    }

    /// Turns libpq's result into a ``Rows`` or the error it carries.
    private func check(_ result: OpaquePointer?, sql: String) throws(PostgresError) -> Rows {
        guard let result else {
            throw PostgresError(.connection, message: PostgresError.connectionMessage(handle), sql: sql)
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return Rows(result, sql: sql)
        default:
            let error = PostgresError.from(result: result, connection: handle, sql: sql)
            PQclear(result)
            throw error
        }
    }

    /// Lays parameters out the way libpq takes them and calls `body`.
    private func withParameters(
        _ parameters: [PostgresValue],
        _ body: (Int32, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) ->
            OpaquePointer?
    ) -> OpaquePointer? {
        let encoded = parameters.map(\.wireBytes)
        let lengths = encoded.map { Int32($0?.count ?? 0) }
        let formats = parameters.map(\.format)
        // Own the bytes for the call's duration, one buffer per parameter.
        let buffers: [UnsafeMutableBufferPointer<UInt8>?] = encoded.map { bytes in
            guard let bytes else { return nil }
            let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(1, bytes.count))
            _ = buffer.initialize(from: bytes)
            return buffer
        }
        defer { for buffer in buffers { buffer?.deallocate() } }
        let pointers: [UnsafePointer<CChar>?] = buffers.map { buffer in
            buffer.flatMap { UnsafeRawPointer($0.baseAddress)?.assumingMemoryBound(to: CChar.self) }
        }
        let result = pointers.withUnsafeBufferPointer { values in
            lengths.withUnsafeBufferPointer { lengths in
                formats.withUnsafeBufferPointer { formats in
                    body(Int32(parameters.count), values.baseAddress, lengths.baseAddress, formats.baseAddress)
                }
            }
        }
        return result
    }
}

@available(*, unavailable)
extension Connection: Sendable {}

extension String {
    fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for character in self {
            if character == target { out += replacement } else { out.append(character) }
        }
        return out
    }
}
