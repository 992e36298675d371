import ListModel
import Storage

/// The change engine's reads, on any connection (the writer's inside a write,
/// a reader's inside its read transaction): what a span of versions touched,
/// and a list's rank index built from its rows.
extension Database {
    /// Every entity touched after `version` up to `head` (the list's version
    /// as this transaction sees it: no history row is above it, and the
    /// upper bound lets PostgreSQL's planner see how few rows the span
    /// holds), with its state then (the earliest
    /// before-image after it) and now (its current row); entities that did not
    /// exist at either end are left out. One back in its state at `version`
    /// stays listed: a renumbering may have given a moved element its old key
    /// back while its neighbours got new ones, and the moves chosen are fewest
    /// only when it takes part.
    ///
    /// `separateSections` reads the sections holding touched items with a
    /// second statement instead of a `UNION ALL` branch of the first: one more
    /// round trip on PostgreSQL, but no materialized, sorted copy of every
    /// history row, which for a catch-up over 10,000 versions is 40% of the
    /// statement's time on SQLite. Writes (a few rows) keep the one statement.
    /// - Complexity: O(k log n) for k history rows after `version`.
    func touchedEntities(
        _ list: Identifier, since version: Int64, through head: Int64, expectedRows: Int = 16,
        separateSections: Bool = false
    ) throws(StoreError) -> TouchedEntities {
        var touched = TouchedEntities()
        touched.items.reserveCapacity(min(expectedRows, 1 << 16))
        // Entities seen that existed at neither end (not in `touched`).
        var sectionsGone = Set<Identifier>()
        var itemsGone = Set<Identifier>()
        // Current rows of the sections that hold a touched item at either end (see below).
        var holdingSections: [Identifier: TouchedEntities.SectionState] = [:]
        func visit(_ row: StoreRow) -> Bool {
            let kind = row.int64(0)
            if kind == Self.holdingSectionRow {
                holdingSections[row.identifier(1)] = TouchedEntities.SectionState(
                    key: row.int64(4), model: row.optionalText(5) ?? "null")
                return true
            }
            let existed = row.int64(2) != 0
            if kind == ListWriter.Kind.section.rawValue {
                let id = row.identifier(1)
                if touched.sections[id] == nil && !sectionsGone.contains(id) {
                    let before =
                        existed
                        ? TouchedEntities.SectionState(
                            key: row.optionalInt64(4) ?? 0, model: row.optionalText(5) ?? "null")
                        : nil
                    var after: TouchedEntities.SectionState?
                    if let key = row.optionalInt64(9), let model = row.optionalText(10) {
                        after = TouchedEntities.SectionState(key: key, model: model)
                    }
                    if before != nil || after != nil {
                        touched.sections[id] = (before, after)
                    } else {
                        sectionsGone.insert(id)
                    }
                }
            } else if kind == ListWriter.Kind.item.rawValue {
                let id = row.identifier(1)
                if touched.items[id] == nil && !itemsGone.contains(id) {
                    var before: TouchedEntities.ItemState?
                    if existed, let section = row.optionalText(3) {
                        before = TouchedEntities.ItemState(
                            section: Identifier(storedText: section), key: row.optionalInt64(4) ?? 0,
                            model: row.optionalText(5) ?? "null")
                    }
                    var after: TouchedEntities.ItemState?
                    if let section = row.optionalText(6), let key = row.optionalInt64(7),
                        let model = row.optionalText(8)
                    {
                        after = TouchedEntities.ItemState(
                            section: Identifier(storedText: section), key: key, model: model)
                    }
                    if before != nil || after != nil {
                        touched.items[id] = (before, after)
                    } else {
                        itemsGone.insert(id)
                    }
                }
            }
            return true
        }
        // The sections holding touched items but not touched themselves, once
        // (a pass over every touched item).
        var unlisted: Set<Identifier>?
        if separateSections {
            try forEach(
                """
                SELECT h.kind, h.entity_id, h.existed, h.section_id, h.position, h.model,
                    i.section_id, i.position, i.model, s.position, s.model, h.version
                FROM history h
                LEFT JOIN items i ON h.kind = 2 AND i.list_id = h.list_id AND i.id = h.entity_id
                LEFT JOIN sections s ON h.kind = 1 AND s.list_id = h.list_id AND s.id = h.entity_id
                WHERE h.list_id = ? AND h.version > ? AND h.version <= ?
                ORDER BY h.version
                """, [list.sql, version.sql, head.sql], visit)
            unlisted = touched.unlistedSections
            try readSections(unlisted ?? [], of: list, visit)
        } else {
            // One statement (one round trip on PostgreSQL): each history row with
            // the entity's current row beside it, in version order, then the
            // current rows of the sections its items were or are in (kind 3).
            try forEach(
                """
                WITH h AS (
                    SELECT h.version, h.kind, h.entity_id, h.existed, h.section_id, h.position, h.model,
                        i.section_id AS item_section, i.position AS item_position, i.model AS item_model,
                        s.position AS section_position, s.model AS section_model
                    FROM history h
                    LEFT JOIN items i ON h.kind = 2 AND i.list_id = h.list_id AND i.id = h.entity_id
                    LEFT JOIN sections s ON h.kind = 1 AND s.list_id = h.list_id AND s.id = h.entity_id
                    WHERE h.list_id = ? AND h.version > ? AND h.version <= ?
                )
                SELECT kind, entity_id, existed, section_id, position, model,
                    item_section, item_position, item_model, section_position, section_model, version
                FROM h
                UNION ALL
                SELECT 3, s.id, 1, NULL, s.position, s.model, NULL, NULL, NULL, NULL, NULL, ?
                FROM sections s
                WHERE s.list_id = ? AND s.id IN (
                    SELECT section_id FROM h WHERE kind = 2 AND section_id IS NOT NULL
                    UNION SELECT item_section FROM h WHERE item_section IS NOT NULL)
                ORDER BY 12
                """, [list.sql, version.sql, head.sql, Int64.max.sql, list.sql]
            ) { visit($0) }
        }
        // Only the sections of each item's states at the two ends, as listed:
        // not those of its states in between, which the statement also returns.
        for id in unlisted ?? touched.unlistedSections {
            if let state = holdingSections[id] {
                touched.sections[id] = (state, state)
                touched.holdingOnly.insert(id)
            }
        }
        touched.vanishedSections = sectionsGone
        touched.vanishedItems = itemsGone
        return touched
    }

    /// The current rows of `sections`, as ``holdingSectionRow`` rows, 100 ids a statement.
    private func readSections(
        _ sections: Set<Identifier>, of list: Identifier, _ visit: (StoreRow) -> Bool
    ) throws(StoreError) {
        let wanted = Array(sections)
        for start in stride(from: 0, to: wanted.count, by: 100) {
            let chunk = wanted[start..<min(wanted.count, start + 100)]
            try forEach(
                "SELECT 3, id, 1, NULL, position, model FROM sections WHERE list_id = ? AND id IN ("
                    + Array(repeating: "?", count: chunk.count).joined(separator: ", ") + ")",
                [list.sql] + chunk.map(\.sql), visit)
        }
    }

    /// What ``touchedEntities(_:since:through:expectedRows:separateSections:)`` gives,
    /// read from the history rows of the span alone: each entity's state at
    /// `version` is the before-image of its first row after it, its state now
    /// the after-image of its last (migration 0008); no row is joined with the
    /// entity's current row. Then the current rows of the sections holding
    /// touched items, as there.
    /// - Returns: `nil` when a row of the span has no after-image (written
    ///   before the migration): the caller reads the span with the join.
    /// - Complexity: O(k log k) for k history rows after `version`, plus
    ///   O(s log n) for s holding sections.
    func touchedEntitiesFromHistory(
        _ list: Identifier, since version: Int64, through head: Int64, expectedRows: Int = 16
    ) throws(StoreError) -> TouchedEntities? {
        var sections: [Identifier: (before: TouchedEntities.SectionState?, after: TouchedEntities.SectionState?)] =
            [:]
        var items: [Identifier: (before: TouchedEntities.ItemState?, after: TouchedEntities.ItemState?)] = [:]
        items.reserveCapacity(min(expectedRows, 1 << 16))
        var complete = true
        // In spans of the dialect's versions per statement, in order: on PostgreSQL
        // the rows of the next span are produced while these are read.
        let statement = """
            SELECT kind, entity_id, existed, section_id, position, model,
                after_state, after_section_id, after_position, after_model
            FROM history WHERE list_id = ? AND version > ? AND version <= ? ORDER BY version
            """
        let perStatement = dialect.historyVersionsPerStatement
        let spans = stride(from: version, to: head, by: perStatement).map { start in
            (sql: statement, values: [list.sql, start.sql, min(head, start + Int64(perStatement)).sql])
        }
        try forEach(spans) { row in
            let kind = row.int64(0)
            // The list's own rows (its name) have no after-image and take no part.
            guard kind != ListWriter.Kind.list.rawValue else { return true }
            guard let afterState = row.optionalInt64(6) else {
                complete = false
                return false
            }
            let id = row.identifier(1)
            if kind == ListWriter.Kind.item.rawValue {
                var after: TouchedEntities.ItemState?
                if afterState != 0, let section = row.optionalText(7) {
                    after = TouchedEntities.ItemState(
                        section: Identifier(storedText: section), key: row.optionalInt64(8) ?? 0,
                        model: row.optionalText(9) ?? "null")
                }
                if let index = items.index(forKey: id) {
                    items.values[index].after = after
                } else {
                    var before: TouchedEntities.ItemState?
                    if row.int64(2) != 0, let section = row.optionalText(3) {
                        before = TouchedEntities.ItemState(
                            section: Identifier(storedText: section), key: row.optionalInt64(4) ?? 0,
                            model: row.optionalText(5) ?? "null")
                    }
                    items[id] = (before, after)
                }
            } else if kind == ListWriter.Kind.section.rawValue {
                var after: TouchedEntities.SectionState?
                if afterState != 0 {
                    after = TouchedEntities.SectionState(
                        key: row.optionalInt64(8) ?? 0, model: row.optionalText(9) ?? "null")
                }
                if let index = sections.index(forKey: id) {
                    sections.values[index].after = after
                } else {
                    let before =
                        row.int64(2) != 0
                        ? TouchedEntities.SectionState(
                            key: row.optionalInt64(4) ?? 0, model: row.optionalText(5) ?? "null")
                        : nil
                    sections[id] = (before, after)
                }
            }
            return true
        }
        guard complete else { return nil }
        var touched = TouchedEntities()
        // Entities that existed at neither end are left out, as the join leaves
        // them out, and named apart, as the join names them. Removed in place:
        // they are few, and a filtered copy would hash every entry again.
        for (id, states) in sections where states.before == nil && states.after == nil {
            touched.vanishedSections.insert(id)
        }
        for (id, states) in items where states.before == nil && states.after == nil {
            touched.vanishedItems.insert(id)
        }
        for id in touched.vanishedSections { sections.removeValue(forKey: id) }
        for id in touched.vanishedItems { items.removeValue(forKey: id) }
        touched.sections = sections
        touched.items = items
        var holding: [Identifier: TouchedEntities.SectionState] = [:]
        try readSections(touched.unlistedSections, of: list) { row in
            holding[row.identifier(1)] = TouchedEntities.SectionState(
                key: row.int64(4), model: row.optionalText(5) ?? "null")
            return true
        }
        for (id, state) in holding { touched.sections[id] = (state, state) }
        return touched
    }

    /// The entities touched after `version`: from history alone when every row
    /// of the span has its after-image, else with the join.
    func touchedSpan(
        _ list: Identifier, since version: Int64, through head: Int64, separateSections: Bool = false
    ) throws(StoreError) -> TouchedEntities {
        let expectedRows = Int(clamping: head - version)
        let fromHistory = try touchedEntitiesFromHistory(
            list, since: version, through: head, expectedRows: expectedRows)
        if let fromHistory { return fromHistory }
        return try touchedEntities(
            list, since: version, through: head, expectedRows: expectedRows, separateSections: separateSections)
    }

    /// Stores the after-images of the history rows of `version` (migration
    /// 0008): `touched` is what that version touched, read by the writer
    /// inside the write with the join (``touchedEntities(_:since:through:expectedRows:separateSections:)``).
    /// One `UPDATE` per row, sent in the pipeline on PostgreSQL.
    /// - Complexity: O(k log n) for the version's k history rows.
    func recordAfterImages(_ touched: TouchedEntities, of list: Identifier, version: Int64) throws(StoreError) {
        let update = """
            UPDATE history SET after_state = ?, after_section_id = ?, after_position = ?, after_model = ?
            WHERE list_id = ? AND version = ? AND kind = ? AND entity_id = ?
            """
        func store(_ kind: ListWriter.Kind, _ id: Identifier, _ after: (section: SQLValue, key: Int64, model: String)?)
            throws(StoreError)
        {
            let image: [SQLValue] =
                after.map { [.integer(1), $0.section, .integer($0.key), .text($0.model)] } ?? [
                    .integer(0), .null, .null, .null,
                ]
            try run(update, image + [list.sql, version.sql, kind.rawValue.sql, id.sql])
        }
        for (id, states) in touched.items {
            try store(.item, id, states.after.map { (.text($0.section.rawValue), $0.key, $0.model) })
        }
        // A section listed only because it holds a touched item has no row of this version.
        for (id, states) in touched.sections where !touched.holdingOnly.contains(id) {
            try store(.section, id, states.after.map { (.null, $0.key, $0.model) })
        }
        for id in touched.vanishedItems { try store(.item, id, nil) }
        for id in touched.vanishedSections { try store(.section, id, nil) }
    }

    /// The `kind` of ``touchedEntities(_:since:through:expectedRows:separateSections:)``'s rows that are sections holding touched items.
    static let holdingSectionRow: Int64 = 3

    /// The list's rank index as of the rows this connection sees. - Complexity: O(n).
    func rankIndex(of list: Identifier) throws(StoreError) -> ListIndex {
        var index = ListIndex()
        index.sections = RankedKeys(
            sorted: try rows(
                "SELECT position FROM sections WHERE list_id = ? ORDER BY position", [list.sql]
            ) { $0.int64(0) })
        var section: Identifier?
        var keys: [Int64] = []
        try forEach(
            "SELECT section_id, position FROM items WHERE list_id = ? ORDER BY section_id, position", [list.sql]
        ) { row in
            let id = row.identifier(0)
            if id != section {
                if let section { index.items[section] = RankedKeys(sorted: keys) }
                section = id
                keys.removeAll(keepingCapacity: true)
            }
            keys.append(row.int64(1))
            return true
        }
        if let section { index.items[section] = RankedKeys(sorted: keys) }
        return index
    }
}
