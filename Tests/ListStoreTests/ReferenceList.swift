import ListModel
import ListStore

/// The in-memory model of one list that the store is checked against: plain
/// arrays, ops applied the obvious way, the same validation order and error kinds.
struct ReferenceList: Equatable {
    var name: String
    var sections: [SectionSnapshot]
    var maxModelBytes: Int

    init(name: String, sections: [SectionSnapshot] = [], maxModelBytes: Int = 64 * 1024) {
        self.name = name
        self.sections = sections
        self.maxModelBytes = maxModelBytes
    }

    /// Applies a batch all or nothing; returns whether any op changed the list.
    mutating func apply(_ ops: [ListOperation]) throws(StoreError) -> Bool {
        var copy = self
        var changed = false
        for (index, op) in ops.enumerated() {
            do {
                changed = try copy.apply(op) || changed
            } catch {
                throw StoreError(error.kind, error.detail, operationIndex: index)
            }
        }
        self = copy
        return changed
    }

    /// Replaces the content; returns whether it changed.
    mutating func replace(name: String?, sections: [SectionSnapshot]) -> Bool {
        let before = self
        if let name { self.name = name }
        self.sections = sections
        return before != self
    }

    private func fail(_ kind: StoreError.Kind) -> StoreError { StoreError(kind, "reference") }

    private func checkModel(_ model: Model) throws(StoreError) {
        if model.byteCount > maxModelBytes { throw fail(.modelTooLarge) }
    }

    func sectionIndex(_ id: Identifier) -> Int? { sections.firstIndex { $0.id == id } }

    func itemLocation(_ id: Identifier) -> (section: Int, item: Int)? {
        for (s, section) in sections.enumerated() {
            if let i = section.items.firstIndex(where: { $0.id == id }) { return (s, i) }
        }
        return nil
    }

    private mutating func apply(_ op: ListOperation) throws(StoreError) -> Bool {
        switch op {
        case .insertSection(let new, let at):
            try checkModel(new.model)
            for item in new.items { try checkModel(item.model) }
            guard let id = new.id else { preconditionFailure("reference ops carry ids") }
            if sectionIndex(id) != nil { throw fail(.duplicateId) }
            var seen = Set<Identifier>()
            for item in new.items {
                guard let itemID = item.id else { preconditionFailure("reference ops carry ids") }
                if !seen.insert(itemID).inserted || itemLocation(itemID) != nil { throw fail(.duplicateId) }
            }
            let index = at ?? sections.count
            guard (0...sections.count).contains(index) else { throw fail(.positionOutOfRange) }
            let items = new.items.map { ItemSnapshot(id: $0.id!, model: $0.model) }
            sections.insert(SectionSnapshot(id: id, model: new.model, items: items), at: index)
            return true
        case .updateSection(let id, let model):
            try checkModel(model)
            guard let index = sectionIndex(id) else { throw fail(.sectionNotFound) }
            if sections[index].model == model { return false }
            sections[index].model = model
            return true
        case .moveSection(let id, let to):
            guard let index = sectionIndex(id) else { throw fail(.sectionNotFound) }
            guard (0...(sections.count - 1)).contains(to) else { throw fail(.positionOutOfRange) }
            if index == to { return false }
            let section = sections.remove(at: index)
            sections.insert(section, at: to)
            return true
        case .deleteSection(let id):
            guard let index = sectionIndex(id) else { throw fail(.sectionNotFound) }
            sections.remove(at: index)
            return true
        case .insertItem(let sectionID, let item, let at):
            try checkModel(item.model)
            guard let s = sectionIndex(sectionID) else { throw fail(.sectionNotFound) }
            guard let id = item.id else { preconditionFailure("reference ops carry ids") }
            if itemLocation(id) != nil { throw fail(.duplicateId) }
            let index = at ?? sections[s].items.count
            guard (0...sections[s].items.count).contains(index) else { throw fail(.positionOutOfRange) }
            sections[s].items.insert(ItemSnapshot(id: id, model: item.model), at: index)
            return true
        case .updateItem(let id, let model):
            try checkModel(model)
            guard let (s, i) = itemLocation(id) else { throw fail(.itemNotFound) }
            if sections[s].items[i].model == model { return false }
            sections[s].items[i].model = model
            return true
        case .moveItem(let id, let sectionID, let to):
            guard let (s, i) = itemLocation(id) else { throw fail(.itemNotFound) }
            let destination: Int
            if let sectionID, sectionID != sections[s].id {
                guard let d = sectionIndex(sectionID) else { throw fail(.sectionNotFound) }
                destination = d
            } else {
                destination = s
            }
            let others = sections[destination].items.count - (destination == s ? 1 : 0)
            guard (0...others).contains(to) else { throw fail(.positionOutOfRange) }
            if destination == s && i == to { return false }
            let item = sections[s].items.remove(at: i)
            sections[destination].items.insert(item, at: to)
            return true
        case .deleteItem(let id):
            guard let (s, i) = itemLocation(id) else { throw fail(.itemNotFound) }
            sections[s].items.remove(at: i)
            return true
        }
    }
}
