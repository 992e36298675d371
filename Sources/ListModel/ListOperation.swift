/// An item to insert: the id is made by the store when omitted.
public struct NewItem: Sendable, Hashable {
    /// The id to use, or `nil` to have one generated.
    public var id: Identifier?
    /// The item's model.
    public var model: Model

    /// Creates a new item; the model defaults to `{}`.
    public init(id: Identifier? = nil, model: Model = .emptyObject) {
        self.id = id
        self.model = model
    }
}

/// A section to insert, possibly with items: the id is made when omitted.
public struct NewSection: Sendable, Hashable {
    /// The id to use, or `nil` to have one generated.
    public var id: Identifier?
    /// The section's model.
    public var model: Model
    /// The section's items, in order.
    public var items: [NewItem]

    /// Creates a new section; the model defaults to `{}` and the items to none.
    public init(id: Identifier? = nil, model: Model = .emptyObject, items: [NewItem] = []) {
        self.id = id
        self.model = model
        self.items = items
    }
}

/// One write op of `PATCH /lists/{list}`.
///
/// Positions follow API.md: `at` is an index in `0...count` (default: append);
/// a move's `to` is the index the entity has after the move, so within one
/// section it is in `0..<count` and into another section in `0...count`.
public enum ListOperation: Sendable, Hashable {
    /// Inserts a section (with its items) at `at`, or appends it when `at` is `nil`.
    case insertSection(NewSection, at: Int?)
    /// Replaces a section's model.
    case updateSection(id: Identifier, model: Model)
    /// Moves a section so it ends up at index `to`.
    case moveSection(id: Identifier, to: Int)
    /// Deletes a section and its items.
    case deleteSection(id: Identifier)
    /// Inserts an item into `section` at `at`, or appends it when `at` is `nil`.
    case insertItem(section: Identifier, item: NewItem, at: Int?)
    /// Replaces an item's model.
    case updateItem(id: Identifier, model: Model)
    /// Moves an item to index `to` of `section` (its own section when `nil`).
    case moveItem(id: Identifier, section: Identifier?, to: Int)
    /// Deletes an item.
    case deleteItem(id: Identifier)

    /// The op's name as API.md spells it, used in error details.
    public var name: String {
        switch self {
        case .insertSection: "insertSection"
        case .updateSection: "updateSection"
        case .moveSection: "moveSection"
        case .deleteSection: "deleteSection"
        case .insertItem: "insertItem"
        case .updateItem: "updateItem"
        case .moveItem: "moveItem"
        case .deleteItem: "deleteItem"
        }
    }
}

// Spelled as a batch is written by hand: `.insertSection(id: "fruit", model: ["title": "Fruit"])`.
extension ListOperation {
    /// Inserts a section with these items at `at`, or appends it.
    public static func insertSection(
        id: Identifier? = nil, model: Model = .emptyObject, items: [NewItem] = [], at: Int? = nil
    ) -> ListOperation {
        .insertSection(NewSection(id: id, model: model, items: items), at: at)
    }

    /// Inserts an item into `section` at `at`, or appends it.
    public static func insertItem(
        section: Identifier, id: Identifier? = nil, model: Model = .emptyObject, at: Int? = nil
    ) -> ListOperation {
        .insertItem(section: section, item: NewItem(id: id, model: model), at: at)
    }

    /// Moves an item to index `to` of its own section.
    public static func moveItem(id: Identifier, to: Int) -> ListOperation {
        .moveItem(id: id, section: nil, to: to)
    }
}
