extension Stage {
    /// Applies this stage to `state` the way `UITableView.performBatchUpdates`
    /// does and returns the state after it (the stage's intermediate state).
    ///
    /// Deletes, updates and move sources are read in `state`; inserts and move
    /// targets are positions in the result; sections and items that are neither
    /// removed nor placed keep their relative order and fill the remaining places.
    ///
    /// - Throws: ``SectionDiffError`` when the stage does not fit `state` or breaks a
    ///   batch-update rule: a position out of range or named twice, an item
    ///   operation inside a section deleted or inserted in the stage, an update
    ///   that changes an identity.
    /// - Complexity: O(n + k log k) for n sections and items and k operations.
    // Inlinable, so a caller in another module (ListWire's change answers, applied by
    // every follower) runs a copy specialised for its element types instead of the
    // generic one, whose every element copy and array operation went through the
    // runtime's metadata and value witnesses.
    @inlinable
    public func apply(to state: [ArraySection<Model, Item>]) throws(SectionDiffError) -> [ArraySection<Model, Item>] {
        try apply(to: state, stageNumber: 0)
    }

    @inlinable
    func apply(
        to state: [ArraySection<Model, Item>], stageNumber: Int
    ) throws(SectionDiffError) -> [ArraySection<Model, Item>] {
        func failure(_ field: String, _ entry: Int, _ reason: String) -> SectionDiffError {
            SectionDiffError(stage: stageNumber, operation: "\(field)[\(entry)]", reason: reason)
        }
        var sections = state
        let before = sections.count

        // Sections, before the stage: each named at most once.
        var role = [ApplyRole](repeating: .stays, count: before)
        func claim(_ index: Int, _ newRole: ApplyRole, _ field: String, _ entry: Int) throws(SectionDiffError) {
            guard index >= 0 && index < before else {
                throw failure(
                    field, entry, "section \(index) is out of range: there are \(before) sections before the stage")
            }
            guard role[index] == .stays else {
                throw failure(field, entry, "section \(index) is already \(role[index]) in this stage")
            }
            role[index] = newRole
        }
        for (entry, index) in sectionDeleted.enumerated() { try claim(index, .deleted, "sectionDeleted", entry) }
        for (entry, update) in sectionUpdated.enumerated() {
            try claim(update.at, .updated, "sectionUpdated", entry)
            guard sections[update.at].model.id == update.model.id else {
                throw failure("sectionUpdated", entry, "the update would change section \(update.at)'s identity")
            }
            sections[update.at].model = update.model
        }
        for (entry, move) in sectionMoved.enumerated() { try claim(move.from, .moved, "sectionMoved", entry) }

        // Sections, after the stage: each position filled at most once.
        let after = before - sectionDeleted.count + sectionInserted.count
        var slots = [ApplySlot](repeating: .open, count: after)
        func place(_ index: Int, _ slot: ApplySlot, _ field: String, _ entry: Int) throws(SectionDiffError) {
            guard index >= 0 && index < after else {
                throw failure(
                    field, entry, "section \(index) is out of range: there are \(after) sections after the stage")
            }
            guard case .open = slots[index] else {
                throw failure(field, entry, "section position \(index) is already filled in this stage")
            }
            slots[index] = slot
        }
        for (entry, insertion) in sectionInserted.enumerated() {
            try place(insertion.at, .inserted(entry), "sectionInserted", entry)
        }
        for (entry, move) in sectionMoved.enumerated() { try place(move.to, .moved(move.from), "sectionMoved", entry) }

        // Items, before the stage.
        var named: [ElementPath: UInt8] = [:]  // 0 deleted, 1 updated, 2 moved
        named.reserveCapacity(itemDeleted.count + itemUpdated.count + itemMoved.count)
        let roleNames = ["deleted", "updated", "moved"]
        func claimItem(_ path: ElementPath, _ kind: UInt8, _ field: String, _ entry: Int) throws(SectionDiffError) {
            guard path.section >= 0 && path.section < before else {
                throw failure(
                    field, entry,
                    "section \(path.section) is out of range: there are \(before) sections before the stage")
            }
            guard role[path.section] != .deleted else {
                throw failure(field, entry, "item \(path) is in a section deleted in the same stage")
            }
            let count = sections[path.section].items.count
            guard path.element >= 0 && path.element < count else {
                throw failure(
                    field, entry,
                    "item \(path) is out of range: section \(path.section) has \(count) items before the stage")
            }
            if let earlier = named.updateValue(kind, forKey: path) {
                throw failure(field, entry, "item \(path) is already \(roleNames[Int(earlier)]) in this stage")
            }
        }
        for (entry, path) in itemDeleted.enumerated() { try claimItem(path, 0, "itemDeleted", entry) }
        for (entry, update) in itemUpdated.enumerated() {
            try claimItem(update.at, 1, "itemUpdated", entry)
            guard sections[update.at.section].items[update.at.element].id == update.item.id else {
                throw failure("itemUpdated", entry, "the update would change the identity of item \(update.at)")
            }
            sections[update.at.section].items[update.at.element] = update.item
        }
        var movedItems: [Item] = []
        movedItems.reserveCapacity(itemMoved.count)
        for (entry, move) in itemMoved.enumerated() {
            try claimItem(move.from, 2, "itemMoved", entry)
            movedItems.append(sections[move.from.section].items[move.from.element])
        }
        // Remove deleted and moved-out items, section by section, back to front.
        var removals: [ElementPath] = []
        removals.reserveCapacity(named.count)
        for (path, kind) in named where kind != 1 { removals.append(path) }
        removals.sort(by: >)
        var start = 0
        while start < removals.count {
            let section = removals[start].section
            var end = start
            while end < removals.count && removals[end].section == section { end += 1 }
            if role[section] != .deleted {
                var keep = [Bool](repeating: true, count: sections[section].items.count)
                for index in start..<end { keep[removals[index].element] = false }
                var position = 0
                sections[section].items.removeAll { _ in
                    defer { position += 1 }
                    return !keep[position]
                }
            }
            start = end
        }

        // Assemble the sections after the stage.
        var result: [ArraySection<Model, Item>] = []
        result.reserveCapacity(after)
        var isInserted = [Bool](repeating: false, count: after)
        var nextStaying = 0
        for index in 0..<after {
            switch slots[index] {
            case .inserted(let entry):
                result.append(sectionInserted[entry].section)
                isInserted[index] = true
            case .moved(let from):
                result.append(sections[from])
            case .open:
                while nextStaying < before && (role[nextStaying] == .deleted || role[nextStaying] == .moved) {
                    nextStaying += 1
                }
                // The counts above guarantee a staying section for every open slot.
                precondition(nextStaying < before, "section slot accounting")
                result.append(sections[nextStaying])
                nextStaying += 1
            }
        }

        // Items, after the stage: inserts and move targets, grouped by section.
        var incoming: [(at: ElementPath, source: Int, field: String, entry: Int)] = []
        incoming.reserveCapacity(itemInserted.count + itemMoved.count)
        for (entry, insertion) in itemInserted.enumerated() {
            incoming.append((insertion.at, entry, "itemInserted", entry))
        }
        for (entry, move) in itemMoved.enumerated() {
            incoming.append((move.to, -1 - entry, "itemMoved", entry))
        }
        incoming.sort { $0.at < $1.at }
        start = 0
        while start < incoming.count {
            let first = incoming[start]
            let section = first.at.section
            var end = start
            while end < incoming.count && incoming[end].at.section == section { end += 1 }
            guard section >= 0 && section < after else {
                throw failure(
                    first.field, first.entry,
                    "section \(section) is out of range: there are \(after) sections after the stage")
            }
            guard !isInserted[section] else {
                throw failure(first.field, first.entry, "item \(first.at) is in a section inserted in the same stage")
            }
            let staying = result[section].items
            let count = staying.count + (end - start)
            for index in start..<end where incoming[index].at.element < 0 || incoming[index].at.element >= count {
                let bad = incoming[index]
                throw failure(
                    bad.field, bad.entry,
                    "item \(bad.at) is out of range: section \(section) has \(count) items after the stage")
            }
            var items: [Item] = []
            items.reserveCapacity(count)
            var nextStayingItem = 0
            var next = start
            for position in 0..<count {
                if next < end && incoming[next].at.element == position {
                    let source = incoming[next].source
                    items.append(source >= 0 ? itemInserted[source].item : movedItems[-1 - source])
                    next += 1
                    if next < end && incoming[next].at.element == position {
                        throw failure(
                            incoming[next].field, incoming[next].entry,
                            "item position \(incoming[next].at) is already filled in this stage")
                    }
                } else {
                    items.append(staying[nextStayingItem])
                    nextStayingItem += 1
                }
            }
            // In range and distinct, so every incoming item found its place.
            precondition(next == end, "item slot accounting")
            result[section].items = items
            start = end
        }
        return result
    }
}

/// What a stage does to a section that exists before it.
@usableFromInline
enum ApplyRole: UInt8, CustomStringConvertible {
    case stays, deleted, moved, updated
    @usableFromInline
    var description: String {
        switch self {
        case .stays: "kept"
        case .deleted: "deleted"
        case .moved: "moved"
        case .updated: "updated"
        }
    }
}

/// What fills a section position after a stage.
@usableFromInline
enum ApplySlot {
    case open
    case inserted(Int)
    case moved(Int)
}
