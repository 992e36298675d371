import Storage

/// The change engine on the writer's connection: what a write or a span of
/// versions touched, and its net change, at a cost that grows with the change.
extension ListWriter {
    /// Every entity touched after `version`, with its state then (the earliest
    /// before-image after it) and now (its current row); entities that did not
    /// exist at either end are left out. One back in its state at `version`
    /// stays listed: a renumbering may have given a moved element its old key
    /// back while its neighbours got new ones, and the moves chosen are fewest
    /// only when it takes part.
    /// - Complexity: O(k log n) for k history rows after `version`.
    func touchedEntities(_ list: Identifier, since version: Int64, expectedRows: Int = 16) throws(StoreError)
        -> TouchedEntities
    {
        var touched = TouchedEntities()
        touched.items.reserveCapacity(min(expectedRows, 1 << 16))
        // Entities seen that existed at neither end (not in `touched`).
        var sectionsGone = Set<Identifier>()
        var itemsGone = Set<Identifier>()
        // Current rows of the sections that hold a touched item at either end (see below).
        var holdingSections: [Identifier: TouchedEntities.SectionState] = [:]
        // One statement (one round trip on PostgreSQL): each history row with
        // the entity's current row beside it, in version order, then the
        // current rows of the sections its items were or are in (kind 3).
        try db.forEach(
            """
            WITH h AS (
                SELECT h.version, h.kind, h.entity_id, h.existed, h.section_id, h.position, h.model,
                    i.section_id AS item_section, i.position AS item_position, i.model AS item_model,
                    s.position AS section_position, s.model AS section_model
                FROM history h
                LEFT JOIN items i ON h.kind = 2 AND i.list_id = h.list_id AND i.id = h.entity_id
                LEFT JOIN sections s ON h.kind = 1 AND s.list_id = h.list_id AND s.id = h.entity_id
                WHERE h.list_id = ? AND h.version > ?
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
            """, [list.sql, version.sql, Int64.max.sql, list.sql]
        ) { row in
            let kind = row.int64(0)
            if kind == Self.holdingSectionRow {
                holdingSections[row.identifier(1)] = TouchedEntities.SectionState(
                    key: row.int64(4), model: row.optionalText(5) ?? "null")
                return true
            }
            let existed = row.int64(2) != 0
            if kind == Kind.section.rawValue {
                let id = row.identifier(1)
                if touched.sections[id] == nil && !sectionsGone.contains(id) {
                    let before = existed
                        ? TouchedEntities.SectionState(key: row.optionalInt64(4) ?? 0, model: row.optionalText(5) ?? "null")
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
            } else if kind == Kind.item.rawValue {
                let id = row.identifier(1)
                if touched.items[id] == nil && !itemsGone.contains(id) {
                    var before: TouchedEntities.ItemState?
                    if existed, let section = row.optionalText(3) {
                        before = TouchedEntities.ItemState(
                            section: Identifier(storedText: section), key: row.optionalInt64(4) ?? 0,
                            model: row.optionalText(5) ?? "null")
                    }
                    var after: TouchedEntities.ItemState?
                    if let section = row.optionalText(6), let key = row.optionalInt64(7), let model = row.optionalText(8) {
                        after = TouchedEntities.ItemState(section: Identifier(storedText: section), key: key, model: model)
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
        // Only the sections of each item's states at the two ends, as listed:
        // not those of its states in between, which the statement also returns.
        for id in touched.unlistedSections {
            if let state = holdingSections[id] {
                touched.sections[id] = (state, state)
            }
        }
        return touched
    }

    /// The `kind` of ``touchedEntities(_:since:expectedRows:)``'s rows that are sections holding touched items.
    static let holdingSectionRow: Int64 = 3

    /// The list's rank index as of the current rows: the hot one, or one read
    /// from the database (O(n) once) and kept hot.
    func currentIndex(_ list: Identifier) throws(StoreError) -> ListIndex {
        if let index = hot.index(of: list) { return index }
        var index = ListIndex()
        index.sections = RankedKeys(
            sorted: try db.rows(
                "SELECT position FROM sections WHERE list_id = ? ORDER BY position", [list.sql]) { $0.int64(0) })
        var section: Identifier?
        var keys: [Int64] = []
        try db.forEach(
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
        hot.store(index, for: list)
        return index
    }

    /// With ``StoreConfiguration/sharedRows``, brings the list's hot index to
    /// the list's state `epoch`/`version` (read in the caller's transaction):
    /// kept when tagged with that state, moved forward by the entities touched
    /// since its own version (read from history, O(k log n)), or dropped when
    /// it is untagged, of another epoch, ahead, or older than the kept history
    /// (the next use rebuilds it from the rows). Without it, only this writer
    /// writes the rows and its indexes are always current.
    func syncHotIndex(_ list: Identifier, epoch: String, version: Int64, floor: Int64) throws(StoreError) {
        guard configuration.sharedRows, hot.index(of: list) != nil else { return }
        guard let tag = hot.tag(of: list), tag.epoch == epoch, tag.version <= version, tag.version >= floor,
            version - tag.version <= Self.maxCatchUpVersions
        else {
            hot.evict(list)
            return
        }
        guard tag.version < version else { return }
        let touched = try touchedEntities(list, since: tag.version, expectedRows: Int(version - tag.version))
        hot.apply(touched, to: list)
        hot.tag(list, epoch: epoch, version: version)
    }

    /// Beyond this many versions behind, a hot index is rebuilt rather than caught up.
    static let maxCatchUpVersions: Int64 = 10_000

    /// The net change a write just made, from version `target.version` to the
    /// next (`nil` when it cannot be condensed, see ``condense(_:of:with:_:)``);
    /// brings the list's hot index along. Runs inside the write.
    func recordedChange(_ target: Target) throws(StoreError) -> NetChange? {
        let touched = try touchedEntities(target.id, since: target.version)
        let index: ListIndex
        if hot.apply(touched, to: target.id), let moved = hot.index(of: target.id) {
            index = moved
        } else {
            index = try currentIndex(target.id)
        }
        let condensed = try condense(touched, of: target.id, with: index, "write to v\(target.newVersion)")
        hot.tag(target.id, epoch: target.epoch, version: target.newVersion)
        guard let (old, new) = condensed else { return nil }
        return NetChange(
            list: target.id, epoch: target.epoch, from: target.version, to: target.newVersion, old: old, new: new)
    }

    /// `touched` condensed with `index`; when the two disagree (a stale index),
    /// the index is rebuilt from the rows once and the condensing tried again.
    /// Both mismatches go to ``StoreConfiguration/onInconsistency``; a server
    /// answers a reset rather than trap or send a wrong change.
    /// - Returns: `nil` when even the rebuilt index disagrees.
    func condense(_ touched: TouchedEntities, of list: Identifier, with index: ListIndex, _ context: String)
        throws(StoreError) -> (old: [CondensedSection], new: [CondensedSection])?
    {
        do throws(IndexMismatch) {
            return try touched.condense(with: index)
        } catch {
            configuration.onInconsistency?(
                "list \(list), \(context): its rank index disagrees with the change (\(error)); rebuilding it")
        }
        hot.evict(list)
        let rebuilt = try currentIndex(list)
        do throws(IndexMismatch) {
            return try touched.condense(with: rebuilt)
        } catch {
            configuration.onInconsistency?(
                "list \(list), \(context): its rank index rebuilt from the rows disagrees with the change too "
                    + "(\(error)); answering without a net change")
            hot.evict(list)
            return nil
        }
    }

    /// What the writer answers to "changes since `version`".
    package enum ChangeLookup: Sendable {
        case change(NetChange)
        /// Outside the kept history, above the current version, or not condensable
        /// (see ``condense(_:of:with:_:)``): the caller sends a snapshot.
        case outsideHistory
    }

    /// The net change from `version` to the current version.
    /// - Complexity: O(k log n) for k entities touched since `version`, plus
    ///   O(n) once when the list's index is cold.
    package func changes(of list: Identifier, since version: Int64) throws(StoreError) -> ChangeLookup {
        guard
            let (epoch, current, floor) = try db.first(
                "SELECT epoch, version, history_floor FROM lists WHERE id = ?", list.sql,
                read: { ($0.text(0), $0.int64(1), $0.int64(2)) })
        else { throw StoreError(.listNotFound, "list \"\(list)\" not found") }
        guard version >= floor, version <= current else { return .outsideHistory }
        guard version < current else {
            return .change(NetChange(list: list, epoch: epoch, from: version, to: current, old: [], new: []))
        }
        try syncHotIndex(list, epoch: epoch, version: current, floor: floor)
        let touched = try touchedEntities(list, since: version, expectedRows: Int(current - version))
        let index = try currentIndex(list)
        let condensed = try condense(touched, of: list, with: index, "changes since v\(version)")
        hot.tag(list, epoch: epoch, version: current)
        guard let (old, new) = condensed else { return .outsideHistory }
        return .change(NetChange(list: list, epoch: epoch, from: version, to: current, old: old, new: new))
    }
}

/// The hot rank indexes' bookkeeping around transactions, for a store whose
/// writer loop lives in another module (`PostgresStore`), as ``WriterLoop`` does it.
extension ListWriter {
    /// A write starts in its own savepoint: ``writeRolledBack()`` undoes only its index changes.
    package func writeStarted() { hot.beginWrite() }
    /// The write rolled back to its savepoint: drop the indexes it changed.
    package func writeRolledBack() {
        hot.evictWrite()
        ageQuietUntil.removeAll()
    }
    /// The transaction committed: the indexes' changes are durable.
    package func transactionCommitted() { hot.markClean() }
    /// The transaction rolled back: drop every index changed in it.
    package func transactionRolledBack() {
        hot.evictDirty()
        ageQuietUntil.removeAll()
    }
    /// How many rank indexes were built from the rows (for tests).
    package var indexBuilds: Int { hot.builds }
}
