import Foundation
import ListModel
import Storage

/// Applies writes to the database on the writer thread, inside the writer's
/// transaction and the write's savepoint; it never commits.
///
/// Every change records the touched entity's before-image in `history` at the
/// write's new version (first touch wins), which is what lets a reader rebuild
/// the snapshot at any retained version.
package final class ListWriter {
    let db: Database
    package let configuration: StoreConfiguration

    let keys: PositionKeys
    /// The rank indexes of hot lists, kept at the committed (or, inside a
    /// write, the written) state; see ``HotLists``.
    let hot: HotLists
    /// Per list, a time before which its history cannot age out (see
    /// ``prune(_:now:maxVersions:known:)``); dropped when a write rolls back.
    var ageQuietUntil: [Identifier: Int64] = [:]

    package init(db: Database, configuration: StoreConfiguration) {
        self.db = db
        self.configuration = configuration
        self.keys = PositionKeys(gap: configuration.positionGap)
        self.hot = HotLists(budget: configuration.hotListMemory)
    }

    // MARK: History kinds

    enum Kind: Int64 {
        case list = 0
        case section = 1
        case item = 2
    }

    /// The list a write is changing, and whether it has changed yet.
    struct Target {
        let id: Identifier
        let epoch: String
        let version: Int64
        /// The list's `history_floor` and `history_pruned` when loaded (a write does not change them before ``finish``).
        var floor: Int64 = 0
        var pruned: Int64 = 0
        var changed = false
        var newVersion: Int64 { version + 1 }
        /// Sibling groups this write has changed (`nil`: the sections; else a
        /// section's items): the hot rank index no longer describes them.
        var changedGroups = Set<Identifier?>()
        /// Whether the write renamed the list (its commit then carries no ``Commit/touched``).
        var renamed = false
    }

    // MARK: Whole-list writes

    package func createList(
        id: Identifier?, name: String, sections: [NewSection], indexes: [[String]] = [], now: Int64
    ) throws(StoreError) -> (ListSnapshot, [Commit]) {
        try checkName(name)
        let indexes = try checkIndexPaths(indexes)
        let sections = try prepareBody(sections)
        let listID = id ?? Identifier.generate()
        if try db.first("SELECT 1 FROM lists WHERE id = ?", listID.sql, read: { _ in true }) != nil {
            throw StoreError(.listAlreadyExists, "list \"\(listID)\" already exists")
        }
        let epoch = Identifier.generate().rawValue
        hot.evict(listID)
        try db.run(
            """
            INSERT INTO lists (id, name, epoch, version, history_floor, history_pruned, created_at, updated_at)
            VALUES (?, ?, ?, 1, 1, 1, ?, ?)
            """, listID.sql, name.sql, epoch.sql, now.sql, now.sql)
        try db.run("INSERT INTO versions (list_id, version, committed_at) VALUES (?, 1, ?)", listID.sql, now.sql)
        // Declared before the items go in: the triggers index each as it is written.
        for path in indexes { _ = try declareIndex(path, on: listID) }
        let sectionKeys = keys.spread(count: sections.count)
        for (section, key) in zip(sections, sectionKeys) {
            try db.run(
                "INSERT INTO sections (list_id, id, position, model) VALUES (?, ?, ?, ?)",
                listID.sql, section.id.sql, key.sql, section.model.canonicalText.sql)
            for (item, itemKey) in zip(section.items, keys.spread(count: section.items.count)) {
                try db.run(
                    "INSERT INTO items (list_id, id, section_id, position, model) VALUES (?, ?, ?, ?, ?)",
                    listID.sql, item.id.sql, section.id.sql, itemKey.sql, item.model.canonicalText.sql)
            }
        }
        let snapshot = ListSnapshot(id: listID, name: name, epoch: epoch, version: 1, sections: sections)
        return (snapshot, [Commit(list: listID, epoch: epoch, version: 1, deleted: false)])
    }

    package func deleteList(_ list: Identifier, expectedVersion: Int64?) throws(StoreError) -> [Commit] {
        let target = try load(list, expectedVersion: expectedVersion)
        // The text index's entries go while the list's flag still says they exist.
        try removeTextEntries(of: list)
        try db.run("DELETE FROM list_text_indexes WHERE list_id = ?", list.sql)
        try db.run("DELETE FROM lists WHERE id = ?", list.sql)
        hot.evict(list)
        return [Commit(list: list, epoch: target.epoch, version: target.version, deleted: true)]
    }

    package func apply(_ ops: [ListOperation], to list: Identifier, expectedVersion: Int64?, now: Int64)
        throws(StoreError)
        -> (WriteResult, [Commit])
    {
        guard ops.count <= configuration.maxOpsPerWrite else {
            throw StoreError(
                .limitExceeded,
                "a write holds at most \(configuration.maxOpsPerWrite) ops, this one has \(ops.count)")
        }
        try checkAddedElements(ops, to: list)
        var target = try load(list, expectedVersion: expectedVersion)
        for (index, op) in ops.enumerated() {
            do {
                try apply(op, to: &target)
            } catch {
                var error = error
                error.detail = "op \(index) (\(op.name)): \(error.detail)"
                error.operationIndex = index
                throw error
            }
        }
        return try finish(target, now: now)
    }

    package func replace(
        _ list: Identifier, name: String?, sections newSections: [NewSection], indexes: [[String]] = [],
        expectedVersion: Int64?, now: Int64
    ) throws(StoreError) -> (WriteResult, [Commit]) {
        if let name { try checkName(name) }
        let indexes = try checkIndexPaths(indexes)
        let body = try prepareBody(newSections)
        var target = try load(list, expectedVersion: expectedVersion)
        // Declared first, with the items as they are: the writes below keep them.
        var declared = false
        for path in indexes { declared = try declareIndex(path, on: list) || declared }
        if declared { try reindexItems(of: list, progress: { _, _ in }) }

        if let name {
            let oldName = try db.first("SELECT name FROM lists WHERE id = ?", list.sql) { $0.text(0) } ?? name
            if oldName != name {
                try record(.list, "", existed: true, section: nil, position: nil, model: oldName, in: &target)
                target.renamed = true
                try db.run("UPDATE lists SET name = ? WHERE id = ?", name.sql, list.sql)
            }
        }

        let oldSections = try db.rows(
            "SELECT id, position, model FROM sections WHERE list_id = ?", [list.sql]
        ) { row in (row.identifier(0), (position: row.int64(1), model: row.text(2))) }
        let oldItems = try db.rows(
            "SELECT id, section_id, position, model FROM items WHERE list_id = ?", [list.sql]
        ) { row in (row.identifier(0), (section: row.identifier(1), position: row.int64(2), model: row.text(3))) }
        let sectionsByID = Dictionary(oldSections, uniquingKeysWith: { first, _ in first })
        let itemsByID = Dictionary(oldItems, uniquingKeysWith: { first, _ in first })

        // Whether the order changes is a question about ranks, not keys.
        let oldOrder = oldSections.sorted { $0.1.position < $1.1.position }.map(\.0)
        let oldItemOrder = Dictionary(grouping: oldItems, by: { $0.1.section }).mapValues { items in
            items.sorted { $0.1.position < $1.1.position }.map(\.0)
        }
        let orderChanged =
            oldOrder != body.map(\.id)
            || body.contains { (oldItemOrder[$0.id] ?? []) != $0.items.map(\.id) }

        var keep = Set<Identifier>()
        for section in body { for item in section.items { keep.insert(item.id) } }
        for (id, old) in oldItems where !keep.contains(id) {
            try record(
                .item, id.rawValue, existed: true, section: old.section, position: old.position,
                model: old.model, in: &target)
            try db.run("DELETE FROM items WHERE list_id = ? AND id = ?", list.sql, id.sql)
        }
        let sectionKeys = keys.spread(count: body.count)
        for (section, key) in zip(body, sectionKeys) {
            if let old = sectionsByID[section.id] {
                let newKey = orderChanged ? key : old.position
                if old.position != newKey || old.model != section.model.canonicalText {
                    try record(
                        .section, section.id.rawValue, existed: true, section: nil, position: old.position,
                        model: old.model, in: &target)
                    try db.run(
                        "UPDATE sections SET position = ?, model = ? WHERE list_id = ? AND id = ?",
                        newKey.sql, section.model.canonicalText.sql, list.sql, section.id.sql)
                }
            } else {
                try record(.section, section.id.rawValue, existed: false, in: &target)
                try db.run(
                    "INSERT INTO sections (list_id, id, position, model) VALUES (?, ?, ?, ?)",
                    list.sql, section.id.sql, key.sql, section.model.canonicalText.sql)
            }
        }
        for section in body {
            for (item, key) in zip(section.items, keys.spread(count: section.items.count)) {
                if let old = itemsByID[item.id] {
                    let newKey = orderChanged ? key : old.position
                    if old.section != section.id || old.position != newKey || old.model != item.model.canonicalText {
                        try record(
                            .item, item.id.rawValue, existed: true, section: old.section,
                            position: old.position, model: old.model, in: &target)
                        try db.run(
                            "UPDATE items SET section_id = ?, position = ?, model = ? WHERE list_id = ? AND id = ?",
                            section.id.sql, newKey.sql, item.model.canonicalText.sql, list.sql, item.id.sql)
                    }
                } else {
                    try record(.item, item.id.rawValue, existed: false, in: &target)
                    try db.run(
                        "INSERT INTO items (list_id, id, section_id, position, model) VALUES (?, ?, ?, ?, ?)",
                        list.sql, item.id.sql, section.id.sql, key.sql, item.model.canonicalText.sql)
                }
            }
        }
        if orderChanged {
            // Every group got evenly spread keys: record the landmarks that
            // were in the group before and after, for item-query cursors.
            try recordRenumbering(
                nil,
                zip(body, sectionKeys).compactMap { section, key in
                    sectionsByID[section.id].map { (id: section.id.rawValue, old: $0.position, new: key) }
                }, in: target)
            for section in body where sectionsByID[section.id] != nil {
                let kept = zip(section.items, keys.spread(count: section.items.count)).compactMap { item, key in
                    itemsByID[item.id].flatMap { old in
                        old.section == section.id ? (id: item.id.rawValue, old: old.position, new: key) : nil
                    }
                }
                if !kept.isEmpty { try recordRenumbering(section.id, kept, in: target) }
            }
        }
        let bodySectionIDs = Set(body.map(\.id))
        for (id, old) in oldSections where !bodySectionIDs.contains(id) {
            try record(
                .section, id.rawValue, existed: true, section: nil, position: old.position, model: old.model,
                in: &target)
            try db.run("DELETE FROM sections WHERE list_id = ? AND id = ?", list.sql, id.sql)
        }
        return try finish(target, now: now)
    }

    // MARK: One op

    private func apply(_ op: ListOperation, to target: inout Target) throws(StoreError) {
        let list = target.id
        switch op {
        case .insertSection(let new, let at):
            try checkModel(new.model, "section model")
            for item in new.items { try checkModel(item.model, "model of item \(item.id.map { "\"\($0)\"" } ?? "")") }
            let sectionID = new.id ?? Identifier.generate()
            if try sectionExists(list, sectionID) {
                throw StoreError(.duplicateId, "section \"\(sectionID)\" already exists")
            }
            let items = new.items.map { ($0.id ?? Identifier.generate(), $0.model) }
            var seen = Set<Identifier>()
            for (id, _) in items {
                if !seen.insert(id).inserted {
                    throw StoreError(.duplicateId, "item \"\(id)\" appears twice in the new section")
                }
                if try itemRow(list, id) != nil {
                    throw StoreError(.duplicateId, "item \"\(id)\" already exists")
                }
            }
            let key = try place(.sections, at: at, excluding: nil, in: &target)
            try record(.section, sectionID.rawValue, existed: false, in: &target)
            target.changedGroups.insert(sectionID)
            try db.run(
                "INSERT INTO sections (list_id, id, position, model) VALUES (?, ?, ?, ?)",
                list.sql, sectionID.sql, key.sql, new.model.canonicalText.sql)
            for ((id, model), itemKey) in zip(items, keys.spread(count: items.count)) {
                try record(.item, id.rawValue, existed: false, in: &target)
                try db.run(
                    "INSERT INTO items (list_id, id, section_id, position, model) VALUES (?, ?, ?, ?, ?)",
                    list.sql, id.sql, sectionID.sql, itemKey.sql, model.canonicalText.sql)
            }

        case .updateSection(let id, let model):
            try checkModel(model, "section model")
            guard let old = try sectionRow(list, id) else { throw notFound(section: id) }
            guard old.model != model.canonicalText else { return }
            try record(
                .section, id.rawValue, existed: true, section: nil, position: old.position, model: old.model,
                in: &target)
            try db.run(
                "UPDATE sections SET model = ? WHERE list_id = ? AND id = ?",
                model.canonicalText.sql, list.sql, id.sql)

        case .moveSection(let id, let to):
            guard let old = try sectionRow(list, id) else { throw notFound(section: id) }
            if to >= 0 {
                let current = try rank(of: old.position, in: .sections, target)
                guard current != Int64(to) else { return }
            }
            let key = try place(.sections, at: to, excluding: id, excludedKey: old.position, in: &target)
            try record(
                .section, id.rawValue, existed: true, section: nil, position: old.position, model: old.model,
                in: &target)
            try db.run("UPDATE sections SET position = ? WHERE list_id = ? AND id = ?", key.sql, list.sql, id.sql)

        case .deleteSection(let id):
            guard let old = try sectionRow(list, id) else { throw notFound(section: id) }
            let items = try db.rows(
                "SELECT id, position, model FROM items WHERE list_id = ? AND section_id = ?", [list.sql, id.sql]
            ) { row in (row.identifier(0), row.int64(1), row.text(2)) }
            for (itemID, position, model) in items {
                try record(
                    .item, itemID.rawValue, existed: true, section: id, position: position, model: model,
                    in: &target)
            }
            try record(
                .section, id.rawValue, existed: true, section: nil, position: old.position, model: old.model,
                in: &target)
            try db.run("DELETE FROM items WHERE list_id = ? AND section_id = ?", list.sql, id.sql)
            try db.run("DELETE FROM sections WHERE list_id = ? AND id = ?", list.sql, id.sql)

        case .insertItem(let section, let new, let at):
            try checkModel(new.model, "item model")
            let itemID = new.id ?? Identifier.generate()
            // Both checks in one statement (one round trip on a remote database).
            let (sectionFound, itemTaken) =
                try db.first(
                    """
                    SELECT EXISTS (SELECT 1 FROM sections WHERE list_id = ? AND id = ?),
                        EXISTS (SELECT 1 FROM items WHERE list_id = ? AND id = ?)
                    """, list.sql, section.sql, list.sql, itemID.sql, read: { ($0.int64(0) != 0, $0.int64(1) != 0) }
                ) ?? (false, false)
            guard sectionFound else { throw notFound(section: section) }
            if itemTaken {
                throw StoreError(.duplicateId, "item \"\(itemID)\" already exists")
            }
            let key = try place(.items(section), at: at, excluding: nil, in: &target)
            try record(.item, itemID.rawValue, existed: false, in: &target)
            try db.run(
                "INSERT INTO items (list_id, id, section_id, position, model) VALUES (?, ?, ?, ?, ?)",
                list.sql, itemID.sql, section.sql, key.sql, new.model.canonicalText.sql)

        case .updateItem(let id, let model):
            try checkModel(model, "item model")
            guard let old = try itemRow(list, id) else { throw notFound(item: id) }
            guard old.model != model.canonicalText else { return }
            try record(
                .item, id.rawValue, existed: true, section: old.section, position: old.position,
                model: old.model, in: &target)
            try db.run(
                "UPDATE items SET model = ? WHERE list_id = ? AND id = ?",
                model.canonicalText.sql, list.sql, id.sql)

        case .moveItem(let id, let section, let to):
            guard let old = try itemRow(list, id) else { throw notFound(item: id) }
            let destination = section ?? old.section
            if destination != old.section {
                guard try sectionExists(list, destination) else { throw notFound(section: destination) }
            }
            if destination == old.section && to >= 0 {
                let current = try rank(of: old.position, in: .items(destination), target)
                guard current != Int64(to) else { return }
            }
            let key = try place(
                .items(destination), at: to, excluding: id,
                excludedKey: destination == old.section ? old.position : nil, in: &target)
            try record(
                .item, id.rawValue, existed: true, section: old.section, position: old.position,
                model: old.model, in: &target)
            try db.run(
                "UPDATE items SET section_id = ?, position = ? WHERE list_id = ? AND id = ?",
                destination.sql, key.sql, list.sql, id.sql)

        case .deleteItem(let id):
            guard let old = try itemRow(list, id) else { throw notFound(item: id) }
            try record(
                .item, id.rawValue, existed: true, section: old.section, position: old.position,
                model: old.model, in: &target)
            try db.run("DELETE FROM items WHERE list_id = ? AND id = ?", list.sql, id.sql)
        }
    }

    // MARK: Positions

    enum Group {
        case sections
        case items(Identifier)
    }

    /// A key for a sibling that will sit at `index` among the group's other
    /// members (all but `excluding`), or at the end when `index` is `nil`;
    /// renumbers the group when no key fits.
    ///
    /// On a hot list whose group this write has not changed yet, the rank
    /// index gives the neighbours in O(log n). Otherwise only the neighbours
    /// are read (an `OFFSET` walk of the position index, O(index)), never the
    /// whole group, and the group is counted only to word an error.
    /// - Throws: `positionOutOfRange` when `index` is outside `0...count`.
    private func place(
        _ group: Group, at index: Int?, excluding: Identifier?, excludedKey: Int64? = nil, in target: inout Target
    ) throws(StoreError) -> Int64 {
        let list = target.id
        let groupID: Identifier?
        switch group {
        case .sections: groupID = nil
        case .items(let section): groupID = section
        }
        defer { target.changedGroups.insert(groupID) }
        // A hot list's rank index finds the neighbours in O(log n) while this
        // write has not changed the group yet (then it describes the rows).
        if !target.changedGroups.contains(groupID), let hotIndex = hot.index(of: list),
            excluding == nil || excludedKey != nil
        {
            let ranked: RankedKeys
            switch group {
            case .sections: ranked = hotIndex.sections
            case .items(let section): ranked = hotIndex.items[section] ?? RankedKeys()
            }
            let skipped = excludedKey.map { ranked.rank(below: $0) }
            let count = ranked.count - (skipped == nil ? 0 : 1)
            func key(_ rank: Int) -> Int64? {
                guard rank >= 0, rank < count else { return nil }
                if let skipped, rank >= skipped { return ranked.key(at: rank + 1) }
                return ranked.key(at: rank)
            }
            if let index, index < 0 || index > count {
                // Out of range: the database path below words the error.
            } else {
                let lower = index.map { $0 == 0 ? nil : key($0 - 1) } ?? key(count - 1)
                let upper = index.flatMap { key($0) }
                if let placed = keys.between(lower, upper) { return placed }
                return try renumber(group, reserving: index, excluding: excluding?.rawValue ?? "", in: &target)
            }
        }
        let skip = excluding?.rawValue ?? ""
        let (table, filter, values): (String, String, [SQLValue])
        switch group {
        case .sections:
            (table, filter, values) = ("sections", "list_id = ? AND id != ?", [list.sql, skip.sql])
        case .items(let section):
            (table, filter, values) = (
                "items", "list_id = ? AND section_id = ? AND id != ?", [list.sql, section.sql, skip.sql]
            )
        }
        guard let index else {
            let last = try db.rows(
                "SELECT position FROM \(table) WHERE \(filter) ORDER BY position DESC LIMIT 1", values
            ) { $0.int64(0) }
            if let key = keys.between(last.first, nil) { return key }
            return try renumber(group, reserving: nil, excluding: skip, in: &target)
        }
        let neighbours =
            index < 0
            ? []
            : try db.rows(
                "SELECT position FROM \(table) WHERE \(filter) ORDER BY position LIMIT ? OFFSET ?",
                values + [(index == 0 ? 1 : 2).sql, max(0, index - 1).sql]
            ) { $0.int64(0) }
        guard index >= 0, index == 0 || !neighbours.isEmpty else {
            let count = try db.rows("SELECT count(*) FROM \(table) WHERE \(filter)", values) { $0.int64(0) }.first ?? 0
            let range = "\(index) is out of range 0...\(count)"
            switch group {
            case .sections: throw StoreError(.positionOutOfRange, "position \(range) for sections")
            case .items(let section):
                throw StoreError(.positionOutOfRange, "position \(range) for section \"\(section)\"")
            }
        }
        let lower: Int64? = index == 0 ? nil : neighbours.first
        let upper: Int64? = index == 0 ? neighbours.first : (neighbours.count > 1 ? neighbours[1] : nil)
        if let key = keys.between(lower, upper) { return key }
        return try renumber(group, reserving: index, excluding: skip, in: &target)
    }

    /// How many of the group's members have a key below `key`: from a hot
    /// list's rank index (O(log n)) while this write has not changed the
    /// group, else counted in the database (O(rank)).
    private func rank(of key: Int64, in group: Group, _ target: Target) throws(StoreError) -> Int64 {
        let list = target.id
        switch group {
        case .sections:
            if !target.changedGroups.contains(nil), let index = hot.index(of: list) {
                return Int64(index.sections.rank(below: key))
            }
            return try db.integer(
                "SELECT count(*) FROM sections WHERE list_id = ? AND position < ?", list.sql, key.sql)
        case .items(let section):
            if !target.changedGroups.contains(section), let index = hot.index(of: list) {
                return Int64(index.items[section]?.rank(below: key) ?? 0)
            }
            return try db.integer(
                "SELECT count(*) FROM items WHERE list_id = ? AND section_id = ? AND position < ?",
                list.sql, section.sql, key.sql)
        }
    }

    /// Spreads the group's keys evenly, leaving slot `index` free, and returns
    /// that slot's key. Every row whose key changes is a recorded change, and
    /// the renumbering itself is recorded for item-query cursors
    /// (``recordRenumbering(_:_:in:)``).
    private func renumber(_ group: Group, reserving index: Int?, excluding skip: String, in target: inout Target)
        throws(StoreError) -> Int64
    {
        let list = target.id
        switch group {
        case .sections:
            let rows = try db.rows(
                "SELECT id, position, model FROM sections WHERE list_id = ? AND id != ? ORDER BY position",
                [list.sql, skip.sql]
            ) { row in (row.identifier(0), row.int64(1), row.text(2)) }
            var spread = keys.spread(count: rows.count + 1)
            let reserved = spread.remove(at: index ?? rows.count)
            for ((id, position, model), key) in zip(rows, spread) where position != key {
                try record(
                    .section, id.rawValue, existed: true, section: nil, position: position, model: model,
                    in: &target)
                try db.run("UPDATE sections SET position = ? WHERE list_id = ? AND id = ?", key.sql, list.sql, id.sql)
            }
            try recordRenumbering(
                nil, zip(rows, spread).map { (id: $0.0.0.rawValue, old: $0.0.1, new: $0.1) }, in: target)
            return reserved
        case .items(let section):
            let rows = try db.rows(
                """
                SELECT id, position, model FROM items WHERE list_id = ? AND section_id = ? AND id != ?
                ORDER BY position
                """, [list.sql, section.sql, skip.sql]
            ) { row in (row.identifier(0), row.int64(1), row.text(2)) }
            var spread = keys.spread(count: rows.count + 1)
            let reserved = spread.remove(at: index ?? rows.count)
            for ((id, position, model), key) in zip(rows, spread) where position != key {
                try record(
                    .item, id.rawValue, existed: true, section: section, position: position, model: model,
                    in: &target)
                try db.run("UPDATE items SET position = ? WHERE list_id = ? AND id = ?", key.sql, list.sql, id.sql)
            }
            try recordRenumbering(
                section, zip(rows, spread).map { (id: $0.0.0.rawValue, old: $0.0.1, new: $0.1) }, in: target)
            return reserved
        }
    }

    /// Records that `group` (`nil`: the sections; else a section's items) was
    /// given new keys, with each member's key before and after, so an item
    /// query's cursor made before can be carried into the new keys (see
    /// `Migrations/0003_renumberings.sql`). Members whose key stays are listed
    /// too: any member is a landmark for a cursor's place.
    /// - Complexity: O(m log n) for the group's m members, as the renumbering itself.
    func recordRenumbering(
        _ group: Identifier?, _ members: [(id: String, old: Int64, new: Int64)], in target: Target
    ) throws(StoreError) {
        let list = target.id
        let generation =
            try db.first("SELECT renumbered FROM lists WHERE id = ?", list.sql, read: { $0.int64(0) }).map { $0 + 1 }
            ?? 1
        try db.run("UPDATE lists SET renumbered = ? WHERE id = ?", generation.sql, list.sql)
        try db.run(
            "INSERT INTO renumberings (list_id, generation, version, group_id) VALUES (?, ?, ?, ?)",
            list.sql, generation.sql, target.newVersion.sql, (group?.rawValue ?? "").sql)
        for member in members {
            try db.run(
                """
                INSERT INTO renumbered_keys (list_id, generation, old_position, entity_id, new_position)
                VALUES (?, ?, ?, ?, ?)
                """, list.sql, generation.sql, member.old.sql, member.id.sql, member.new.sql)
        }
    }

    // MARK: History and versions

    /// Records an entity's state before this write; the first record in a version wins.
    private func record(
        _ kind: Kind, _ entity: String, existed: Bool, section: Identifier? = nil, position: Int64? = nil,
        model: String? = nil, in target: inout Target
    ) throws(StoreError) {
        target.changed = true
        switch kind {
        case .section: target.changedGroups.insert(nil)
        case .item: target.changedGroups.insert(section)
        case .list: break
        }
        try db.run(
            """
            INSERT INTO history (list_id, version, kind, entity_id, existed, section_id, position, model)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
            """,
            target.id.sql, target.newVersion.sql, kind.rawValue.sql, entity.sql, .integer(existed ? 1 : 0),
            section.map { .text($0.rawValue) } ?? .null, position.map { .integer($0) } ?? .null,
            model.map { .text($0) } ?? .null)
    }

    /// Bumps the version when the write changed the list, and prunes history.
    /// - Returns: the write's result and, for the commit feed, the commit it
    ///   holds (none when nothing changed): one value, not a second one built alike.
    private func finish(_ target: Target, now: Int64) throws(StoreError) -> (WriteResult, [Commit]) {
        guard target.changed else {
            return (WriteResult(unchanged: target.id, epoch: target.epoch, version: target.version), [])
        }
        let version = target.newVersion
        try db.run("UPDATE lists SET version = ?, updated_at = ? WHERE id = ?", version.sql, now.sql, target.id.sql)
        try db.run(
            "INSERT INTO versions (list_id, version, committed_at) VALUES (?, ?, ?)",
            target.id.sql, version.sql, now.sql)
        let (change, touched) = try recordedChange(target)
        try prune(target.id, now: now, known: (version, target.floor, target.pruned))
        let commit = Commit(
            list: target.id, epoch: target.epoch, version: version, deleted: false, change: change,
            touched: target.renamed || touched.count > Commit.maxTouchedRows ? nil : touched.rows)
        return (WriteResult(previousVersion: target.version, commit: commit), [commit])
    }

    /// Raises the list's history floor to honour both retention limits, then
    /// deletes a bounded slice of the history below it, so pruning costs each
    /// write a small constant and never one long pause.
    /// - Returns: whether history rows remain below the floor.
    @discardableResult
    /// - Parameter known: the list's version, floor and pruned mark when the
    ///   caller has them (a write, which read them under its lock): one read less.
    func prune(
        _ list: Identifier, now: Int64, maxVersions: Int64 = 8, known: (Int64, Int64, Int64)? = nil
    ) throws(StoreError) -> Bool {
        var state = known
        if state == nil {
            state = try db.first(
                "SELECT version, history_floor, history_pruned FROM lists WHERE id = ?", list.sql,
                read: { row in (row.int64(0), row.int64(1), row.int64(2)) })
        }
        guard let (version, floor, pruned) = state else { return false }
        var newFloor = max(floor, version - configuration.historyVersions)
        let cutoff = now - ageMilliseconds
        // The state at V stays while it was current within the window, i.e. V+1 committed after the cutoff.
        // Looked for among the next `Self.ageScan` versions only: a write's cost must not grow
        // with the history (PostgreSQL's cached plan for this statement, made while the table was
        // small, read every version of the list and sorted them). None there: all of them aged out,
        // and the floor moves past them; the next writes look further.
        // Skipped while the first version above the floor is known to be recent: the last look
        // found version V committed at T, so until T + age no version at or above V ages out, and
        // the floor only rises (times from other instances' clocks can only delay pruning).
        if ageQuietUntil[list].map({ now >= $0 }) ?? true {
            let window = floor + Self.ageScan
            let firstRecent = try db.first(
                """
                SELECT version, committed_at FROM versions
                WHERE list_id = ? AND version > ? AND version <= ? AND committed_at >= ?
                ORDER BY version LIMIT 1
                """, list.sql, floor.sql, window.sql, cutoff.sql, read: { ($0.int64(0), $0.int64(1)) })
            newFloor = max(newFloor, min(version, (firstRecent?.0 ?? (window + 1)) - 1))
            if ageQuietUntil.count >= Self.ageHintLimit { ageQuietUntil.removeAll(keepingCapacity: true) }
            ageQuietUntil[list] = firstRecent.map { $0.1 + ageMilliseconds }
        }
        let upTo = pruned < newFloor ? min(newFloor, pruned + maxVersions) : pruned
        if upTo > pruned {
            try db.run(
                "DELETE FROM history WHERE list_id = ? AND version > ? AND version <= ?",
                list.sql, pruned.sql, upTo.sql)
            try db.run(
                "DELETE FROM versions WHERE list_id = ? AND version > ? AND version <= ?",
                list.sql, pruned.sql, upTo.sql)
            // A renumbering's record goes with its version's history: a cursor
            // made before it is then refused rather than followed inexactly.
            if let generation = try db.first(
                "SELECT max(generation) FROM renumberings WHERE list_id = ? AND version <= ?", list.sql, upTo.sql,
                read: { $0.optionalInt64(0) }) ?? nil
            {
                try db.run(
                    "DELETE FROM renumbered_keys WHERE list_id = ? AND generation <= ?", list.sql, generation.sql)
                try db.run(
                    "DELETE FROM renumberings WHERE list_id = ? AND generation <= ?", list.sql, generation.sql)
                try db.run("UPDATE lists SET renumber_floor = ? WHERE id = ?", generation.sql, list.sql)
            }
        }
        // The floor, the pruned mark and the flag idle pruning looks for, in
        // one statement. The flag is what the partial index `lists_to_prune`
        // names (migration 0013): it stays 0 while writes keep up, so this
        // update changes no indexed column (on PostgreSQL, a HOT update).
        if newFloor != floor || upTo != pruned {
            try db.run(
                "UPDATE lists SET history_floor = ?, history_pruned = ?, prune_pending = ? WHERE id = ?",
                newFloor.sql, upTo.sql, .integer(upTo < newFloor ? 1 : 0), list.sql)
        }
        return upTo < newFloor
    }

    /// One bounded step of pruning for lists nobody writes to: applies the age
    /// limit to lists with old versions and catches up deferred deletions.
    /// - Returns: whether more work may remain.
    package func pruneIdleStep(now: Int64) throws(StoreError) -> Bool {
        try pruneIdle(idleCandidates(now: now), now: now)
    }

    /// Up to 32 lists that may hold history to prune (old versions, deferred
    /// deletions), in id order.
    package func idleCandidates(now: Int64) throws(StoreError) -> [Identifier] {
        let cutoff = now - ageMilliseconds
        var lists = try db.rows(
            "SELECT DISTINCT list_id FROM versions WHERE committed_at < ? LIMIT 16", [cutoff.sql]
        ) { $0.identifier(0) }
        lists += try db.rows(
            "SELECT id FROM lists WHERE prune_pending = 1 ORDER BY id LIMIT 16", []
        ) { $0.identifier(0) }
        return Set(lists).sorted { $0.rawValue < $1.rawValue }
    }

    /// One bounded pruning step on each of `lists` (see ``prune(_:now:maxVersions:)``).
    /// - Returns: whether more work may remain.
    package func pruneIdle(_ lists: [Identifier], now: Int64) throws(StoreError) -> Bool {
        var more = false
        for list in lists {
            more = try prune(list, now: now, maxVersions: 64) || more
        }
        return more
    }

    /// Versions above the floor that one write looks at for the age limit.
    static let ageScan: Int64 = 64

    /// Lists whose ``ageQuietUntil`` one writer remembers before it forgets them all.
    static let ageHintLimit = 65_536

    private var ageMilliseconds: Int64 {
        let (seconds, attoseconds) = configuration.historyAge.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    // MARK: Lookups and checks

    func load(_ list: Identifier, expectedVersion: Int64?) throws(StoreError) -> Target {
        guard
            let (epoch, version, floor, pruned) = try db.first(
                "SELECT epoch, version, history_floor, history_pruned FROM lists WHERE id = ?", list.sql,
                read: { ($0.text(0), $0.int64(1), $0.int64(2), $0.int64(3)) })
        else { throw StoreError(.listNotFound, "list \"\(list)\" not found") }
        if let expectedVersion, expectedVersion != version {
            throw StoreError(
                .versionMismatch(expected: expectedVersion, actual: version),
                "list \"\(list)\" is at version \(version), not \(expectedVersion)")
        }
        try syncHotIndex(list, epoch: epoch, version: version, floor: floor)
        return Target(id: list, epoch: epoch, version: version, floor: floor, pruned: pruned)
    }

    private func sectionRow(_ list: Identifier, _ id: Identifier) throws(StoreError)
        -> (position: Int64, model: String)?
    {
        try db.first("SELECT position, model FROM sections WHERE list_id = ? AND id = ?", list.sql, id.sql) {
            (position: $0.int64(0), model: $0.text(1))
        }
    }

    private func sectionExists(_ list: Identifier, _ id: Identifier) throws(StoreError) -> Bool {
        try db.first("SELECT 1 FROM sections WHERE list_id = ? AND id = ?", list.sql, id.sql) { _ in true } ?? false
    }

    private func itemRow(_ list: Identifier, _ id: Identifier) throws(StoreError)
        -> (section: Identifier, position: Int64, model: String)?
    {
        try db.first("SELECT section_id, position, model FROM items WHERE list_id = ? AND id = ?", list.sql, id.sql) {
            (section: $0.identifier(0), position: $0.int64(1), model: $0.text(2))
        }
    }

    private func notFound(section id: Identifier) -> StoreError {
        StoreError(.sectionNotFound, "section \"\(id)\" not found")
    }

    private func notFound(item id: Identifier) -> StoreError {
        StoreError(.itemNotFound, "item \"\(id)\" not found")
    }

    private func checkModel(_ model: Model, _ what: String) throws(StoreError) {
        guard model.byteCount <= configuration.maxModelBytes else {
            throw StoreError(
                .modelTooLarge,
                "\(what) has \(model.byteCount) bytes, more than the limit of \(configuration.maxModelBytes)")
        }
    }

    private func checkName(_ name: String) throws(StoreError) {
        guard name.utf8.count <= configuration.maxNameBytes else {
            throw StoreError(
                .invalidName,
                "name has \(name.utf8.count) bytes, more than the limit of \(configuration.maxNameBytes)")
        }
    }

    /// Refuses a write that names more than ``StoreConfiguration/maxBodyElements``
    /// sections and items: every write path (create, replace, and each op
    /// batch, whose `insertSection`s carry items) passes here, so no single
    /// request adds more than the limit, whatever route it came by.
    /// - Parameters:
    ///   - count: the sections and items the write names.
    ///   - what: the write in words, for the detail (`inserting section "s"
    ///     with 300000 items into list "l"`).
    /// - Complexity: O(1); callers count in O(the write), never O(the list).
    private func checkElements(_ count: Int, _ what: @autoclosure () -> String) throws(StoreError) {
        guard count > configuration.maxBodyElements else { return }
        throw StoreError(
            .limitExceeded,
            "\(what()) names \(count) sections and items in one write; the limit is \(configuration.maxBodyElements)")
    }

    /// ``checkElements(_:_:)`` for a batch of ops: the sections and items its
    /// inserts add (an `insertSection` counts its items too), naming the
    /// largest insert.
    private func checkAddedElements(_ ops: [ListOperation], to list: Identifier) throws(StoreError) {
        var total = 0
        var largest: (index: Int, count: Int)?
        for (index, op) in ops.enumerated() {
            let added: Int
            switch op {
            case .insertSection(let section, _): added = 1 + section.items.count
            case .insertItem: added = 1
            default: added = 0
            }
            total += added
            if added > (largest?.count ?? 0) { largest = (index, added) }
        }
        guard total > configuration.maxBodyElements else { return }
        var what = "a batch of \(ops.count) ops on list \"\(list)\""
        if let largest, case .insertSection(let section, _) = ops[largest.index] {
            let name = section.id.map { "section \"\($0)\"" } ?? "a new section"
            what =
                "inserting \(name) with \(section.items.count) items into list \"\(list)\""
                + (ops.count > 1 ? " (op \(largest.index), among \(ops.count) ops)" : "")
        }
        try checkElements(total, what)
    }

    /// Validates a whole-list body (create, replace) and gives every entity an id.
    private func prepareBody(_ sections: [NewSection]) throws(StoreError) -> [SectionSnapshot] {
        try checkElements(sections.reduce(sections.count) { $0 + $1.items.count }, "a list body")
        var sectionIDs = Set<Identifier>()
        var itemIDs = Set<Identifier>()
        var result: [SectionSnapshot] = []
        for (index, section) in sections.enumerated() {
            try checkModel(section.model, "model of section \(index)")
            let id = section.id ?? Identifier.generate()
            guard sectionIDs.insert(id).inserted else {
                throw StoreError(.duplicateId, "section \"\(id)\" appears twice")
            }
            var items: [ItemSnapshot] = []
            for (itemIndex, item) in section.items.enumerated() {
                try checkModel(item.model, "model of item \(itemIndex) of section \"\(id)\"")
                let itemID = item.id ?? Identifier.generate()
                guard itemIDs.insert(itemID).inserted else {
                    throw StoreError(.duplicateId, "item \"\(itemID)\" appears twice")
                }
                items.append(ItemSnapshot(id: itemID, model: item.model))
            }
            result.append(SectionSnapshot(id: id, model: section.model, items: items))
        }
        return result
    }
}

@available(*, unavailable)
extension ListWriter: Sendable {}
