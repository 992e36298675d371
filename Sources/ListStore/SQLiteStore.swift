import Foundation
import ListModel
import SchemaMigration
import Storage
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The embedded ``Store``: one SQLite file, one writer thread doing group
/// commits, and a few reader threads.
///
/// Writes from all callers queue up; the writer takes everything queued (up to
/// ``StoreConfiguration/maxWritesPerCommit``), runs each write in its own
/// savepoint inside one `BEGIN IMMEDIATE` transaction, commits once, and only
/// then answers the callers, so one fsync covers many writes. A failing write
/// rolls back to its savepoint and fails alone. Reads run on reader threads
/// with their own connections; WAL lets them proceed beside the writer. No
/// SQLite call runs on Swift's cooperative pool: async methods suspend and
/// are resumed from the store's threads.
///
/// Threads: `store-writer` owns the writer connection and the hot rank
/// indexes; `store-reader-N` serve reads; `store-catchup` computes "changes
/// since V" for clients catching up (``changes(of:since:)``) on CPU time
/// nothing else wants (``BackgroundThreads``: `SCHED_IDLE`), so a crowd of
/// clients back from the background takes the CPU writes leave, not the
/// writes' own, and `catchup-overdue` (nice +10) runs a catch-up that waited
/// (or ran) longer than a quarter second for it; `store-checkpt` runs the WAL checkpoints.
public final class SQLiteStore: Store {
    /// A write waiting for the writer: its work and how to answer its caller.
    struct PendingWrite: GroupCommitJob {
        /// Set when the caller's task is cancelled: the writer skips the write if it has not started it.
        let cancellation: CancellationFlag
        let run: @Sendable (ListWriter) throws(StoreError) -> CompletedWrite
        let fail: @Sendable (StoreError) -> Void
    }

    /// The database file.
    public let path: String
    /// The limits and options the store was opened with.
    public let configuration: StoreConfiguration

    private let writes = WorkQueue<PendingWrite>()
    private let reads = WorkQueue<ReadJob>()
    /// Catch-ups ("changes since V"), on their own threads (``BackgroundThreads``).
    private let catchUps = WorkQueue<ReadJob>(timed: true)
    private let feed = CommitFeed()
    /// The rank indexes the writer publishes for catch-ups on reader threads.
    private let board: IndexBoard
    private let statistics = CommitStatistics()
    private let threadsRunning: Mutex<(count: Int, waiters: [CheckedContinuation<Void, Never>])>
    /// Set once the writer thread has the database open.
    private let checkpointer = Mutex<Checkpointer?>(nil)

    /// Opens (creating when missing) the database at `path`, applies the
    /// migrations of ``StoreConfiguration/migrationsDirectory``, and starts the
    /// writer and reader threads.
    public init(path: String, configuration: StoreConfiguration = StoreConfiguration()) async throws(StoreError) {
        self.path = path
        self.configuration = configuration
        self.board = IndexBoard(budget: configuration.hotListMemory)
        let readers = max(1, configuration.readers)
        // The writer, the checkpointer, the readers and the two catch-up threads.
        self.threadsRunning = Mutex((count: 4 + readers, waiters: []))
        let opened: Result<Void, StoreError> = await withCheckedContinuation { continuation in
            startWriter(ready: { continuation.resume(returning: $0) })
        }
        if case .failure(let error) = opened {
            reads.close(wakingThreads: 0)
            catchUps.close(wakingThreads: 0)
            threadsRunning.withLock { $0.count = 0 }
            throw error
        }
        for index in 0..<readers { startReader(name: "store-reader-\(index)", queue: reads) }
        BackgroundThreads.start(names: ("store-catchup", "catchup-overdue"), queue: catchUps, readerLoop())
    }

    deinit {
        writes.close(wakingThreads: 1)
        reads.close(wakingThreads: max(1, configuration.readers))
        catchUps.close(wakingThreads: 1)
        checkpointer.withLock { $0?.stop() }
    }

    /// Finishes queued work, stops the threads and closes the connections.
    /// Calls made afterwards fail with `closed`.
    public func close() async {
        let readers = max(1, configuration.readers)
        writes.close(wakingThreads: 1)
        reads.close(wakingThreads: readers)
        catchUps.close(wakingThreads: 1)
        checkpointer.withLock { $0?.stop() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = threadsRunning.withLock { state in
                if state.count == 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// How many writes and commits the store has made; the benchmark divides
    /// them by time to show group commit at work.
    public var counters: (writes: Int, commits: Int) {
        (statistics.writes.load(ordering: .relaxed), statistics.commits.load(ordering: .relaxed))
    }

    // MARK: Store

    public func createList(id: Identifier?, name: String, sections: [NewSection], indexes: [[String]])
        async throws(StoreError) -> ListSnapshot
    {
        try await write { writer, now throws(StoreError) in
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
        try await write { writer, now throws(StoreError) in
            try writer.apply(ops, to: list, expectedVersion: expectedVersion, now: now)
        }
    }

    public func replace(
        _ list: Identifier, name: String?, sections: [NewSection], indexes: [[String]], expectedVersion: Int64?
    ) async throws(StoreError) -> WriteResult {
        try await write { writer, now throws(StoreError) in
            try writer.replace(
                list, name: name, sections: sections, indexes: indexes, expectedVersion: expectedVersion, now: now)
        }
    }

    public func deleteList(_ list: Identifier, expectedVersion: Int64?) async throws(StoreError) {
        try await write { writer, _ throws(StoreError) in
            ((), try writer.deleteList(list, expectedVersion: expectedVersion))
        }
    }

    public func snapshots(of list: Identifier, at versions: Set<Int64>) async throws(StoreError)
        -> VersionedSnapshots
    {
        try await read { reader throws(StoreError) in try reader.snapshots(list, at: versions) }
    }

    /// Runs on the catch-up thread from its own snapshot, never on the writer:
    /// the rank index comes from what the writer published (``IndexBoard``),
    /// moved to the snapshot's version (see ``ListReader/changes(of:since:board:)``).
    public func changes(of list: Identifier, since version: Int64) async throws(StoreError) -> ChangeSince {
        let board = self.board
        return try await cancellableRead(on: catchUps, noReader: "no catch-up connection", mayRunTwice: true) {
            reader throws(StoreError) in
            try reader.changes(of: list, since: version, board: board)
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
        try await write { writer, _ throws(StoreError) in
            (try writer.addIndex(path, to: list, progress: progress), [Commit]())
        }
    }

    public func dropIndex(_ path: [String], from list: Identifier) async throws(StoreError) -> Bool {
        try await write { writer, _ throws(StoreError) in
            (try writer.dropIndex(path, from: list), [Commit]())
        }
    }

    public func setTextIndex(
        _ enabled: Bool, on list: Identifier, progress: @escaping @Sendable (Int, Int) -> Void
    ) async throws(StoreError) -> Bool {
        try await write { writer, _ throws(StoreError) in
            (try writer.setTextIndex(enabled, on: list, progress: progress), [Commit]())
        }
    }

    public func idempotencyRecord(caller: String, key: String) async throws(StoreError) -> IdempotencyRecord? {
        try await read { reader throws(StoreError) in try reader.idempotencyRecord(caller: caller, key: key) }
    }

    public func recordIdempotentAnswer(_ claim: IdempotencyClaim, _ answer: StoredAnswer) async throws(StoreError)
        -> IdempotencyRecord?
    {
        try await write(claiming: false) { writer, now throws(StoreError) in
            (try writer.recordIdempotentAnswer(claim, answer, now: now), [Commit]())
        }
    }

    public func onCommit(_ observer: @escaping @Sendable (Commit) -> Void) -> CommitSubscription {
        feed.subscribe(observer)
    }

    /// Runs SQLite's `integrity_check` on a reader connection: the problems found, empty when sound.
    public func integrityCheck() async throws(StoreError) -> [String] {
        try await read { reader throws(StoreError) in
            try reader.db.integrityCheck()
        }
    }

    // MARK: Submitting work

    // Cancellation: a call whose task is cancelled before the writer (or a
    // reader) takes its job up fails with `cancelled` and does nothing. Once
    // the job has started it runs to its end: a write is never torn, and one
    // that committed is answered as committed (its commit is published to
    // followers either way).

    /// Queues `body` for the writer. When the calling task carries an
    /// ``IdempotencyClaim`` (and `claiming` is true), the write claims its
    /// key in the same savepoint (``ListWriter/claiming(_:now:_:)``), so the
    /// write, its record and its kept answer commit or roll back together.
    private func write<T: Sendable>(
        claiming: Bool = true,
        _ body: @escaping @Sendable (ListWriter, Int64) throws(StoreError) -> (T, [Commit])
    ) async throws(StoreError) -> T {
        let claim = claiming ? IdempotencyClaim.current : nil
        let rendering = ClaimAnswer.current
        return try await cancellableSubmission { cancellation, answer in
            writes.enqueue(
                PendingWrite(
                    cancellation: cancellation,
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

    /// How many writes wait for the writer thread (for tests that need a write queued).
    package var queuedWrites: Int { writes.count }

    private func read<T: Sendable>(_ body: @escaping @Sendable (ListReader) throws(StoreError) -> T)
        async throws(StoreError) -> T
    {
        try await cancellableRead(on: reads, noReader: "no reader connection", body)
    }

    static func nowMilliseconds() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded())
    }

    // MARK: Threads

    private func connectionOptions(readOnly: Bool) -> ConnectionOptions {
        ConnectionOptions(
            readOnly: readOnly, busyTimeout: configuration.busyTimeout,
            synchronous: configuration.fullSync ? .full : .normal)
    }

    private func threadExited() {
        let waiters = threadsRunning.withLock { state in
            state.count -= 1
            guard state.count == 0 else { return [CheckedContinuation<Void, Never>]() }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func startWriter(ready: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        let path = self.path
        let configuration = self.configuration
        let options = connectionOptions(readOnly: false)
        let writes = self.writes
        let feed = self.feed
        let board = self.board
        let statistics = self.statistics
        // The thread must not keep the store alive, or deinit would never run.
        let exited: @Sendable () -> Void = { [weak self] in self?.threadExited() }
        let started: @Sendable (Checkpointer) -> Void = { [weak self] checkpointer in
            self?.checkpointer.withLock { $0 = checkpointer }
        }
        let thread = Thread {
            nameCurrentThread("store-writer")
            defer { exited() }
            // One process per file: a second one would serve what it cached and
            // never hear the first one's commits. Held until this thread ends.
            let lock: FileLock?
            do throws(StoreError) {
                lock = try SQLiteStore.lockDatabase(path)
            } catch {
                ready(.failure(error))
                return
            }
            defer { lock?.release() }
            let connection: Connection
            do {
                connection = try Connection(path: path, options: options)
                if let directory = configuration.migrationsDirectory {
                    try Migrator(directory: directory).migrate(connection)
                }
                if let pages = configuration.maxDatabasePages {
                    try connection.execute("PRAGMA max_page_count = \(pages)")
                }
            } catch {
                ready(.failure(StoreError(.storageFailure, "cannot open the database at \(path): \(error)")))
                return
            }
            let writer = ListWriter(db: Database(connection: connection), configuration: configuration)
            do throws(StoreError) {
                // Rows another program changed since listd last committed (migration 0007).
                try writer.db.execute("BEGIN IMMEDIATE")
                try writer.applyPendingText()
                try writer.db.execute("COMMIT")
            } catch {
                try? writer.db.execute("ROLLBACK")
                connection.close()
                ready(.failure(StoreError(.storageFailure, "cannot update the text index of \(path): \(error.detail)")))
                return
            }
            let checkpointer = Checkpointer(path: path, options: options, exited: exited)
            do {
                try connection.handOffCheckpoints(
                    atPages: Checkpointer.pages, backstopPages: Checkpointer.backstopPages, due: { checkpointer.due() })
            } catch {
                // The connection keeps SQLite's own checkpoints.
            }
            started(checkpointer)
            ready(.success(()))
            var loop = WriterLoop(
                dialect: SQLiteCommitDialect(writer: writer), writes: writes,
                group: GroupCommit(feed: feed, board: board, statistics: statistics))
            loop.run()
            connection.close()
        }
        thread.start()
    }

    /// Takes the exclusive lock on `path`'s lock file (`<path>-lock`); `nil`
    /// for an in-memory database, which no other process can open.
    static func lockDatabase(_ path: String) throws(StoreError) -> FileLock? {
        guard !path.isEmpty, path != ":memory:" else { return nil }
        do {
            return try FileLock(path: path + "-lock")
        } catch {
            guard error.errno == nil else {
                throw StoreError(.storageFailure, "cannot lock the database \(path): \(error)")
            }
            let holder = error.holder.map { "process \($0)" } ?? "another process"
            throw StoreError(
                .storageFailure,
                "the database \(path) is in use by \(holder) (it holds \(error.path)): "
                    + "one listd process per SQLite file; stop the other one, or run several instances "
                    + "on one PostgreSQL database with --store postgres://…")
        }
    }

    /// Starts a thread named `name` (at most 15 characters on Linux) taking
    /// reads from `queue` on a connection of its own.
    private func startReader(name: String, queue reads: WorkQueue<ReadJob>) {
        let loop = readerLoop()
        let thread = Thread {
            nameCurrentThread(name)
            loop { reads.take(max: 1, timeout: .distantFuture) }
        }
        thread.start()
    }

    /// A reader thread's body: opens its connection, runs the reads `take`
    /// gives until it gives `nil`, then closes the connection.
    private func readerLoop() -> @Sendable (_ take: () -> [ReadJob]?) -> Void {
        let path = self.path
        let configuration = self.configuration
        let options = connectionOptions(readOnly: true)
        let exited: @Sendable () -> Void = { [weak self] in self?.threadExited() }
        return { take in
            defer { exited() }
            var connection: Connection?
            var openError: StoreError?
            do {
                connection = try Connection(path: path, options: options)
            } catch {
                openError = StoreError(.storageFailure, "cannot open a reader on \(path): \(error)")
            }
            let reader = connection.map { ListReader(db: Database(connection: $0), configuration: configuration) }
            while let jobs = take() {
                for job in jobs { job(reader, openError) }
            }
            connection?.close()
        }
    }
}

/// The writer thread's loop: take queued writes and commit them together
/// (``GroupCommit``); when idle, prune history nobody is writing to.
struct WriterLoop {
    var dialect: SQLiteCommitDialect
    let writes: WorkQueue<SQLiteStore.PendingWrite>
    let group: GroupCommit

    var writer: ListWriter { dialect.writer }

    mutating func run() {
        var pruneDue = true
        var lastIdleLook = ContinuousClock.now
        while let batch = writes.take(
            max: max(1, writer.configuration.maxWritesPerCommit), timeout: .now() + .seconds(1))
        {
            if batch.isEmpty {
                // Idle: spend the time on history nobody is writing to.
                // Also every few seconds when the last look found nothing: history
                // that was not old enough then ages out without another write.
                if pruneDue || ContinuousClock.now - lastIdleLook >= .seconds(5) {
                    lastIdleLook = .now
                    pruneDue = pruneIdle()
                }
                continue
            }
            pruneDue = true
            group.commit(batch, on: &dialect)
        }
    }

    /// One bounded pruning transaction. - Returns: whether more work may remain.
    private func pruneIdle() -> Bool {
        let db = writer.db
        do throws(StoreError) {
            try db.run("BEGIN IMMEDIATE")
            let now = SQLiteStore.nowMilliseconds()
            let more = try writer.pruneIdleStep(now: now)
            let moreKeys = try writer.pruneIdempotencyKeys(now: now)
            try db.execute("COMMIT")
            return more || moreKeys
        } catch {
            try? db.execute("ROLLBACK")
            writer.transactionRolledBack()
            return false
        }
    }
}

@available(*, unavailable)
extension WriterLoop: Sendable {}

/// SQLite's steps of a group commit: `BEGIN IMMEDIATE` takes the write lock
/// up front (a deferred transaction could fail to upgrade midway), and the
/// text index's noted rows are applied just before `COMMIT`, so FTS5 writes
/// a segment or two a commit, not one a write.
struct SQLiteCommitDialect: GroupCommitDialect {
    let writer: ListWriter

    private var db: Database { writer.db }

    func begin(_ batch: [SQLiteStore.PendingWrite]) throws(StoreError) -> [SQLiteStore.PendingWrite] {
        try db.run("BEGIN IMMEDIATE")
        return batch
    }

    // The statements every write runs are prepared once and kept in the
    // connection's cache (`run`, not `execute`, which parses the text on
    // each call: about 3% of the writer thread's time at 6,000 writes/s).
    func openSavepoint() throws(StoreError) {
        try db.run("SAVEPOINT write")
    }

    func releaseSavepoint() -> SavepointRelease {
        do throws(StoreError) {
            try db.run("RELEASE write")
            return .released
        } catch {
            return .writeFailed(error)
        }
    }

    func rollBackToSavepoint() throws(StoreError) {
        try db.execute("ROLLBACK TO write")
        try db.execute("RELEASE write")
    }

    func commit(_ commits: [Commit]) throws(StoreError) {
        try writer.applyPendingText()
        try db.run("COMMIT")
    }

    func rollBack() {
        try? db.execute("ROLLBACK")
    }
}

@available(*, unavailable)
extension SQLiteCommitDialect: Sendable {}
