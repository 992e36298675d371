import SectionDiff

/// A section or item as the wire writes it: `{"id":…,"model":…}`, the model
/// being canonical JSON text spliced in as it is (never parsed and written again).
///
/// The server's stored snapshots and the clients' ``JSONEntry`` values both
/// conform, so the one writer in this module serves both.
public protocol WireEntry {
    /// The id, unique in its list.
    var wireID: String { get }
    /// The model's canonical JSON text.
    var wireModelText: String { get }
}

/// A section with its items as the wire writes it: `{"id","model","items":[…]}`.
public protocol WireSection: WireEntry {
    /// The item type.
    associatedtype Item: WireEntry
    /// The items in order.
    associatedtype Items: Collection<Item>
    /// The section's items in display order.
    var wireItems: Items { get }
}

extension ArraySection: WireEntry where Model: WireEntry {
    /// The section model's id.
    @inlinable public var wireID: String { model.wireID }
    /// The section model's text.
    @inlinable public var wireModelText: String { model.wireModelText }
}

extension ArraySection: WireSection where Model: WireEntry, Item: WireEntry {
    /// The items.
    @inlinable public var wireItems: [Item] { items }
}

/// A list's sections in SectionDiff's terms: ids with canonical model text,
/// the values the server diffs and the clients apply stages to.
public typealias ListSections = [ArraySection<JSONEntry, JSONEntry>]

/// A list's net change at one end, condensed, in SectionDiff's terms: the
/// sections and items a change touched as ``JSONEntry`` values, each stretch
/// of untouched siblings between them one run (`Condensed.run`), so its size
/// is the change's, whatever the list's. A store builds both ends this way and
/// `StagedChangeset(condensedFrom:to:)` stages them as they are.
public typealias CondensedListSections = [ArraySection<Condensed<JSONEntry>, Condensed<JSONEntry>>]

/// One stage of a change answer in SectionDiff's terms (one `performBatchUpdates`).
public typealias ListStage = Stage<JSONEntry, JSONEntry>

/// A whole staged changeset of a list.
public typealias ListChangeset = StagedChangeset<JSONEntry, JSONEntry>
