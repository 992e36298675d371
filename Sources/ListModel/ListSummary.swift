/// Where a list is now: cheap to read, enough for ETags and long-poll checks.
public struct ListHead: Sendable, Hashable {
    /// The list's id.
    public var id: Identifier
    /// The list's epoch.
    public var epoch: String
    /// The list's current version.
    public var version: Int64

    /// Creates a head.
    public init(id: Identifier, epoch: String, version: Int64) {
        self.id = id
        self.epoch = epoch
        self.version = version
    }
}

/// One row of `GET /lists`: a list's head, name and size.
public struct ListSummary: Sendable, Hashable {
    /// The list's id, epoch and version.
    public var head: ListHead
    /// The list's display name.
    public var name: String
    /// How many sections the list has.
    public var sectionCount: Int
    /// How many items the list has, over all sections.
    public var itemCount: Int

    /// Creates a summary.
    public init(head: ListHead, name: String, sectionCount: Int, itemCount: Int) {
        self.head = head
        self.name = name
        self.sectionCount = sectionCount
        self.itemCount = itemCount
    }
}

extension ListSummary {
    /// The list's id.
    public var id: Identifier { head.id }
    /// The list's epoch.
    public var epoch: String { head.epoch }
    /// The list's current version.
    public var version: Int64 { head.version }
}
