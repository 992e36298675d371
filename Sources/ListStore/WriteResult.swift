import ListModel

/// What a committed write did to its list.
public struct WriteResult: Sendable, Hashable {
    /// The list written.
    public var list: Identifier
    /// The list's epoch.
    public var epoch: String
    /// The version before the write.
    public var previousVersion: Int64
    /// The version after the write; equal to ``previousVersion`` when nothing changed.
    public var version: Int64
    /// Whether the write changed the list (and so bumped its version).
    public var changed: Bool
    /// The net change the write made, recorded as it committed; `nil` when
    /// nothing changed or the store does not record it.
    public var change: NetChange?

    /// Creates a result.
    public init(
        list: Identifier, epoch: String, previousVersion: Int64, version: Int64, changed: Bool,
        change: NetChange? = nil
    ) {
        self.list = list
        self.epoch = epoch
        self.previousVersion = previousVersion
        self.version = version
        self.changed = changed
        self.change = change
    }
}

/// A durable change to one list, announced to ``Store/onCommit(_:)`` observers.
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

    /// Creates a commit record.
    public init(list: Identifier, epoch: String, version: Int64, deleted: Bool, change: NetChange? = nil) {
        self.list = list
        self.epoch = epoch
        self.version = version
        self.deleted = deleted
        self.change = change
    }
}
