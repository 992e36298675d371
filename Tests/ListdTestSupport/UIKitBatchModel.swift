import ListWire
import SectionDiff

/// UITableView's batch-update rules, written for tests apart from SectionDiff's
/// own apply: checks one stage and applies it, or says why UIKit would reject
/// it. A section update is applied as `reloadSections`, so any item change in
/// that section in the same batch is rejected. Shared by the store's change
/// engine tests and the client's optimistic-apply tests.
public enum UIKitBatchModel {
    /// What a table view shows: sections and items as ids and model texts.
    public struct State: Equatable, Sendable, CustomStringConvertible {
        public struct Section: Equatable, Sendable {
            public var id: String
            public var model: String
            public var items: [Item]

            public init(id: String, model: String, items: [Item]) {
                self.id = id
                self.model = model
                self.items = items
            }
        }

        public struct Item: Equatable, Sendable {
            public var id: String
            public var model: String

            public init(id: String, model: String) {
                self.id = id
                self.model = model
            }
        }

        public var sections: [Section]

        public init(sections: [Section]) { self.sections = sections }

        /// The state of listd's wire sections.
        public init(_ sections: [ArraySection<JSONEntry, JSONEntry>]) {
            self.sections = sections.map { section in
                Section(
                    id: section.model.id, model: section.model.model.text,
                    items: section.items.map { Item(id: $0.id, model: $0.model.text) })
            }
        }

        /// `[s1: a b, s2: c]`, for test failures.
        public var description: String {
            "[" + sections.map { "\($0.id): " + $0.items.map(\.id).joined(separator: " ") }.joined(separator: ", ")
                + "]"
        }
    }

    public struct Rejected: Error, CustomStringConvertible {
        public var description: String
    }

    public static func apply(_ stage: Stage<JSONEntry, JSONEntry>, to state: State) throws -> State {
        let before = state.sections
        let deleted = Set(stage.sectionDeleted)
        let updated = Dictionary(stage.sectionUpdated.map { ($0.at, $0.model) }, uniquingKeysWith: { a, _ in a })
        let sources = stage.sectionDeleted + stage.sectionUpdated.map(\.at) + stage.sectionMoved.map(\.from)
        guard Set(sources).count == sources.count else { throw Rejected(description: "a section named twice") }
        guard sources.allSatisfy({ before.indices.contains($0) }) else {
            throw Rejected(description: "a section out of range before")
        }
        let afterCount = before.count - deleted.count + stage.sectionInserted.count
        let targets = stage.sectionInserted.map(\.at) + stage.sectionMoved.map(\.to)
        guard Set(targets).count == targets.count, targets.allSatisfy({ (0..<afterCount).contains($0) }) else {
            throw Rejected(description: "a section target named twice or out of range")
        }
        // Where each section ends up.
        var origin = [Int?](repeating: nil, count: afterCount)
        var taken = Set(targets)
        for move in stage.sectionMoved { origin[move.to] = move.from }
        let movedFrom = Set(stage.sectionMoved.map(\.from))
        var free = (0..<afterCount).filter { !taken.contains($0) }.makeIterator()
        for index in before.indices where !deleted.contains(index) && !movedFrom.contains(index) {
            guard let slot = free.next() else { throw Rejected(description: "section counts do not add up") }
            origin[slot] = index
            taken.insert(slot)
        }
        let afterOf = Dictionary(
            origin.enumerated().compactMap { slot, from in from.map { ($0, slot) } },
            uniquingKeysWith: { a, _ in a })
        let inserted = Set(stage.sectionInserted.map(\.at))

        // Items: sources name positions before, targets after.
        let itemSources = stage.itemDeleted + stage.itemUpdated.map(\.at) + stage.itemMoved.map(\.from)
        guard Set(itemSources).count == itemSources.count else {
            throw Rejected(description: "an index path named twice among deletes, reloads and move sources")
        }
        for path in itemSources {
            guard before.indices.contains(path.section), !deleted.contains(path.section),
                before[path.section].items.indices.contains(path.element)
            else { throw Rejected(description: "item \(path) out of range or in a deleted section") }
        }
        let itemTargets = stage.itemInserted.map(\.at) + stage.itemMoved.map(\.to)
        guard Set(itemTargets).count == itemTargets.count else {
            throw Rejected(description: "an index path named twice among inserts and move targets")
        }
        for path in itemTargets where !(0..<afterCount).contains(path.section) || inserted.contains(path.section) {
            throw Rejected(description: "item target \(path) out of range or in an inserted section")
        }
        let movedItems = Set(stage.itemMoved.map(\.from))
        for update in stage.itemUpdated where movedItems.contains(update.at) {
            throw Rejected(description: "item \(update.at) moved and reloaded in one batch")
        }
        for section in updated.keys {
            let after = afterOf[section]
            if stage.itemDeleted.contains(where: { $0.section == section })
                || stage.itemUpdated.contains(where: { $0.at.section == section })
                || stage.itemMoved.contains(where: { $0.from.section == section || $0.to.section == after })
                || stage.itemInserted.contains(where: { $0.at.section == after })
            {
                throw Rejected(description: "section \(section) reloaded beside an item change in it")
            }
        }

        var result: [State.Section] = []
        for slot in 0..<afterCount {
            guard let from = origin[slot] else {
                guard let insertion = stage.sectionInserted.first(where: { $0.at == slot }) else {
                    throw Rejected(description: "nothing fills section \(slot)")
                }
                result.append(
                    State.Section(
                        id: insertion.section.model.id, model: insertion.section.model.model.text,
                        items: insertion.section.items.map { State.Item(id: $0.id, model: $0.model.text) }))
                continue
            }
            var section = before[from]
            if let model = updated[from] {
                guard model.id == section.id else { throw Rejected(description: "a reload changes a section's id") }
                section.model = model.model.text
            }
            var items = section.items
            for update in stage.itemUpdated where update.at.section == from {
                guard items[update.at.element].id == update.item.id else {
                    throw Rejected(description: "a reload at \(update.at) changes the row's id")
                }
                items[update.at.element].model = update.item.model.text
            }
            let removed = Set(
                stage.itemDeleted.filter { $0.section == from }.map(\.element)
                    + stage.itemMoved.filter { $0.from.section == from }.map(\.from.element))
            let remaining = items.indices.filter { !removed.contains($0) }.map { items[$0] }
            var incoming: [Int: State.Item] = [:]
            for insertion in stage.itemInserted where insertion.at.section == slot {
                incoming[insertion.at.element] = State.Item(id: insertion.item.id, model: insertion.item.model.text)
            }
            for move in stage.itemMoved where move.to.section == slot {
                incoming[move.to.element] = before[move.from.section].items[move.from.element]
            }
            let count = remaining.count + incoming.count
            guard incoming.keys.allSatisfy({ (0..<count).contains($0) }) else {
                throw Rejected(description: "an item target in section \(slot) is beyond its \(count) rows")
            }
            var next = remaining.makeIterator()
            section.items = (0..<count).compactMap { incoming[$0] ?? next.next() }
            result.append(section)
        }
        return State(sections: result)
    }
}
