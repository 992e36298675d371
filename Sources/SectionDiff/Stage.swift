/// A section moved in one stage: `from` is its index before the stage, `to` its index after.
public struct SectionMove: Hashable, Sendable, CustomStringConvertible {
    /// The section's index before the stage.
    public var from: Int
    /// The section's index after the stage.
    public var to: Int

    /// Creates a section move.
    @inlinable
    public init(from: Int, to: Int) {
        self.from = from
        self.to = to
    }

    /// `from->to`.
    public var description: String { "\(from)->\(to)" }
}

/// An item moved in one stage: `from` is its path before the stage, `to` its path after.
public struct ItemMove: Hashable, Sendable, CustomStringConvertible {
    /// The item's path before the stage.
    public var from: ElementPath
    /// The item's path after the stage.
    public var to: ElementPath

    /// Creates an item move.
    @inlinable
    public init(from: ElementPath, to: ElementPath) {
        self.from = from
        self.to = to
    }

    /// `[s, i]->[s, i]`.
    public var description: String { "\(from)->\(to)" }
}

/// One table-view batch update (`performBatchUpdates`), with the data a client
/// needs to apply it to its own state.
///
/// A stage follows UIKit's rules (and API.md's "A Stage is one table-view batch
/// update"): deletes and updates name positions *before* the stage, inserts name
/// positions *after* it, moves go from before to after; no position appears twice
/// among deletes, updates and move sources, nor twice among inserts and move
/// targets; nothing is both moved and updated; no item moves out of a section
/// deleted in the same stage or into a section inserted in it, and no item
/// operation names a position inside such a section.
///
/// `sectionUpdated` means the section's own model changed: a table view
/// reconfigures the header or footer; it is not `reloadSections`, which would also
/// reload (and conflict with changes to) the section's items.
///
/// Every list is sorted by position (moves by source), so equal changesets are
/// equal values. The field names are the wire names.
public struct Stage<Model: Diffable, Item: Diffable> {
    /// A section inserted in this stage, with its model and the items it holds after the stage.
    public struct SectionInsertion {
        /// The section's index after the stage.
        public var at: Int
        /// The inserted section.
        public var section: ArraySection<Model, Item>

        /// Creates a section insertion.
        @inlinable
        public init(at: Int, section: ArraySection<Model, Item>) {
            self.at = at
            self.section = section
        }
    }

    /// A section whose model changed, with the new model.
    public struct SectionUpdate {
        /// The section's index before the stage.
        public var at: Int
        /// The section's new model.
        public var model: Model

        /// Creates a section update.
        @inlinable
        public init(at: Int, model: Model) {
            self.at = at
            self.model = model
        }
    }

    /// An item inserted in this stage.
    public struct ItemInsertion {
        /// The item's path after the stage.
        public var at: ElementPath
        /// The inserted item.
        public var item: Item

        /// Creates an item insertion.
        @inlinable
        public init(at: ElementPath, item: Item) {
            self.at = at
            self.item = item
        }
    }

    /// An item whose content changed, with its new value (same identity).
    public struct ItemUpdate {
        /// The item's path before the stage.
        public var at: ElementPath
        /// The item's new value.
        public var item: Item

        /// Creates an item update.
        @inlinable
        public init(at: ElementPath, item: Item) {
            self.at = at
            self.item = item
        }
    }

    /// Indices, before the stage, of deleted sections (their items go with them).
    public var sectionDeleted: [Int]
    /// Inserted sections with their indices after the stage.
    public var sectionInserted: [SectionInsertion]
    /// Sections whose model changed, at their indices before the stage.
    public var sectionUpdated: [SectionUpdate]
    /// Moved sections, from before to after the stage.
    public var sectionMoved: [SectionMove]
    /// Paths, before the stage, of deleted items.
    public var itemDeleted: [ElementPath]
    /// Inserted items with their paths after the stage.
    public var itemInserted: [ItemInsertion]
    /// Items whose content changed, at their paths before the stage.
    public var itemUpdated: [ItemUpdate]
    /// Moved items, from before to after the stage.
    public var itemMoved: [ItemMove]

    /// Creates a stage; every field defaults to empty.
    @inlinable
    public init(
        sectionDeleted: [Int] = [],
        sectionInserted: [SectionInsertion] = [],
        sectionUpdated: [SectionUpdate] = [],
        sectionMoved: [SectionMove] = [],
        itemDeleted: [ElementPath] = [],
        itemInserted: [ItemInsertion] = [],
        itemUpdated: [ItemUpdate] = [],
        itemMoved: [ItemMove] = []
    ) {
        self.sectionDeleted = sectionDeleted
        self.sectionInserted = sectionInserted
        self.sectionUpdated = sectionUpdated
        self.sectionMoved = sectionMoved
        self.itemDeleted = itemDeleted
        self.itemInserted = itemInserted
        self.itemUpdated = itemUpdated
        self.itemMoved = itemMoved
    }

    /// Whether the stage changes nothing (the diff never produces such a stage).
    @inlinable
    public var isEmpty: Bool { operationCount == 0 }

    /// The number of operations in the stage, one per entry in any field.
    @inlinable
    public var operationCount: Int {
        sectionDeleted.count + sectionInserted.count + sectionUpdated.count + sectionMoved.count
            + itemDeleted.count + itemInserted.count + itemUpdated.count + itemMoved.count
    }
}

extension Stage.SectionInsertion: Equatable where Model: Equatable, Item: Equatable {}
extension Stage.SectionInsertion: Sendable where Model: Sendable, Item: Sendable {}
extension Stage.SectionUpdate: Equatable where Model: Equatable {}
extension Stage.SectionUpdate: Sendable where Model: Sendable {}
extension Stage.ItemInsertion: Equatable where Item: Equatable {}
extension Stage.ItemInsertion: Sendable where Item: Sendable {}
extension Stage.ItemUpdate: Equatable where Item: Equatable {}
extension Stage.ItemUpdate: Sendable where Item: Sendable {}
extension Stage: Equatable where Model: Equatable, Item: Equatable {}
extension Stage: Sendable where Model: Sendable, Item: Sendable {}

extension Stage: CustomStringConvertible {
    /// The non-empty fields, positions only, for logs and test failures.
    public var description: String {
        var parts: [String] = []
        if !sectionDeleted.isEmpty { parts.append("sectionDeleted: \(sectionDeleted)") }
        if !sectionInserted.isEmpty { parts.append("sectionInserted: \(sectionInserted.map(\.at))") }
        if !sectionUpdated.isEmpty { parts.append("sectionUpdated: \(sectionUpdated.map(\.at))") }
        if !sectionMoved.isEmpty { parts.append("sectionMoved: \(sectionMoved)") }
        if !itemDeleted.isEmpty { parts.append("itemDeleted: \(itemDeleted)") }
        if !itemInserted.isEmpty { parts.append("itemInserted: \(itemInserted.map(\.at))") }
        if !itemUpdated.isEmpty { parts.append("itemUpdated: \(itemUpdated.map(\.at))") }
        if !itemMoved.isEmpty { parts.append("itemMoved: \(itemMoved)") }
        return "Stage(" + parts.joined(separator: ", ") + ")"
    }
}
