import JSON
import Storage

extension ListReader {
    /// The most items one page examines when no index serves its filter; a
    /// page that reaches it ends there (maybe short, maybe empty) with a `next`.
    package static let scanLimit = 10_000
    /// Sections read per statement while walking the list.
    static let sectionBatch = 64
    /// Candidates read per statement while a filter discards some.
    static let filteredBatch = 256

    /// A section being walked: its id and position key.
    private struct SectionPlace {
        var id: Identifier
        var position: Int64
    }

    /// One candidate item: its id, position key and canonical model text.
    private struct Candidate {
        var id: Identifier
        var position: Int64
        var model: String
    }

    /// Where candidates come from: every item, or the rows of one declared
    /// index whose value equals the condition's.
    private enum Source {
        case items
        case index(path: String, value: String)
        /// SQLite's FTS5 trigram table, with this MATCH pattern.
        case text(String)
    }

    /// `q` terms shorter than this (in Unicode scalars) have no trigram to look up.
    package static let shortestTextTerm = 3

    /// A page of items in list order: sections in order and, in each, items in
    /// order, each read by index from where the cursor left off.
    ///
    /// The cursor records the place (section key, item key, id) of the last
    /// item returned (or, after a bounded scan, the last examined): the next
    /// page starts right after that place, wherever that item has gone since,
    /// so a walk across writes never repeats or skips an item that stayed in
    /// place. (Only a renumbering of that place's sibling group, when no gapped
    /// key fits, can shift the keys under it.)
    ///
    /// A `where` on a declared path reads only that index's matches; other
    /// filters are checked on each candidate. Without an index the page scans
    /// at most ``scanLimit`` items.
    /// - Complexity: O((page + s) · log n) for s sections walked, unfiltered
    ///   or served by an index; O(min(n, scanLimit) · log n) for a scan.
    package func items(_ list: Identifier, query: ItemQuery) throws(StoreError) -> ItemPage {
        guard (1...configuration.maxPageSize).contains(query.limit) else {
            throw StoreError(
                .limitExceeded, "limit \(query.limit) is out of range 1...\(configuration.maxPageSize)")
        }
        var start: ItemCursor?
        if let cursor = query.after {
            start = ItemCursor(cursor)
            guard start != nil else {
                throw StoreError(.invalidCursor, "cursor \"\(cursor.prefix(200))\" was not made by this server")
            }
        }
        return try inTransaction { () throws(StoreError) in
            let meta = try meta(list)
            var only: SectionPlace?
            if let section = query.section {
                guard
                    let position = try db.first(
                        "SELECT position FROM sections WHERE list_id = ? AND id = ?", list.sql, section.sql,
                        read: { $0.int64(0) })
                else { throw StoreError(.sectionNotFound, "section \"\(section)\" not found") }
                only = SectionPlace(id: section, position: position)
            }
            let filtered = !query.conditions.isEmpty || query.text != nil
            var (source, plan) = try choosePlan(list, query)
            if case .text(let pattern) = source {
                if let page = try textPage(list, query, only: only, start: start, pattern: pattern) {
                    return ItemPage(
                        entries: page.entries, nextCursor: page.next, version: meta.head.version, plan: .text)
                }
                (source, plan) = (.items, .scan)
            }
            var page = PageBuilder(limit: query.limit, bounded: plan == .scan)
            try walkSections(list, only: only, from: start?.sectionKey) { section throws(StoreError) in
                var after: (Int64, String)?
                if let start, start.sectionKey == section.position { after = (start.itemKey, start.item) }
                while true {
                    let count = filtered ? Self.filteredBatch : page.remaining + 1
                    let batch = try candidates(list, section.id, source, after: after, count: count)
                    for candidate in batch {
                        let model = Model(trustedCanonicalText: candidate.model)
                        let matches = try filtered ? Self.matches(model, query) : true
                        let place = ItemCursor(
                            sectionKey: section.position, itemKey: candidate.position, item: candidate.id.rawValue)
                        guard
                            page.take(
                                matches ? ItemPage.Entry(section: section.id, item: ItemSnapshot(id: candidate.id, model: model)) : nil,
                                at: place)
                        else { return false }
                    }
                    guard batch.count == count, let last = batch.last else { return true }
                    after = (last.position, last.id.rawValue)
                }
            }
            return ItemPage(
                entries: page.entries, nextCursor: page.more ? page.cursor?.text : nil, version: meta.head.version,
                plan: plan)
        }
    }

    /// The entries of a page as candidates stream by, and where it stopped.
    private struct PageBuilder {
        let limit: Int
        let bounded: Bool
        var entries: [ItemPage.Entry] = []
        var cursor: ItemCursor?
        var more = false
        var examined = 0

        init(limit: Int, bounded: Bool) {
            self.limit = limit
            self.bounded = bounded
        }

        var remaining: Int { limit - entries.count }

        /// Takes `entry` (`nil`: the candidate did not match) at `place`; `false` when the page is done.
        mutating func take(_ entry: ItemPage.Entry?, at place: ItemCursor) -> Bool {
            if entry != nil, entries.count == limit {
                more = true
                return false
            }
            examined += 1
            if let entry {
                entries.append(entry)
                cursor = place
            } else if bounded, examined >= ListReader.scanLimit {
                // The scan budget is spent: the next page resumes after this
                // item (those since the last entry did not match).
                cursor = place
                more = true
                return false
            }
            return true
        }
    }

    /// Chooses where a query's candidates come from, and says so.
    private func choosePlan(_ list: Identifier, _ query: ItemQuery) throws(StoreError) -> (Source, QueryPlan) {
        if query.conditions.isEmpty && query.text == nil { return (.items, .listOrder) }
        let declared = Set(
            try db.rows("SELECT path FROM list_indexes WHERE list_id = ?", [list.sql]) { $0.text(0) })
        for condition in query.conditions {
            let path = condition.path.joined(separator: ".")
            if declared.contains(path) {
                return (.index(path: path, value: condition.value.canonicalText), .index(condition.path))
            }
        }
        if let text = query.text, text.unicodeScalars.count >= Self.shortestTextTerm, case .sqlite = db.backend,
            try db.first("SELECT 1 FROM list_text_indexes WHERE list_id = ?", list.sql, read: { _ in true }) != nil
        {
            return (.text("\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""), .text)
        }
        return (.items, .scan)
    }

    /// A page answered from the text index: every candidate of the list is
    /// read (at most ``scanLimit``; `nil` beyond, and the caller scans),
    /// checked exactly, put in list order and cut after the cursor.
    /// `CROSS JOIN` keeps the text index the outer loop: left to itself,
    /// SQLite walks the list's items and runs the MATCH once per item.
    /// - Complexity: O(m log m) for the term's m candidates in the list.
    private func textPage(
        _ list: Identifier, _ query: ItemQuery, only: SectionPlace?, start: ItemCursor?, pattern: String
    ) throws(StoreError) -> (entries: [ItemPage.Entry], next: String?)? {
        struct Row {
            var section: Identifier
            var place: ItemCursor
            var model: String
        }
        let rows = try db.rows(
            """
            SELECT i.id, i.section_id, s.position, i.position, i.model FROM item_text
            CROSS JOIN items i ON i.rowid = item_text.rowid
            CROSS JOIN sections s ON s.list_id = i.list_id AND s.id = i.section_id
            WHERE item_text MATCH ? AND i.list_id = ? LIMIT ?
            """, [pattern.sql, list.sql, (Self.scanLimit + 1).sql]
        ) {
            Row(
                section: $0.identifier(1),
                place: ItemCursor(sectionKey: $0.int64(2), itemKey: $0.int64(3), item: $0.text(0)), model: $0.text(4))
        }
        guard rows.count <= Self.scanLimit else { return nil }
        func key(_ place: ItemCursor) -> (Int64, Int64, String) { (place.sectionKey, place.itemKey, place.item) }
        var entries: [ItemPage.Entry] = []
        var last: ItemCursor?
        for row in rows.sorted(by: { key($0.place) < key($1.place) }) {
            if let only, row.section != only.id { continue }
            if let start, key(row.place) <= key(start) { continue }
            let model = Model(trustedCanonicalText: row.model)
            guard try Self.matches(model, query) else { continue }
            if entries.count == query.limit { return (entries, last?.text) }
            entries.append(
                ItemPage.Entry(section: row.section, item: ItemSnapshot(id: Identifier(storedText: row.place.item), model: model)))
            last = row.place
        }
        return (entries, nil)
    }

    /// Calls `visit` with each section in order (only `only` when set), from
    /// position `from` on, until it returns `false`.
    private func walkSections(
        _ list: Identifier, only: SectionPlace?, from: Int64?,
        _ visit: (SectionPlace) throws(StoreError) -> Bool
    ) throws(StoreError) {
        if let only {
            if let from, only.position < from { return }
            _ = try visit(only)
            return
        }
        // Ids are never empty, so this takes in the sections at `from` itself
        // (the cursor's items resume inside one).
        var after: (Int64, String) = (from ?? Int64.min, "")
        while true {
            let batch = try db.rows(
                """
                SELECT id, position FROM sections WHERE list_id = ? AND (position, id) > (?, ?)
                ORDER BY position, id LIMIT ?
                """, [list.sql, after.0.sql, after.1.sql, Self.sectionBatch.sql]
            ) { SectionPlace(id: $0.identifier(0), position: $0.int64(1)) }
            for section in batch {
                guard try visit(section) else { return }
            }
            guard batch.count == Self.sectionBatch, let last = batch.last else { return }
            after = (last.position, last.id.rawValue)
        }
    }

    /// Up to `count` candidates of `section` in order, after the place `after`
    /// (position key, id) when set.
    private func candidates(
        _ list: Identifier, _ section: Identifier, _ source: Source, after: (Int64, String)?, count: Int
    ) throws(StoreError) -> [Candidate] {
        let lower = after ?? (Int64.min, "")
        switch source {
        case .text:
            return []
        case .items:
            return try db.rows(
                """
                SELECT id, position, model FROM items
                WHERE list_id = ? AND section_id = ? AND (position, id) > (?, ?) ORDER BY position, id LIMIT ?
                """, [list.sql, section.sql, lower.0.sql, lower.1.sql, count.sql]
            ) { Candidate(id: $0.identifier(0), position: $0.int64(1), model: $0.text(2)) }
        case .index(let path, let value):
            return try db.rows(
                """
                SELECT i.id, v.position, i.model FROM item_values v
                JOIN items i ON i.list_id = v.list_id AND i.id = v.item_id
                WHERE v.list_id = ? AND v.path = ? AND v.value = ? AND v.section_id = ?
                    AND (v.position, v.item_id) > (?, ?)
                ORDER BY v.position, v.item_id LIMIT ?
                """, [list.sql, path.sql, value.sql, section.sql, lower.0.sql, lower.1.sql, count.sql]
            ) { Candidate(id: $0.identifier(0), position: $0.int64(1), model: $0.text(2)) }
        }
    }

    static func matches(_ model: Model, _ query: ItemQuery) throws(StoreError) -> Bool {
        if query.conditions.isEmpty && query.text == nil { return true }
        let value = try model.jsonValue()
        for condition in query.conditions {
            guard let found = value.value(atPath: condition.path),
                found.canonicalText == condition.value.canonicalText
            else { return false }
        }
        if let text = query.text, !text.isEmpty {
            return containsString(value, text)
        }
        return true
    }

    /// Whether any string value in `value` contains `text`, ignoring case.
    static func containsString(_ value: JSONValue, _ text: String) -> Bool {
        switch value {
        case .string(let string):
            return string.range(of: text, options: .caseInsensitive) != nil
        case .array(let elements):
            return elements.contains { containsString($0, text) }
        case .object(let members):
            return members.contains { containsString($0.value, text) }
        default:
            return false
        }
    }

    // MARK: Declared indexes

    /// The list's declared index paths, in path order, and whether it has a text index.
    package func indexes(_ list: Identifier) throws(StoreError) -> ListIndexes {
        try inTransaction { () throws(StoreError) in
            _ = try meta(list)
            let paths = try db.rows("SELECT path FROM list_indexes WHERE list_id = ? ORDER BY path", [list.sql]) {
                $0.text(0).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            }
            let text =
                try db.first("SELECT 1 FROM list_text_indexes WHERE list_id = ?", list.sql, read: { _ in true }) != nil
            return ListIndexes(paths: paths, text: text)
        }
    }
}

/// The position an items page ended at, as opaque URL-safe text.
struct ItemCursor {
    var sectionKey: Int64
    var itemKey: Int64
    var item: String

    init(sectionKey: Int64, itemKey: Int64, item: String) {
        self.sectionKey = sectionKey
        self.itemKey = itemKey
        self.item = item
    }

    init?(_ text: String) {
        let parts = text.split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let section = Int64(parts[0]), let item = Int64(parts[1]),
            Identifier(String(parts[2])) != nil
        else { return nil }
        self.init(sectionKey: section, itemKey: item, item: String(parts[2]))
    }

    var text: String { "\(sectionKey).\(itemKey).\(item)" }
}
