/// How hard SQLite works to make a commit durable (`PRAGMA synchronous`).
///
/// In WAL mode `full` syncs the log on every commit, so an acknowledged commit
/// survives power loss; `normal` syncs only at checkpoints, so the last
/// commits before a power cut may be lost (never corrupted).
public enum Synchronous: String, Sendable, CaseIterable {
    /// No syncs at all: fast, and unsafe on power loss.
    case off
    /// Sync at checkpoints only (WAL): durable against a process crash, not power loss.
    case normal
    /// Sync the log on every commit: durable against power loss. The default.
    case full
    /// Like `full`, and also syncs the directory after unlinking a rollback journal.
    case extra

    /// The value `PRAGMA synchronous` reports for this level.
    var pragmaNumber: Int64 {
        switch self {
        case .off: 0
        case .normal: 1
        case .full: 2
        case .extra: 3
        }
    }
}

/// How a `Connection` opens its database and configures it.
///
/// The defaults favour durability and safety: WAL so readers never block the
/// writer, `synchronous=FULL` so an acknowledged commit is on disk, foreign
/// keys enforced, and a busy timeout so short lock waits do not fail.
public struct ConnectionOptions: Sendable {
    /// Open read-only (`SQLITE_OPEN_READONLY`). Such a connection never changes
    /// the journal mode; it reads whatever mode the file is in.
    public var readOnly: Bool
    /// Read the file as it is on disk (`immutable=1`): read-only, and no `-wal` or `-shm`
    /// file is created. Only for a file no other connection writes and whose log is
    /// checkpointed (no `-wal` file), such as `listd migrate --dry-run` reading a closed database.
    public var immutable: Bool = false
    /// Create the file when it is missing. Ignored when `readOnly`.
    public var create: Bool
    /// How long a statement waits for another connection's lock before it
    /// fails with `SQLITE_BUSY`.
    public var busyTimeout: Duration
    /// `PRAGMA synchronous`; see `Synchronous`.
    public var synchronous: Synchronous
    /// Switch the file to write-ahead logging and verify that it took.
    /// In-memory databases cannot use WAL and keep their `memory` journal.
    public var journalModeWAL: Bool
    /// `PRAGMA foreign_keys=ON`: SQLite leaves foreign keys unenforced by default.
    public var foreignKeys: Bool
    /// How many prepared statements the connection keeps, least recently used
    /// evicted first. Zero disables the cache.
    public var statementCacheCapacity: Int
    /// The page cache size in KiB (`PRAGMA cache_size=-N`). SQLite's default
    /// is 2,000 KiB; a little more keeps the hot part of a list table in memory.
    public var cacheSizeKiB: Int
    /// After a checkpoint, truncate the WAL file to at most this many bytes
    /// (`PRAGMA journal_size_limit`). Without it the file stays at its
    /// high-water mark forever after a burst of writes.
    public var journalSizeLimit: Int

    /// Options with the given values; every parameter has the safe default.
    public init(
        readOnly: Bool = false,
        create: Bool = true,
        busyTimeout: Duration = .seconds(5),
        synchronous: Synchronous = .full,
        journalModeWAL: Bool = true,
        foreignKeys: Bool = true,
        statementCacheCapacity: Int = 64,
        cacheSizeKiB: Int = 8192,
        journalSizeLimit: Int = 64 << 20
    ) {
        self.readOnly = readOnly
        self.create = create
        self.busyTimeout = busyTimeout
        self.synchronous = synchronous
        self.journalModeWAL = journalModeWAL
        self.foreignKeys = foreignKeys
        self.statementCacheCapacity = statementCacheCapacity
        self.cacheSizeKiB = cacheSizeKiB
        self.journalSizeLimit = journalSizeLimit
    }
}

/// How `BEGIN` takes its locks.
public enum TransactionKind: String, Sendable, CaseIterable {
    /// Takes no lock until the first read or write; a read transaction that
    /// later writes may fail with `SQLITE_BUSY` if another writer got there first.
    case deferred = "DEFERRED"
    /// Takes the write lock at once (waiting up to the busy timeout): use it
    /// for every transaction that will write.
    case immediate = "IMMEDIATE"
    /// Like `immediate` in WAL mode; in other modes also keeps readers out.
    case exclusive = "EXCLUSIVE"
}

/// How a WAL checkpoint copies the log back into the database file.
public enum CheckpointMode: Sendable, CaseIterable {
    /// Copy what it can without waiting for readers or writers.
    case passive
    /// Wait for writers, then copy everything; readers keep going.
    case full
    /// Like `full`, then wait for readers so the next writer restarts the log.
    case restart
    /// Like `restart`, then truncate the log file to zero bytes.
    case truncate
}

/// What a checkpoint did, in WAL frames.
public struct CheckpointResult: Sendable, Hashable {
    /// Frames in the log when the checkpoint ended.
    public var logFrames: Int
    /// Frames of the log that are now in the database file.
    public var checkpointedFrames: Int
}
