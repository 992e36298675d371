import ListModel

/// One item as it stands in a snapshot.
public struct ItemSnapshot: Sendable, Hashable {
    /// The item's id, unique in its list.
    public var id: Identifier
    /// The item's model.
    public var model: Model

    /// Creates an item snapshot.
    public init(id: Identifier, model: Model) {
        self.id = id
        self.model = model
    }
}

/// One section and its items, in order.
public struct SectionSnapshot: Sendable, Hashable {
    /// The section's id, unique in its list.
    public var id: Identifier
    /// The section's model.
    public var model: Model
    /// The section's items in display order.
    public var items: [ItemSnapshot]

    /// Creates a section snapshot.
    public init(id: Identifier, model: Model, items: [ItemSnapshot]) {
        self.id = id
        self.model = model
        self.items = items
    }
}

/// A whole list at one version, read in one transaction.
///
/// The version and the content always agree: the service uses
/// `"<epoch>-<version>"` as the ETag and the change stream diffs two of these.
public struct ListSnapshot: Sendable, Hashable {
    /// The list's id.
    public var id: Identifier
    /// The list's display name.
    public var name: String
    /// Fixed when the list is created; a list deleted and created again gets a new one.
    public var epoch: String
    /// The version this content belongs to.
    public var version: Int64
    /// The sections in display order.
    public var sections: [SectionSnapshot]

    /// Creates a list snapshot.
    public init(id: Identifier, name: String, epoch: String, version: Int64, sections: [SectionSnapshot]) {
        self.id = id
        self.name = name
        self.epoch = epoch
        self.version = version
        self.sections = sections
    }

    /// The head (id, epoch, version) of this snapshot.
    public var head: ListHead { ListHead(id: id, epoch: epoch, version: version) }
}

/// The current snapshot of a list and its snapshots at earlier versions, all
/// read in one transaction.
///
/// The change stream asks for the versions its waiters hold and diffs each
/// against ``current``; a version missing from ``atVersion`` is outside the
/// retained history (or above the current version), and the service answers
/// those waiters with a reset.
public struct VersionedSnapshots: Sendable, Hashable {
    /// The list as it is now.
    public var current: ListSnapshot
    /// The snapshot at each requested version that is inside the retained window.
    public var atVersion: [Int64: ListSnapshot]
    /// The oldest version whose snapshot can still be rebuilt.
    public var historyFloor: Int64

    /// Creates the value.
    public init(current: ListSnapshot, atVersion: [Int64: ListSnapshot], historyFloor: Int64) {
        self.current = current
        self.atVersion = atVersion
        self.historyFloor = historyFloor
    }
}
