import Foundation
import JSON
import ListModel
import Storage

/// Reads lists on a reader thread; each public read runs in one read transaction.
package final class ListReader {
    let db: Database
    let configuration: StoreConfiguration

    package init(db: Database, configuration: StoreConfiguration) {
        self.db = db
        self.configuration = configuration
    }

    /// Runs `body` inside one read transaction, so every statement sees one state.
    func inTransaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try db.beginRead()
        do {
            let value = try body()
            try db.execute("COMMIT")
            return value
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }

    package struct Meta {
        package var head: ListHead
        var name: String
        var floor: Int64
    }

    package func meta(_ list: Identifier) throws(StoreError) -> Meta {
        guard
            let meta = try db.first(
                "SELECT epoch, version, name, history_floor FROM lists WHERE id = ?", list.sql,
                read: { row in
                    Meta(
                        head: ListHead(id: list, epoch: row.text(0), version: row.int64(1)), name: row.text(2),
                        floor: row.int64(3))
                })
        else { throw StoreError(.listNotFound, "list \"\(list)\" not found") }
        return meta
    }

    package func lists(limit: Int, after: Identifier?, in range: ClosedRange<String>?) throws(StoreError)
        -> [ListSummary]
    {
        let after = after?.rawValue ?? ""
        // Both bounds always bound the scan of the primary key; without a range,
        // U+007F is above every id's characters.
        let lower = range.map { $0.lowerBound } ?? ""
        let upper = range.map { $0.upperBound } ?? "\u{7F}"
        return try db.rows(
            """
            SELECT id, epoch, version, name,
                (SELECT count(*) FROM sections WHERE sections.list_id = lists.id),
                (SELECT count(*) FROM items WHERE items.list_id = lists.id)
            FROM lists WHERE id > ? AND id >= ? AND id <= ? ORDER BY id LIMIT ?
            """, [after.sql, lower.sql, upper.sql, limit.sql]
        ) { row in
            ListSummary(
                head: ListHead(id: row.identifier(0), epoch: row.text(1), version: row.int64(2)), name: row.text(3),
                sectionCount: row.int(4), itemCount: row.int(5))
        }
    }

    // MARK: Rows, the unit of reconstruction

    struct SectionRow {
        var position: Int64
        var model: String
    }

    struct ItemRow {
        var section: Identifier
        var position: Int64
        var model: String
    }

    /// The list's rows: what the tables hold at one version.
    struct State {
        var name: String
        var sections: [Identifier: SectionRow]
        var items: [Identifier: ItemRow]

        func snapshot(of head: ListHead) -> ListSnapshot {
            var itemsBySection: [Identifier: [(Int64, Identifier, String)]] = [:]
            for (id, item) in items {
                itemsBySection[item.section, default: []].append((item.position, id, item.model))
            }
            let sections = self.sections.sorted { ($0.value.position, $0.key) < ($1.value.position, $1.key) }
                .map { id, section in
                    let items = (itemsBySection[id] ?? []).sorted { ($0.0, $0.1) < ($1.0, $1.1) }
                        .map { ItemSnapshot(id: $0.1, model: Model(trustedCanonicalText: $0.2)) }
                    return SectionSnapshot(id: id, model: Model(trustedCanonicalText: section.model), items: items)
                }
            return ListSnapshot(id: head.id, name: name, epoch: head.epoch, version: head.version, sections: sections)
        }
    }

    func currentState(_ list: Identifier, name: String) throws(StoreError) -> State {
        let sections = try db.rows("SELECT id, position, model FROM sections WHERE list_id = ?", [list.sql]) { row in
            (row.identifier(0), SectionRow(position: row.int64(1), model: row.text(2)))
        }
        let items = try db.rows(
            "SELECT id, section_id, position, model FROM items WHERE list_id = ?", [list.sql]
        ) { row in
            (row.identifier(0), ItemRow(section: row.identifier(1), position: row.int64(2), model: row.text(3)))
        }
        return State(
            name: name, sections: Dictionary(sections, uniquingKeysWith: { first, _ in first }),
            items: Dictionary(items, uniquingKeysWith: { first, _ in first }))
    }

    package func snapshot(_ list: Identifier) throws(StoreError) -> ListSnapshot {
        try inTransaction { () throws(StoreError) in
            let meta = try meta(list)
            return try currentState(list, name: meta.name).snapshot(of: meta.head)
        }
    }

    struct HistoryRow {
        var version: Int64
        var kind: Int64
        var entity: String
        var existed: Bool
        var section: String?
        var position: Int64?
        var model: String?
    }

    /// The current snapshot and the snapshots at `versions` inside the window.
    ///
    /// The state at V is the current rows with each entity touched after V
    /// replaced by its before-image from the earliest version after V.
    /// - Complexity: O(rows + h·k) for h history rows newer than the oldest
    ///   requested version and k requested versions.
    package func snapshots(_ list: Identifier, at versions: Set<Int64>) throws(StoreError) -> VersionedSnapshots {
        try inTransaction { () throws(StoreError) in
            let meta = try meta(list)
            let current = try currentState(list, name: meta.name)
            let currentSnapshot = current.snapshot(of: meta.head)
            let wanted = versions.filter { $0 >= meta.floor && $0 <= meta.head.version }
            var result: [Int64: ListSnapshot] = [:]
            if let oldest = wanted.min() {
                let history = try db.rows(
                    """
                    SELECT version, kind, entity_id, existed, section_id, position, model FROM history
                    WHERE list_id = ? AND version > ? ORDER BY version
                    """, [list.sql, oldest.sql]
                ) { row in
                    HistoryRow(
                        version: row.int64(0), kind: row.int64(1), entity: row.text(2), existed: row.int64(3) != 0,
                        section: row.optionalText(4), position: row.optionalInt64(5), model: row.optionalText(6))
                }
                for version in wanted {
                    if version == meta.head.version {
                        result[version] = currentSnapshot
                        continue
                    }
                    var state = current
                    var seen = Set<String>()
                    for row in history where row.version > version {
                        guard seen.insert("\(row.kind):\(row.entity)").inserted else { continue }
                        apply(row, to: &state)
                    }
                    let head = ListHead(id: list, epoch: meta.head.epoch, version: version)
                    result[version] = state.snapshot(of: head)
                }
            }
            return VersionedSnapshots(current: currentSnapshot, atVersion: result, historyFloor: meta.floor)
        }
    }

    private func apply(_ row: HistoryRow, to state: inout State) {
        let id = Identifier(storedText: row.entity)
        switch row.kind {
        case ListWriter.Kind.list.rawValue:
            if let name = row.model { state.name = name }
        case ListWriter.Kind.section.rawValue:
            if row.existed, let position = row.position, let model = row.model {
                state.sections[id] = SectionRow(position: position, model: model)
            } else {
                state.sections[id] = nil
            }
        default:
            if row.existed, let section = row.section, let position = row.position, let model = row.model {
                state.items[id] = ItemRow(section: Identifier(storedText: section), position: position, model: model)
            } else {
                state.items[id] = nil
            }
        }
    }
}

@available(*, unavailable)
extension ListReader: Sendable {}
