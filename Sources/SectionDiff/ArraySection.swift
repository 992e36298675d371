/// A section of a sectioned list: the section's own model and its items, in order.
///
/// The model carries the section's identity and content (for listd, its id and
/// JSON model); the items are diffed by identity across all sections, so an item
/// can move from one section to another and stay the same item.
public struct ArraySection<Model: Diffable, Item: Diffable> {
    /// The section's identity and content.
    public var model: Model
    /// The section's items, in display order.
    public var items: [Item]

    /// Creates a section from its model and items.
    @inlinable
    public init(model: Model, items: [Item]) {
        self.model = model
        self.items = items
    }
}

extension ArraySection: Equatable where Model: Equatable, Item: Equatable {}
extension ArraySection: Hashable where Model: Hashable, Item: Hashable {}
extension ArraySection: Sendable where Model: Sendable, Item: Sendable {}

extension ArraySection: CustomStringConvertible {
    /// The model and the item count, for logs and test failures.
    public var description: String { "Section(\(model.id), \(items.count) items)" }
}
