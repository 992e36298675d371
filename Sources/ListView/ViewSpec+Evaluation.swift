import JSON
import ListModel

/// An item, in a list or in a view: its id and model.
public struct ViewItem: Sendable, Hashable {
    /// The item's id.
    public var id: Identifier
    /// The item's model.
    public var model: Model

    /// Creates an item.
    public init(id: Identifier, model: Model) {
        self.id = id
        self.model = model
    }
}

/// A section of the list a view is evaluated over: its id, model and items in order.
public struct SourceSection: Sendable, Hashable {
    /// The section's id.
    public var id: Identifier
    /// The section's model.
    public var model: Model
    /// The section's items, in the list's order.
    public var items: [ViewItem]

    /// Creates a section.
    public init(id: Identifier, model: Model, items: [ViewItem]) {
        self.id = id
        self.model = model
        self.items = items
    }
}

/// A section of a view.
///
/// Without `group`, one of the list's sections (its id, its model); with
/// `group`, one group: `id` is the value's canonical JSON text (`"open"`
/// with its quotes, `3`, `null`), which is not an `Identifier`, and `model`
/// is `{"value": v}`.
public struct ViewSection: Sendable, Hashable {
    /// The section's id in the view.
    public var id: String
    /// The section's model in the view.
    public var model: Model
    /// The view's items of the section, in the view's order.
    public var items: [ViewItem]

    /// Creates a section.
    public init(id: String, model: Model, items: [ViewItem]) {
        self.id = id
        self.model = model
        self.items = items
    }
}

extension ViewSpec {
    /// The view of a list, computed from scratch: the obvious way for a
    /// small list, and the oracle a live engine is tested against.
    ///
    /// - Without `group`: the list's sections in the list's order, each with
    ///   its matching items, in `order` (ties by id) or else in the list's
    ///   order. A section with no matching item stays, empty.
    /// - With `group`: one section per distinct group value among the view's
    ///   items (missing = null), in ``ValueOrder``; in each, the items in
    ///   `order` (ties by id) or else in the list's order (section order, then
    ///   item order).
    /// - With `limit`: only the first `limit` items, in section order then
    ///   item order. A group with none of them is not in the view. Without
    ///   `group`, sections are the list's whatever the window: those past
    ///   its edge stay, empty, as a section with no match does (a section is
    ///   in a view because it is in the list, not because of its items), so
    ///   the window moves items, never sections.
    ///
    /// The items' sequence is the order of their ``key(of:id:at:)`` keys, but
    /// computed here with ``ValueOrder`` directly, not with the keys.
    /// - Throws: `ModelError` when a stored model's text does not parse.
    /// - Complexity: O(n log n) comparisons for n items, plus reading each model.
    public func evaluate(_ sections: [SourceSection]) throws(ModelError) -> [ViewSection] {
        var entries: [Entry] = []
        for (s, section) in sections.enumerated() {
            for (i, item) in section.items.enumerated() {
                let value = try item.model.jsonValue()
                guard matches(value) else { continue }
                entries.append(
                    Entry(
                        item: item, position: ListPosition(section: Int64(s), item: Int64(i)),
                        group: groupValue(of: value), order: orderValue(of: value)))
            }
        }
        entries.sort { areInIncreasingOrder($0, $1) }
        if let limit, entries.count > limit { entries.removeLast(entries.count - limit) }
        guard group != nil else {
            var result = sections.map { ViewSection(id: $0.id.rawValue, model: $0.model, items: []) }
            for entry in entries { result[Int(entry.position.section)].items.append(entry.item) }
            return result
        }
        var result: [ViewSection] = []
        var current: JSONValue?
        for entry in entries {
            let value = entry.group ?? .null
            if current != value {
                current = value
                result.append(
                    ViewSection(id: Self.sectionID(ofGroup: value), model: Self.sectionModel(ofGroup: value), items: [])
                )
            }
            result[result.count - 1].items.append(entry.item)
        }
        return result
    }

    /// An item placed in a view: what the direct comparison needs.
    struct Entry {
        var item: ViewItem
        var position: ListPosition
        var group: JSONValue?
        var order: JSONValue?
    }

    /// The view's order on two matching items, without keys: section (group
    /// value or list section), then order value (or list position), then id.
    func areInIncreasingOrder(_ a: Entry, _ b: Entry) -> Bool {
        if group != nil {
            let groups = ValueOrder.compare(a.group, b.group)
            if groups != 0 { return groups < 0 }
        } else if a.position.section != b.position.section {
            return a.position.section < b.position.section
        }
        if let order {
            let values = order.descending ? ValueOrder.compare(b.order, a.order) : ValueOrder.compare(a.order, b.order)
            if values != 0 { return values < 0 }
        } else if a.position != b.position {
            return a.position < b.position
        }
        return a.item.id.rawValue.utf8.lexicographicallyPrecedes(b.item.id.rawValue.utf8)
    }

    /// Whether the item `a` (model, id, place in the list) comes before `b` in
    /// this view, compared directly with ``ValueOrder``: the order
    /// ``key(of:id:at:)`` encodes, for tests and for callers with two items at hand.
    public func precedes(
        _ a: (model: JSONValue, id: Identifier, position: ListPosition),
        _ b: (model: JSONValue, id: Identifier, position: ListPosition)
    ) -> Bool {
        func entry(_ x: (model: JSONValue, id: Identifier, position: ListPosition)) -> Entry {
            Entry(
                item: ViewItem(id: x.id, model: .emptyObject), position: x.position, group: groupValue(of: x.model),
                order: orderValue(of: x.model))
        }
        return areInIncreasingOrder(entry(a), entry(b))
    }
}
