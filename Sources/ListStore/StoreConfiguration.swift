import Foundation

/// How an ``SQLiteStore`` opens its file and which limits it enforces.
public struct StoreConfiguration: Sendable {
    /// The folder of `NNNN_name.sql` migrations applied on open; `nil` skips migrating.
    public var migrationsDirectory: URL?
    /// Sync the WAL on every commit (`true`, the default: an acknowledged write
    /// survives power loss) or only at checkpoints (`false`: `synchronous=NORMAL`).
    public var fullSync: Bool
    /// The largest model, in bytes of canonical JSON.
    public var maxModelBytes: Int
    /// The longest list name, in bytes of UTF-8.
    public var maxNameBytes: Int
    /// The most ops in one `apply`, and the most sections plus items in one
    /// `createList` or `replace`.
    public var maxOpsPerWrite: Int
    /// Most sections and items one write names: a whole-list body (create,
    /// replace) or a batch of ops (an `insertSection` counts its items too).
    public var maxBodyElements: Int
    /// The most items an items query returns in one page.
    public var maxPageSize: Int
    /// The most rows one items query examines (candidate items, and sections
    /// walked), whatever the list's size: a page that reaches it ends there,
    /// maybe short or empty, with a cursor to resume from. Tests lower it.
    public var itemQueryBudget = 10_000
    /// How many versions of history each list keeps (snapshots at versions
    /// `current - historyVersions ... current` can be rebuilt).
    public var historyVersions: Int64
    /// How long history is kept: versions superseded longer ago are pruned.
    public var historyAge: Duration
    /// How long idempotency keys and their answers are kept (API.md, Retries:
    /// at least 24 hours); older records are pruned when the writer is idle.
    public var idempotencyRetention: Duration = .seconds(24 * 3600)
    /// How many reader threads (each with its own connection) serve reads.
    public var readers: Int
    /// The most queued writes one group commit takes.
    public var maxWritesPerCommit: Int
    /// How long a connection waits on another's lock before failing.
    public var busyTimeout: Duration
    /// The spacing of sibling position keys (2...2^40). The default, 2^32,
    /// allows 32 inserts at one spot before a section is renumbered; tests use
    /// a small gap to make renumbering frequent.
    public var positionGap: Int64
    /// The most pages the database file may grow to (`PRAGMA max_page_count` on the writer),
    /// nil for SQLite's default: for testing what a full disk does, without filling one.
    public var maxDatabasePages: Int64?
    /// Bytes the rank indexes of hot lists may take together (about 10 bytes
    /// per item); the least recently used list's index is dropped beyond it; 0 keeps none.
    public var hotListMemory: Int
    /// Other sessions (other processes, other instances) write the same rows:
    /// a hot list's rank index is then trusted only at the list state (epoch
    /// and version) it was tagged with, and brought up to the list's current
    /// version from its history (O(k log n) for k changed entities) before
    /// use, or dropped when that history is gone. `PostgresStore` sets it.
    public var sharedRows = false
    /// Called after each group commit with the number of writes it made
    /// durable together (for metrics); runs on the writer thread, so it must
    /// be quick.
    public var onGroupCommit: (@Sendable (_ writes: Int) -> Void)?
    /// Called when the store finds its own state inconsistent and recovers
    /// (for example a stale rank index: the client gets a reset instead of a
    /// net change); the text says what and where. For the error log.
    public var onInconsistency: (@Sendable (_ detail: String) -> Void)?

    /// Creates a configuration; every parameter has listd's default.
    public init(
        migrationsDirectory: URL? = nil,
        fullSync: Bool = true,
        maxModelBytes: Int = 64 * 1024,
        maxNameBytes: Int = 1024,
        maxOpsPerWrite: Int = 10_000,
        maxPageSize: Int = 1_000,
        historyVersions: Int64 = 10_000,
        historyAge: Duration = .seconds(7 * 24 * 3600),
        readers: Int = 2,
        maxWritesPerCommit: Int = 512,
        busyTimeout: Duration = .seconds(5),
        positionGap: Int64 = 1 << 32,
        maxBodyElements: Int = 250_000,
        hotListMemory: Int = 256 << 20,
        onGroupCommit: (@Sendable (_ writes: Int) -> Void)? = nil
    ) {
        self.migrationsDirectory = migrationsDirectory
        self.fullSync = fullSync
        self.maxModelBytes = maxModelBytes
        self.maxNameBytes = maxNameBytes
        self.maxOpsPerWrite = maxOpsPerWrite
        self.maxPageSize = maxPageSize
        self.historyVersions = historyVersions
        self.historyAge = historyAge
        self.readers = readers
        self.maxWritesPerCommit = maxWritesPerCommit
        self.busyTimeout = busyTimeout
        self.positionGap = positionGap
        self.hotListMemory = hotListMemory
        self.maxBodyElements = maxBodyElements
        self.onGroupCommit = onGroupCommit
    }
}
