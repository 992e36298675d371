import Foundation
import ListModel
import ListStore
import Logging
import Postgres
import SchemaMigration
import Synchronization

/// The shared ``Store``: any number of listd instances on one PostgreSQL
/// database serve the same lists, versions and epochs.
///
/// Writes queue up as in ``SQLiteStore`` and a few writer sessions take them
/// in batches. Each session has a lane of its own: a list's writes always go
/// to the same lane (a stable hash of its id, the same in every instance), so
/// two sessions of one instance never wait for each other's row locks.
///
/// One transaction per batch: it locks the rows of the batch's lists that no
/// other session holds (`FOR UPDATE SKIP LOCKED`) and puts the jobs of the
/// others back in its lane for the next batch, so sessions of different
/// instances on one lane write side by side rather than in turns (it waits for
/// a lock only while holding none, so never deadlocks; see
/// ``PostgresCommitDialect``). It runs each write in its own savepoint (a failing
/// write rolls back alone), records and `NOTIFY`s the commits
/// (``CommitChannel``), commits once, and only then answers. The row lock
/// serialises writers of one list across instances, so versions never fork
/// and `If-Match` holds everywhere. Reads run on reader sessions in
/// `REPEATABLE READ` transactions. A ``CommitListener`` hears the other
/// instances' commits and feeds them to ``onCommit(_:)`` beside this
/// instance's own.
public final class PostgresStore: Store {
    struct PendingWrite: GroupCommitJob {
        /// Set when the caller's task is cancelled: a writer session skips the job if it has not started it.
        let cancellation: CancellationFlag
        /// The lists whose rows the write needs locked (none for a new list).
        let lists: [Identifier]
        /// How many batches put this job back because another session held one of its lists.
        var deferrals = 0
        let run: @Sendable (ListWriter) throws(StoreError) -> CompletedWrite
        let fail: @Sendable (StoreError) -> Void
    }

    /// The database URL without its password.
    public let displayName: String
    public let configuration: StoreConfiguration
    /// Writer sessions (each commits its own batches).
    public let writers: Int

    private let url: String
    /// One queue per writer session; see ``lane(of:)``.
    private let lanes: [WorkQueue<PendingWrite>]
    /// Where jobs that lock no list go next (round robin).
    private let nextFreeLane = Atomic<Int>(0)
    private let reads = WorkQueue<ReadJob>()
    private let feed = CommitFeed()
    /// The rank indexes the writer sessions publish for catch-ups on reader sessions.
    private let board: IndexBoard
    /// Keeps this instance's commits of a list in version order on the feed.
    private let publishOrder = PublishOrder()
    private let listener: CommitListener
    private let statistics = CommitStatistics()
    private let indexBuildCount = Atomic<Int>(0)
    private let threadsRunning: Mutex<(count: Int, waiters: [CheckedContinuation<Void, Never>])>
    private let logger: Logger

    /// Connects to `url`, applies the PostgreSQL migrations (the `postgres/`
    /// folder of ``StoreConfiguration/migrationsDirectory``), starts the writer
    /// and reader sessions and the listener.
    public init(
        url: String, configuration: StoreConfiguration = StoreConfiguration(), writers: Int = 2,
        logger: Logger = Logger(label: "listd.store")
    ) async throws(StoreError) {
        self.url = url
        self.displayName = Connection.redacted(url)
        self.configuration = configuration
        self.writers = max(1, writers)
        self.lanes = (0..<self.writers).map { _ in WorkQueue<PendingWrite>() }
        self.board = IndexBoard(budget: configuration.hotListMemory)
        self.logger = logger
        let readers = max(1, configuration.readers)
        self.threadsRunning = Mutex((count: self.writers + readers, waiters: []))
        let feed = self.feed
        self.listener = CommitListener(url: url, logger: logger) { commit in feed.publish([commit]) }

        if let directory = configuration.migrationsDirectory {
            try await Self.migrate(url: url, directory: directory.appendingPathComponent("postgres"))
        }
        var writerPIDs: [Int32] = []
        for index in 0..<self.writers {
            let started: Result<Int32, StoreError> = await withCheckedContinuation { continuation in
                startWriter(index, ready: { continuation.resume(returning: $0) })
            }
            switch started {
            case .success(let pid): writerPIDs.append(pid)
            case .failure(let error):
                await abandon(startedWriters: index)
                throw error
            }
        }
        for pid in writerPIDs { listener.ignoreSender(pid) }
        for index in 0..<readers { startReader(index) }
        do {
            try await listener.start()
        } catch {
            await close()
            throw StoreError(.storageFailure, "cannot listen on \(displayName): \(error)")
        }
    }

    deinit {
        for lane in lanes { lane.close(wakingThreads: 1) }
        reads.close(wakingThreads: max(1, configuration.readers))
        listener.requestStop()
    }

    /// Finishes queued work, stops the listener and the threads, closes the sessions.
    public func close() async {
        for lane in lanes { lane.close(wakingThreads: 1) }
        reads.close(wakingThreads: max(1, configuration.readers))
        await listener.stop()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = threadsRunning.withLock { state in
                if state.count == 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// Writes and commits (transactions) made by this instance.
    public var counters: (writes: Int, commits: Int) {
        (statistics.writes.load(ordering: .relaxed), statistics.commits.load(ordering: .relaxed))
    }

    /// How many rank indexes the writer sessions built by reading a whole list
    /// (rather than catching up from history), for tests and operators.
    public var rankIndexBuilds: Int { indexBuildCount.load(ordering: .relaxed) }

    /// The listener, for operators and tests (its session's pid, reconnects).
    public var commitListener: CommitListener { listener }

    // MARK: Store

    public func createList(id: Identifier?, name: String, sections: [NewSection], indexes: [[String]])
        async throws(StoreError) -> ListSnapshot
    {
        try await write(on: id, locking: []) { writer, now throws(StoreError) in
            try writer.createList(id: id, name: name, sections: sections, indexes: indexes, now: now)
        }
    }

    public func lists(limit: Int, after: Identifier?, in range: ClosedRange<String>?) async throws(StoreError)
        -> [ListSummary]
    {
        guard (1...configuration.maxPageSize).contains(limit) else {
            throw StoreError(.limitExceeded, "limit \(limit) is out of range 1...\(configuration.maxPageSize)")
        }
        return try await read { reader throws(StoreError) in try reader.lists(limit: limit, after: after, in: range) }
    }

    public func snapshot(of list: Identifier) async throws(StoreError) -> ListSnapshot {
        try await read { reader throws(StoreError) in try reader.snapshot(list) }
    }

    public func head(of list: Identifier) async throws(StoreError) -> ListHead {
        try await read { reader throws(StoreError) in try reader.meta(list).head }
    }

    public func apply(_ ops: [ListOperation], to list: Identifier, expectedVersion: Int64?) async throws(StoreError)
        -> WriteResult
    {
        try await write(on: list, locking: [list]) { writer, now throws(StoreError) in
            try writer.apply(ops, to: list, expectedVersion: expectedVersion, now: now)
        }
    }

    public func replace(
        _ list: Identifier, name: String?, sections: [NewSection], indexes: [[String]], expectedVersion: Int64?
    ) async throws(StoreError) -> WriteResult {
        try await write(on: list, locking: [list]) { writer, now throws(StoreError) in
            try writer.replace(
                list, name: name, sections: sections, indexes: indexes, expectedVersion: expectedVersion, now: now)
        }
    }

    public func deleteList(_ list: Identifier, expectedVersion: Int64?) async throws(StoreError) {
        try await write(on: list, locking: [list]) { writer, _ throws(StoreError) in
            ((), try writer.deleteList(list, expectedVersion: expectedVersion))
        }
    }

    public func snapshots(of list: Identifier, at versions: Set<Int64>) async throws(StoreError)
        -> VersionedSnapshots
    {
        try await read { reader throws(StoreError) in try reader.snapshots(list, at: versions) }
    }

    /// Runs on a reader session in a `REPEATABLE READ` snapshot, never on a
    /// writer: the rank index comes from what this instance's writers
    /// published (``IndexBoard``), brought to the snapshot's version from
    /// history (O(k log n)), so the answer costs what changed, not the list's
    /// size, whichever instance wrote it, and no write waits for it.
    public func changes(of list: Identifier, since version: Int64) async throws(StoreError) -> ChangeSince {
        let board = self.board
        return try await read { reader throws(StoreError) in try reader.changes(of: list, since: version, board: board)
        }
    }

    public func viewRows(of list: Identifier, matching conditions: [ItemQuery.Condition]) async throws(StoreError)
        -> ViewRows
    {
        try await read { reader throws(StoreError) in try reader.viewRows(list, matching: conditions) }
    }

    public func touched(_ list: Identifier, since version: Int64) async throws(StoreError) -> TouchedSpan? {
        try await read { reader throws(StoreError) in try reader.touched(list, since: version) }
    }

    public func items(of list: Identifier, query: ItemQuery) async throws(StoreError) -> ItemPage {
        try await read { reader throws(StoreError) in try reader.items(list, query: query) }
    }

    public func indexes(of list: Identifier) async throws(StoreError) -> ListIndexes {
        try await read { reader throws(StoreError) in try reader.indexes(list) }
    }

    public func addIndex(_ path: [String], to list: Identifier, progress: @escaping @Sendable (Int, Int) -> Void)
        async throws(StoreError) -> Bool
    {
        try await write(on: list, locking: [list]) { writer, _ throws(StoreError) in
            (try writer.addIndex(path, to: list, progress: progress), [Commit]())
        }
    }

    public func dropIndex(_ path: [String], from list: Identifier) async throws(StoreError) -> Bool {
        try await write(on: list, locking: [list]) { writer, _ throws(StoreError) in
            (try writer.dropIndex(path, from: list), [Commit]())
        }
    }

    public func setTextIndex(
        _ enabled: Bool, on list: Identifier, progress: @escaping @Sendable (Int, Int) -> Void
    ) async throws(StoreError) -> Bool {
        try await write(on: list, locking: [list]) { writer, _ throws(StoreError) in
            (try writer.setTextIndex(enabled, on: list, progress: progress), [Commit]())
        }
    }

    public func idempotencyRecord(caller: String, key: String) async throws(StoreError) -> IdempotencyRecord? {
        try await read { reader throws(StoreError) in try reader.idempotencyRecord(caller: caller, key: key) }
    }

    public func recordIdempotentAnswer(_ claim: IdempotencyClaim, _ answer: StoredAnswer) async throws(StoreError)
        -> IdempotencyRecord?
    {
        try await write(on: nil, locking: [], claiming: false) { writer, now throws(StoreError) in
            (try writer.recordIdempotentAnswer(claim, answer, now: now), [Commit]())
        }
    }

    public func onCommit(_ observer: @escaping @Sendable (Commit) -> Void) -> CommitSubscription {
        feed.subscribe(observer)
    }

    // MARK: Submitting work

    // Cancellation, as in SQLiteStore: a call whose task is cancelled before a
    // writer or reader session takes its job up fails with `cancelled` and
    // does nothing. Once a session has started the job it runs to its end: a
    // write is never torn, and one that committed is answered as committed
    // (its commit is recorded, notified and published either way).

    /// Queues `body` for the writer session of `list`'s lane (see ``lane(of:)``),
    /// which locks `lists` first; `list` is `nil` for a new list without an id.
    ///
    /// When the calling task carries an ``IdempotencyClaim`` (and `claiming`
    /// is true), the write claims its key in the same savepoint
    /// (``ListWriter/claiming(_:now:_:)``): a session claiming a key another
    /// holds uncommitted waits for it, then fails with `idempotencyKeyUsed`,
    /// its savepoint rolled back so nothing is applied.
    private func write<T: Sendable>(
        on list: Identifier?, locking lists: [Identifier], claiming: Bool = true,
        _ body: @escaping @Sendable (ListWriter, Int64) throws(StoreError) -> (T, [Commit])
    ) async throws(StoreError) -> T {
        let claim = claiming ? IdempotencyClaim.current : nil
        let rendering = ClaimAnswer.current
        return try await cancellableSubmission { cancellation, answer in
            lanes[lane(of: list)].enqueue(
                PendingWrite(
                    cancellation: cancellation, lists: lists,
                    run: { writer throws(StoreError) in
                        let (value, commits, settle) = try writer.claiming(
                            claim, rendering: rendering, now: Self.nowMilliseconds(), body)
                        return CompletedWrite(
                            commits: commits,
                            succeed: {
                                settle()
                                answer(.success(value))
                            })
                    },
                    fail: { answer(.failure($0)) }))
        }
    }

    /// How many jobs (writes, index declarations) wait for a writer session (for tests that need one queued).
    package var queuedWrites: Int { lanes.reduce(0) { $0 + $1.count } }

    /// How many reads wait for a reader session (for tests that need one queued).
    package var queuedReads: Int { reads.count }

    /// The writer session that takes the jobs of `list` (``lane(of:among:)``).
    /// The list's hot rank index lives in that session, which publishes it for
    /// the reader sessions' net-change reads (``IndexBoard``). A job without a
    /// list takes turns.
    func lane(of list: Identifier?) -> Int {
        guard let list else {
            return nextFreeLane.add(1, ordering: .relaxed).newValue % writers
        }
        return Self.lane(of: list, among: writers)
    }

    /// The lane of `list` among `lanes`, from a hash that is the same in every
    /// process (64-bit FNV-1a of the id's UTF-8), so instances with the same
    /// number of writer sessions agree, and batches of different lanes lock
    /// disjoint lists.
    static func lane(of list: Identifier, among lanes: Int) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in list.rawValue.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return Int(hash % UInt64(max(1, lanes)))
    }

    private func read<T: Sendable>(_ body: @escaping @Sendable (ListReader) throws(StoreError) -> T)
        async throws(StoreError) -> T
    {
        try await cancellableRead(on: reads, noReader: "no reader session", body)
    }

    static func nowMilliseconds() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded())
    }

    // MARK: Threads

    private static func migrate(url: String, directory: URL) async throws(StoreError) {
        let outcome: StoreError? = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                do {
                    let connection = try Connection(url: url)
                    defer { connection.close() }
                    try Migrator(directory: directory).migrate(connection)
                    continuation.resume(returning: nil)
                } catch {
                    continuation.resume(
                        returning: StoreError(
                            .storageFailure, "cannot open the database at \(Connection.redacted(url)): \(error)"))
                }
            }
        }
        if let outcome { throw outcome }
    }

    /// Stops the writers already started when writer `startedWriters` failed
    /// to connect (that one exits by itself; later writers and the readers never started).
    private func abandon(startedWriters: Int) async {
        for lane in lanes { lane.close(wakingThreads: 1) }
        reads.close(wakingThreads: 0)
        threadsRunning.withLock { $0.count -= (writers - startedWriters - 1) + max(1, configuration.readers) }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = threadsRunning.withLock { state in
                if state.count <= 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    private func threadExited() {
        let waiters = threadsRunning.withLock { state in
            state.count -= 1
            guard state.count <= 0 else { return [CheckedContinuation<Void, Never>]() }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func startWriter(_ index: Int, ready: @escaping @Sendable (Result<Int32, StoreError>) -> Void) {
        let url = self.url
        let displayName = self.displayName
        let configuration = self.configuration
        let writes = self.lanes[index]
        let feed = self.feed
        let board = self.board
        let publishOrder = self.publishOrder
        let logger = self.logger
        let exited: @Sendable () -> Void = { [weak self] in self?.threadExited() }
        let listener = self.listener
        let statistics = self.statistics
        let built: @Sendable (Int) -> Void = { [weak self] builds in
            self?.indexBuildCount.add(builds, ordering: .relaxed)
        }
        // Each writer session keeps rank indexes of its own: they share the budget.
        let perWriter = {
            var perWriter = configuration
            perWriter.hotListMemory = configuration.hotListMemory / writers
            return perWriter
        }()
        let thread = Thread {
            nameCurrentThread("pg-writer-\(index)")
            defer { exited() }
            let connection: Connection
            do {
                connection = try PostgresWriterLoop.connect(url)
            } catch {
                ready(.failure(StoreError(.storageFailure, "cannot connect to \(displayName): \(error)")))
                return
            }
            ready(.success(connection.backendPID))
            var loop = PostgresWriterLoop(
                url: url, connection: connection, configuration: perWriter, writes: writes,
                group: GroupCommit(feed: feed, board: board, statistics: statistics), publishOrder: publishOrder,
                built: built, reconnected: { listener.ignoreSender($0) }, logger: logger)
            loop.run()
        }
        thread.start()
    }

    private func startReader(_ index: Int) {
        let url = self.url
        let displayName = self.displayName
        let configuration = self.configuration
        let reads = self.reads
        let exited: @Sendable () -> Void = { [weak self] in self?.threadExited() }
        let thread = Thread {
            nameCurrentThread("pg-reader-\(index)")
            defer { exited() }
            var connection: Connection?
            var reader: ListReader?
            while let jobs = reads.take(max: 1, timeout: .distantFuture) {
                if connection?.isOpen != true {
                    connection?.close()
                    connection = nil
                    reader = nil
                }
                var openError: StoreError?
                if connection == nil {
                    do {
                        let opened = try Connection(url: url)
                        connection = opened
                        reader = ListReader(
                            db: Database(session: PostgresSession(opened)), configuration: configuration)
                    } catch {
                        openError = StoreError(.storageFailure, "cannot open a reader on \(displayName): \(error)")
                    }
                }
                for job in jobs { job(reader, openError) }
            }
            connection?.close()
        }
        thread.start()
    }
}

/// A writer session's loop: take queued jobs and commit them together
/// (``GroupCommit``, with ``PostgresCommitDialect``); when idle, prune the
/// history of lists nobody writes to and old commit records; reconnect a
/// session the server dropped.
struct PostgresWriterLoop {
    let url: String
    let configuration: StoreConfiguration
    let writes: WorkQueue<PostgresStore.PendingWrite>
    let group: GroupCommit
    /// The session, its writer, and its steps of a group commit.
    var dialect: PostgresCommitDialect
    /// Told the server process of a new session, so the listener skips its commits.
    let reconnected: @Sendable (Int32) -> Void
    let logger: Logger

    var connection: Connection { dialect.connection }
    var writer: ListWriter { dialect.writer }

    init(
        url: String, connection: Connection, configuration: StoreConfiguration,
        writes: WorkQueue<PostgresStore.PendingWrite>, group: GroupCommit, publishOrder: PublishOrder,
        built: @escaping @Sendable (Int) -> Void, reconnected: @escaping @Sendable (Int32) -> Void, logger: Logger
    ) {
        // Other writer sessions and other instances change the same rows: the
        // rank indexes are trusted only at the version they were tagged with and
        // caught up from history before use (StoreConfiguration.sharedRows).
        var configuration = configuration
        configuration.sharedRows = true
        self.url = url
        self.configuration = configuration
        self.writes = writes
        self.group = group
        self.dialect = PostgresCommitDialect(
            url: url, connection: connection,
            writer: ListWriter(db: Database(session: PostgresSession(connection)), configuration: configuration),
            writes: writes, publishOrder: publishOrder, built: built, logger: logger)
        self.reconnected = reconnected
        self.logger = logger
    }

    mutating func run() {
        var lastPrune = ContinuousClock.now
        var pruneDue = true
        var lastIdleLook = ContinuousClock.now
        while let batch = writes.take(
            max: max(1, configuration.maxWritesPerCommit), timeout: .now() + .seconds(1))
        {
            if !connection.isOpen { reconnect() }
            guard !batch.isEmpty else {
                // Idle: spend the time on history nobody is writing to, as SQLiteStore does.
                // Also every few seconds when the last look found nothing: history
                // that was not old enough then ages out without another write.
                if pruneDue || ContinuousClock.now - lastIdleLook >= .seconds(5) {
                    lastIdleLook = .now
                    pruneDue = pruneIdleLists()
                }
                pruneCommitRecordsIfDue(&lastPrune)
                continue
            }
            pruneDue = true
            // Also between groups: a writer never idle for a second still
            // removes the commit records it adds.
            pruneCommitRecordsIfDue(&lastPrune)
            // Jobs whose callers left while queued are skipped before any
            // statement, so they lock no rows; one cancelled after this is
            // skipped just before it starts.
            let live = batch.filter { job in
                guard job.cancellation.isCancelled else { return true }
                job.fail(.cancelledBeforeStart)
                return false
            }
            if !live.isEmpty { group.commit(live, on: &dialect) }
        }
        connection.close()
    }

    /// Every minute (every second while a full batch was removed), one
    /// bounded deletion of commit records older than an hour: a listener
    /// replays at most the few seconds before it lost its session.
    private func pruneCommitRecordsIfDue(_ lastPrune: inout ContinuousClock.Instant) {
        let now = ContinuousClock.now
        guard now - lastPrune >= .seconds(60) else { return }
        lastPrune = now
        do throws(PostgresError) {
            let limit = 2_000
            let serverNow = try CommitChannel.serverNow(on: connection)
            if try CommitChannel.prune(before: serverNow - 3_600_000, limit: limit, on: connection) == limit {
                lastPrune = now - .seconds(59)
            }
        } catch {
            logger.warning("cannot prune old commit records", metadata: ["error": "\(error)"])
        }
    }

    /// One bounded pruning transaction over lists nobody writes to. Their rows
    /// are locked in id order and without waiting (`SKIP LOCKED`): a list a
    /// writer holds is left for later, and no lock order can deadlock.
    /// - Returns: whether more work may remain.
    private func pruneIdleLists() -> Bool {
        do throws(StoreError) {
            let now = PostgresStore.nowMilliseconds()
            try run("BEGIN ISOLATION LEVEL READ COMMITTED")
            let moreKeys = try writer.pruneIdempotencyKeys(now: now)
            let candidates = try writer.idleCandidates(now: now)
            guard !candidates.isEmpty else {
                try run("COMMIT")
                return moreKeys
            }
            let locked: [Identifier]
            do throws(PostgresError) {
                locked = try connection.query(
                    "SELECT id FROM lists WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE SKIP LOCKED",
                    .text("{" + candidates.map(\.rawValue).joined(separator: ",") + "}")
                ).map { row throws(PostgresError) in try row.text(0) }.compactMap { Identifier($0) }
            } catch {
                throw StoreError.postgres(error)
            }
            let more = try writer.pruneIdle(locked, now: now)
            try run("COMMIT")
            return more || moreKeys || locked.count < candidates.count
        } catch {
            connection.rollbackQuietly()
            writer.transactionRolledBack()
            logger.warning("cannot prune the history of idle lists", metadata: ["error": "\(error)"])
            return false
        }
    }

    private func run(_ sql: String) throws(StoreError) {
        do { try connection.execute(sql) } catch { throw StoreError.postgres(error) }
    }

    /// A writer session: plans its statements once, generically
    /// (`plan_cache_mode`). Its statements are point reads and writes by key
    /// and short spans of one list's history, whose best plan is the same
    /// whatever the values; a plan made for the values instead follows the
    /// table's statistics, which know nothing of a list created since the last
    /// `ANALYZE`: PostgreSQL then guessed one row for it and chose indexes that
    /// walk all its items, so each write on a new 10,000-item list cost
    /// milliseconds (seen: 300 writes/s, then 700 with this).
    static func connect(_ url: String) throws(PostgresError) -> Connection {
        let connection = try Connection(url: url)
        do throws(PostgresError) {
            try connection.execute("SET plan_cache_mode = force_generic_plan")
        } catch {
            connection.close()
            throw error
        }
        return connection
    }

    private mutating func reconnect() {
        do {
            let fresh = try Self.connect(url)
            connection.close()
            dialect.reconnected(
                fresh, writer: ListWriter(db: Database(session: PostgresSession(fresh)), configuration: configuration))
            reconnected(fresh.backendPID)
        } catch {
            logger.warning("cannot reconnect a writer session", metadata: ["error": "\(error)"])
        }
    }
}

@available(*, unavailable)
extension PostgresWriterLoop: Sendable {}

/// PostgreSQL's steps of a group commit, on one writer session.
///
/// The batch's transaction begins by locking the rows of its lists that no
/// other session holds (``lock(_:)``); the jobs of the others go back to the
/// lane. Before `COMMIT`, the commits are registered with the
/// ``PublishOrder`` and recorded and notified (``CommitChannel``); after it,
/// the feed hears them only once this instance's earlier commits of the same
/// lists are published.
///
/// Statements whose answers the writer does not read (`SAVEPOINT`, the
/// write's `INSERT`s and `UPDATE`s, `RELEASE`, the commit records, `NOTIFY`,
/// `COMMIT`) go through the session's pipeline (``Connection/enqueue(_:_:)``),
/// so they travel with the next statement that reads: a write costs a round
/// trip per read it makes. A write whose last statement wrote waits for its
/// `RELEASE` (proving all its statements succeeded) before the next starts;
/// one whose last statement read needs no proof, and its `RELEASE` goes with
/// the next write's first read (should that fail, the batch is not kept).
struct PostgresCommitDialect: GroupCommitDialect {
    /// The database, for a session of its own that checks a commit whose answer was lost.
    let url: String
    private(set) var connection: Connection
    private(set) var writer: ListWriter
    /// The lane, which gets back the jobs of lists another session holds.
    let writes: WorkQueue<PostgresStore.PendingWrite>
    let publishOrder: PublishOrder
    /// Told how many rank indexes were built from the rows since last told.
    let built: @Sendable (Int) -> Void
    /// The writer's index builds already told.
    private var buildsTold = 0
    /// ``Connection/cleanSyncs`` when the last write's `RELEASE` was queued unread (in this batch).
    private var releaseUnconfirmed: Int?
    /// The batch transaction's id (`pg_current_xact_id()`), read with the lock
    /// query at no extra round trip: what tells, on a new session, whether a
    /// COMMIT whose answer was lost committed.
    private var transaction: String?
    let logger: Logger

    init(
        url: String, connection: Connection, writer: ListWriter, writes: WorkQueue<PostgresStore.PendingWrite>,
        publishOrder: PublishOrder, built: @escaping @Sendable (Int) -> Void, logger: Logger
    ) {
        self.url = url
        self.connection = connection
        self.writer = writer
        self.writes = writes
        self.publishOrder = publishOrder
        self.built = built
        self.logger = logger
    }

    /// A new session replaces one the server dropped (closed by the caller).
    mutating func reconnected(_ fresh: Connection, writer: ListWriter) {
        connection = fresh
        self.writer = writer
        buildsTold = 0
    }

    /// Tells the store of the rank indexes built since last told (before answering, so a caller sees them counted).
    mutating func reportBuilds() {
        guard writer.indexBuilds != buildsTold else { return }
        built(writer.indexBuilds - buildsTold)
        buildsTold = writer.indexBuilds
    }

    // MARK: GroupCommitDialect

    mutating func begin(_ taken: [PostgresStore.PendingWrite]) throws(StoreError) -> [PostgresStore.PendingWrite] {
        releaseUnconfirmed = nil
        transaction = nil
        do throws(PostgresError) {
            let (run, deferred) = try lock(taken)
            writes.putBack(deferred)
            return run
        } catch {
            connection.rollbackQuietly()
            throw StoreError(.storageFailure, "the commit failed, nothing was written: \(error)")
        }
    }

    func openSavepoint() throws(StoreError) {
        do throws(PostgresError) {
            try connection.enqueue("SAVEPOINT write")
        } catch {
            throw Self.batchFailure(error)
        }
    }

    /// The write's own statements end here: their first failure is this write's.
    mutating func releaseSavepoint() -> SavepointRelease {
        do throws(PostgresError) {
            if connection.queuedCount == 0 {
                // Its last statement read an answer, so all of them succeeded: its
                // RELEASE travels with the next write's first read (a round trip less).
                try connection.enqueue("RELEASE write")
                releaseUnconfirmed = connection.cleanSyncs
            } else {
                try connection.enqueue("RELEASE write")
                try connection.sync()
            }
            return .released
        } catch {
            if error.isConnectionFailure || !connection.isOpen {
                return .batchBroken(Self.batchFailure(error))
            }
            return .writeFailed(StoreError.postgres(error))
        }
    }

    func batchBroken(byFailure failure: StoreError) -> StoreError? {
        guard let queuedAt = releaseUnconfirmed, connection.cleanSyncs == queuedAt else { return nil }
        // The failure may be the previous write's RELEASE, whose write is
        // already counted as succeeded: nothing in this batch is kept.
        return Self.batchFailure(
            PostgresError(.server, message: "a write failed before the previous one was confirmed: \(failure)"))
    }

    func rollBackToSavepoint() throws(StoreError) {
        do throws(PostgresError) {
            // Answers still in the pipeline belong to the failed write.
            _ = try? connection.sync()
            try connection.execute("ROLLBACK TO write")
            try connection.execute("RELEASE write")
        } catch {
            throw Self.batchFailure(error)
        }
    }

    mutating func commit(_ commits: [Commit]) throws(StoreError) {
        // Registered before COMMIT: a session that takes one of these lists'
        // row locks after it publishes these commits only after them.
        publishOrder.register(commits)
        var commitQueued = false
        do throws(PostgresError) {
            if transaction == nil, !commits.isEmpty {
                // A batch that took no lock query (or began again after waiting): a round trip for its id.
                let id = try connection.query("SELECT pg_current_xact_id()::text")
                transaction = id.count == 1 ? try id[0].text(0) : nil
            }
            try CommitChannel.publish(commits, on: connection)
            try connection.enqueue("COMMIT")
            commitQueued = true
            let tag = try connection.sync()
            if tag != "COMMIT" {
                throw PostgresError(
                    .server, message: "the transaction ended with \(tag ?? "no answer") instead of COMMIT")
            }
        } catch {
            // The session broke with COMMIT sent: the server may have committed
            // before the answer was lost (or before it stopped). Ask it again on
            // a session of its own rather than tell the writers nothing was written.
            if commitQueued, !connection.isOpen, !commits.isEmpty {
                let outcome =
                    transaction.map { Self.outcome(ofTransaction: $0, url: url, lostSession: connection.backendPID) }
                    ?? .unknown("the transaction's id was not read")
                switch outcome {
                case .committed:
                    logger.warning(
                        "the answer to COMMIT was lost, and the commit was found: the writes are answered as applied",
                        metadata: ["error": "\(error)"])
                    return
                case .rolledBack:
                    break
                case .unknown(let why):
                    publishOrder.unregister(commits)
                    throw StoreError(
                        .commitOutcomeUnknown,
                        "the connection to PostgreSQL was lost while the write committed (\(error)), and whether it "
                            + "was applied cannot be checked (\(why)). Retry with the same Idempotency-Key: its "
                            + "answer is replayed if it was applied; a write without one may be applied twice.")
                }
            }
            publishOrder.unregister(commits)
            throw Self.batchFailure(error)
        }
    }

    enum CommitOutcome: Equatable {
        case committed
        case rolledBack
        case unknown(String)
    }

    /// Whether transaction `id` (its `pg_current_xact_id()`) committed, asked
    /// on a new session with `pg_xact_status`. The lost session's server
    /// process, if it still runs, is ended first, so its transaction has ended
    /// one way or the other.
    ///
    /// Not whether the batch's `commits` rows are there: once the lost
    /// transaction has rolled back, another instance may commit the same
    /// list's same version, and its row would answer for this one (two writes
    /// acknowledged with one version; the torture harness found it).
    static func outcome(ofTransaction id: String, url: String, lostSession: Int32) -> CommitOutcome {
        do throws(PostgresError) {
            let check = try Connection(url: url, settings: ["connect_timeout": "5"])
            defer { check.close() }
            if lostSession != 0 {
                _ = try check.query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1::int4",
                    .integer(Int64(lostSession)))
                // Wait (bounded) until it is gone: its transaction is over then.
                for _ in 0..<100 {
                    let alive = try check.query(
                        "SELECT 1 FROM pg_stat_activity WHERE pid = $1::int4", .integer(Int64(lostSession)))
                    if alive.count == 0 { break }
                    usleep(20_000)
                }
            }
            let answer = try check.query("SELECT pg_xact_status($1::xid8)", .text(id))
            let status = answer.count == 1 ? try answer[0].optionalText(0) : nil
            switch status {
            case "committed": return .committed
            case "aborted": return .rolledBack
            default: return .unknown("transaction \(id) is \(status ?? "too old for PostgreSQL to tell")")
            }
        } catch {
            return .unknown("\(error)")
        }
    }

    func rollBack() {
        connection.rollbackQuietly()
    }

    /// Publish in this instance's version order: a cache fed by the feed is
    /// never behind a client's own acknowledged write, nor goes backwards.
    func willPublish(_ commits: [Commit]) {
        if publishOrder.waitForEarlier(commits) {
            logger.warning(
                "published commits before an earlier one of this instance (waited \(publishOrder.patience) s)")
        }
    }

    mutating func didPublish(_ commits: [Commit]) {
        publishOrder.unregister(commits)
        reportBuilds()
    }

    /// A failure of the session that breaks the batch: ``GroupCommit`` fails
    /// every write with `the commit failed, nothing was written: <error>`.
    private static func batchFailure(_ error: PostgresError) -> StoreError {
        StoreError(.storageFailure, "\(error)")
    }

    // MARK: Locking the batch's lists

    /// After this many deferrals a job's lists are waited for (see ``lock(_:)``).
    static let patientDeferrals = 3

    /// Begins the batch's transaction and locks the rows of its lists that no
    /// other session holds (`FOR UPDATE SKIP LOCKED`): the jobs whose lists
    /// are all locked (or do not exist: nobody can hold them) run now; the
    /// others, and every later job of the same lists, are deferred (put back
    /// first in the lane), so two sessions on one lane, here or in another
    /// instance, write their lists side by side instead of one batch waiting
    /// for the other's commit. A list's jobs keep their order.
    ///
    /// A session waits for a lock only while it holds none, so no wait can
    /// deadlock: when every job waits for another session, or the first has
    /// been deferred ``patientDeferrals`` times, its lists are locked first,
    /// waiting, in id order.
    /// - Returns: the jobs to run and those to put back.
    private mutating func lock(_ batch: [PostgresStore.PendingWrite]) throws(PostgresError)
        -> (run: [PostgresStore.PendingWrite], deferred: [PostgresStore.PendingWrite])
    {
        func array(_ lists: some Sequence<Identifier>) -> PostgresValue {
            .text("{" + lists.map(\.rawValue).sorted().joined(separator: ",") + "}")
        }
        try connection.enqueue("BEGIN ISOLATION LEVEL READ COMMITTED", outsideTransaction: true)
        let wanted = Set(batch.flatMap(\.lists))
        guard !wanted.isEmpty else { return (batch, []) }
        var held = Set<Identifier>()
        if let first = batch.first, first.deferrals >= Self.patientDeferrals, !first.lists.isEmpty {
            try connection.query(
                "SELECT id FROM lists WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE", array(first.lists))
            held.formUnion(first.lists)
        }
        // The rows of the lists someone else holds; the others are now locked (or
        // missing). The first row is the transaction's id, with no list.
        let rows = try connection.query(
            """
            WITH free AS MATERIALIZED (
                SELECT id FROM lists WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE SKIP LOCKED)
            SELECT 0, pg_current_xact_id()::text
            UNION ALL
            SELECT 1, id FROM lists WHERE id = ANY($1::text[]) AND id NOT IN (SELECT id FROM free)
            ORDER BY 1
            """, array(wanted.subtracting(held)))
        var busy = Set<Identifier>()
        for index in 0..<rows.count {
            let row = rows[index]
            if try row.int64(0) == 0 {
                transaction = try row.text(1)
            } else if let id = Identifier(try row.text(1)) {
                busy.insert(id)
            }
        }
        var split = Self.split(batch, blocked: busy)
        if split.run.isEmpty, let first = split.deferred.first {
            // Everything waits for others: wait for the first job's lists, holding no
            // other (only a job of several lists can leave some locked here).
            if busy.count < wanted.count {
                try connection.execute("ROLLBACK")
                try connection.enqueue("BEGIN ISOLATION LEVEL READ COMMITTED", outsideTransaction: true)
                transaction = nil  // another transaction: its id is read before COMMIT
            }
            try connection.query(
                "SELECT id FROM lists WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE", array(first.lists))
            split = Self.split(batch, blocked: wanted.subtracting(first.lists))
        }
        return split
    }

    /// `batch` split into the jobs that touch no `blocked` list (nor a list of
    /// an earlier deferred job) and the others, in order, each counted deferred once more.
    static func split(_ batch: [PostgresStore.PendingWrite], blocked: Set<Identifier>)
        -> (run: [PostgresStore.PendingWrite], deferred: [PostgresStore.PendingWrite])
    {
        var blocked = blocked
        var run: [PostgresStore.PendingWrite] = []
        var deferred: [PostgresStore.PendingWrite] = []
        for var job in batch {
            if job.lists.contains(where: blocked.contains) {
                blocked.formUnion(job.lists)
                job.deferrals += 1
                deferred.append(job)
            } else {
                run.append(job)
            }
        }
        return (run, deferred)
    }
}

@available(*, unavailable)
extension PostgresCommitDialect: Sendable {}
