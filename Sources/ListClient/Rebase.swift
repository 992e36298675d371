import ListModel
import ListWire
import SectionDiff

/// `PATCH /lists/{list}`'s operations applied to sections on the client, as the
/// server applies them (API.md, "REST"), for optimistic writes: each write all
/// or nothing, each operation that changes something as one stage.
///
/// Why its own rules and not the server's code: the store applies operations to
/// rows in SQL; the client holds sections in memory. The two agree on what
/// counts: the same refusals (an id that exists, a section or item that does not,
/// a position out of range) and the same no-ops (an update to the same model, a
/// move to where the element is), so a write the server applies as sent replays
/// to exactly the server's state, and the confirmation shows nothing.
enum LocalApply {
    /// Why an operation would be refused; the server is asked anyway and has the last word.
    struct Refusal: Error {
        var detail: String
    }

    /// Applies `operations` to `sections`, all or nothing. Returns the stage of
    /// each operation that changed something, with the sections after it, or
    /// throws, leaving `sections` as it was, when one would be refused.
    ///
    /// - Complexity: O(operations × (sections + items)): each operation finds its element by id.
    static func apply(_ operations: [ListOperation], to sections: inout ListSections) throws(Refusal) -> [AppliedStage]
    {
        var working = sections
        var applied: [AppliedStage] = []
        for operation in operations {
            if let stage = try apply(operation, to: &working) {
                applied.append(AppliedStage(stage: stage, sections: working))
            }
        }
        sections = working
        return applied
    }

    /// Applies each write in order over `sections`, leaving out the ones that would
    /// be refused (the server refuses or refused them; its change says which).
    static func replay(_ writes: [[ListOperation]], over sections: ListSections) -> ListSections {
        var sections = sections
        for operations in writes { _ = try? apply(operations, to: &sections) }
        return sections
    }

    /// Applies one operation; returns its stage, or `nil` when it changes nothing.
    static func apply(_ operation: ListOperation, to sections: inout ListSections) throws(Refusal) -> ListStage? {
        switch operation {
        case .insertSection(let new, let at):
            guard let id = new.id else { throw Refusal(detail: "insertSection needs an id to show at once") }
            guard section(id.rawValue, in: sections) == nil else { throw Refusal(detail: "section \(id) exists") }
            var items: [JSONEntry] = []
            var seen = Set<String>()
            for item in new.items {
                guard let itemID = item.id else { throw Refusal(detail: "an inserted section's items need ids") }
                guard seen.insert(itemID.rawValue).inserted, Self.item(itemID.rawValue, in: sections) == nil else {
                    throw Refusal(detail: "item \(itemID) exists")
                }
                items.append(entry(itemID, item.model))
            }
            let index = at ?? sections.count
            guard (0...sections.count).contains(index) else { throw Refusal(detail: "section position \(index)") }
            let inserted = ListSections.Element(model: entry(id, new.model), items: items)
            sections.insert(inserted, at: index)
            return ListStage(sectionInserted: [.init(at: index, section: inserted)])

        case .updateSection(let id, let model):
            guard let index = section(id.rawValue, in: sections) else { throw Refusal(detail: "no section \(id)") }
            let updated = entry(id, model)
            guard sections[index].model.model != updated.model else { return nil }
            sections[index].model = updated
            return ListStage(sectionUpdated: [.init(at: index, model: updated)])

        case .moveSection(let id, let to):
            guard let index = section(id.rawValue, in: sections) else { throw Refusal(detail: "no section \(id)") }
            guard (0..<sections.count).contains(to) else { throw Refusal(detail: "section position \(to)") }
            guard to != index else { return nil }
            let moved = sections.remove(at: index)
            sections.insert(moved, at: to)
            return ListStage(sectionMoved: [SectionMove(from: index, to: to)])

        case .deleteSection(let id):
            guard let index = section(id.rawValue, in: sections) else { throw Refusal(detail: "no section \(id)") }
            sections.remove(at: index)
            return ListStage(sectionDeleted: [index])

        case .insertItem(let sectionID, let new, let at):
            guard let id = new.id else { throw Refusal(detail: "insertItem needs an id to show at once") }
            guard let target = section(sectionID.rawValue, in: sections) else {
                throw Refusal(detail: "no section \(sectionID)")
            }
            guard item(id.rawValue, in: sections) == nil else { throw Refusal(detail: "item \(id) exists") }
            let index = at ?? sections[target].items.count
            guard (0...sections[target].items.count).contains(index) else {
                throw Refusal(detail: "item position \(index)")
            }
            let inserted = entry(id, new.model)
            sections[target].items.insert(inserted, at: index)
            return ListStage(itemInserted: [.init(at: ElementPath(element: index, section: target), item: inserted)])

        case .updateItem(let id, let model):
            guard let path = item(id.rawValue, in: sections) else { throw Refusal(detail: "no item \(id)") }
            let updated = entry(id, model)
            guard sections[path.section].items[path.element].model != updated.model else { return nil }
            sections[path.section].items[path.element] = updated
            return ListStage(itemUpdated: [.init(at: path, item: updated)])

        case .moveItem(let id, let sectionID, let to):
            guard let from = item(id.rawValue, in: sections) else { throw Refusal(detail: "no item \(id)") }
            let target: Int
            if let sectionID {
                guard let found = section(sectionID.rawValue, in: sections) else {
                    throw Refusal(detail: "no section \(sectionID)")
                }
                target = found
            } else {
                target = from.section
            }
            // The position among the section's other items: 0...count without the item itself.
            let others = sections[target].items.count - (target == from.section ? 1 : 0)
            guard (0...others).contains(to) else { throw Refusal(detail: "item position \(to)") }
            if target == from.section && to == from.element { return nil }
            let moved = sections[from.section].items.remove(at: from.element)
            sections[target].items.insert(moved, at: to)
            return ListStage(itemMoved: [ItemMove(from: from, to: ElementPath(element: to, section: target))])

        case .deleteItem(let id):
            guard let path = item(id.rawValue, in: sections) else { throw Refusal(detail: "no item \(id)") }
            sections[path.section].items.remove(at: path.element)
            return ListStage(itemDeleted: [path])
        }
    }

    static func entry(_ id: Identifier, _ model: Model) -> JSONEntry {
        JSONEntry(id: id.rawValue, model: JSONText(model.canonicalText))
    }

    /// The index of the section `id`.
    static func section(_ id: String, in sections: ListSections) -> Int? {
        let hash = id.hashValue
        return sections.firstIndex { $0.model.identityHash == hash && $0.model.id == id }
    }

    /// The path of the item `id`, in any section.
    static func item(_ id: String, in sections: ListSections) -> ElementPath? {
        let hash = id.hashValue
        for (index, section) in sections.enumerated() {
            if let element = section.items.firstIndex(where: { $0.identityHash == hash && $0.id == id }) {
                return ElementPath(element: element, section: index)
            }
        }
        return nil
    }
}

extension ListOperation {
    /// The same operation with an id made for every section and item inserted
    /// without one, so the server's echo is recognized as the same element.
    func withIDs() -> ListOperation {
        switch self {
        case .insertSection(var new, let at):
            if new.id == nil { new.id = Identifier.generate() }
            for index in new.items.indices where new.items[index].id == nil {
                new.items[index].id = Identifier.generate()
            }
            return .insertSection(new, at: at)
        case .insertItem(let section, var new, let at):
            if new.id == nil { new.id = Identifier.generate() }
            return .insertItem(section: section, item: new, at: at)
        default:
            return self
        }
    }

    /// The sections and the items the operation names (for ``PendingChanges``).
    func named(sections: inout Set<String>, items: inout Set<String>) {
        switch self {
        case .insertSection(let new, _):
            if let id = new.id { sections.insert(id.rawValue) }
            for item in new.items { if let id = item.id { items.insert(id.rawValue) } }
        case .updateSection(let id, _), .moveSection(let id, _), .deleteSection(let id):
            sections.insert(id.rawValue)
        case .insertItem(_, let new, _):
            if let id = new.id { items.insert(id.rawValue) }
        case .updateItem(let id, _), .moveItem(let id, _, _), .deleteItem(let id):
            items.insert(id.rawValue)
        }
    }
}
