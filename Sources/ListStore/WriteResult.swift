import ListModel

/// What a committed write did to its list: the ``Commit`` it made, or that it
/// changed nothing.
///
/// The write's change lives in its commit, the value the store also announces
/// to ``Store/onCommit(_:)`` observers, so the writer's answer and every
/// follower woken by the commit take the same recorded ``NetChange``.
public struct WriteResult: Sendable, Hashable {
    /// The list written.
    public let list: Identifier
    /// The list's epoch.
    public let epoch: String
    /// The version before the write.
    public let previousVersion: Int64
    /// The commit the write made, as ``Store/onCommit(_:)`` observers hear
    /// it; `nil` when the write changed nothing (and so made no version).
    public let commit: Commit?

    /// The list's id, epoch and version after the write.
    public var head: ListHead { ListHead(id: list, epoch: epoch, version: version) }

    /// A write that changed nothing: the list stays at `version`.
    public init(unchanged list: Identifier, epoch: String, version: Int64) {
        self.list = list
        self.epoch = epoch
        self.previousVersion = version
        self.commit = nil
    }

    /// A write that made `commit` from the list at `previousVersion`.
    ///
    /// `commit` is of a list still there (a write that deletes its list
    /// answers no result), at a version above `previousVersion`.
    public init(previousVersion: Int64, commit: Commit) {
        precondition(!commit.deleted, "a write result's commit deletes its list")
        precondition(
            commit.version > previousVersion,
            "a write result's commit is at v\(commit.version), not above v\(previousVersion)")
        self.list = commit.list
        self.epoch = commit.epoch
        self.previousVersion = previousVersion
        self.commit = commit
    }

    /// The version after the write; equal to ``previousVersion`` when nothing changed.
    public var version: Int64 { commit?.version ?? previousVersion }

    /// Whether the write changed the list (and so bumped its version).
    public var changed: Bool { commit != nil }

    /// The net change the write made, recorded as it committed (its
    /// ``commit``'s); `nil` when nothing changed or the store does not record it.
    public var change: NetChange? { commit?.change }
}

/// A durable change to one list, announced to ``Store/onCommit(_:)`` observers
/// and, for a write that made it, carried by the write's ``WriteResult``.
public struct Commit: Sendable, Hashable {
    /// The list that changed.
    public var list: Identifier
    /// Its epoch (of the deleted list, when ``deleted``).
    public var epoch: String
    /// Its version after the commit (the last version, when ``deleted``).
    public var version: Int64
    /// Whether the list was deleted.
    public var deleted: Bool
    /// The net change from the previous version, when the store recorded it,
    /// so followers woken by this commit need not ask for it.
    public var change: NetChange?
    /// Every section and item the commit touched, with its rows before and
    /// after, when the store recorded them: `nil` for another instance's
    /// commit, a commit that renamed its list, or one touching more than
    /// ``maxTouchedRows`` entities. Live views move forward by it.
    public var touched: TouchedRows?

    /// The most sections and items a commit carries as ``touched``: a larger
    /// one is read from history by whoever needs it, not kept with the commit.
    public static let maxTouchedRows = 1_024

    /// Creates a commit record.
    public init(
        list: Identifier, epoch: String, version: Int64, deleted: Bool, change: NetChange? = nil,
        touched: TouchedRows? = nil
    ) {
        self.list = list
        self.epoch = epoch
        self.version = version
        self.deleted = deleted
        self.change = change
        self.touched = touched
    }
}
