import JSON
import ListModel
import ListView
import Storage

extension ListReader {
    /// The default of ``StoreConfiguration/itemQueryBudget``: the most rows
    /// (candidate items, sections walked) one page examines, whatever serves
    /// its filter; a page that reaches it ends there (maybe short, maybe
    /// empty) with a `next`.
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
    /// The cursor records the place (section key and id, item key and id) of
    /// the last item returned (or, after a bounded scan, the last examined),
    /// and how many renumberings the list had had: the next page starts right
    /// after that place, wherever that item has gone since, so a walk across
    /// writes never repeats or skips an item that stayed in place. When a
    /// sibling group on the cursor's path was renumbered since (no gapped key
    /// fitted), the place is first carried into the new keys through the
    /// recorded renumberings (``relocate(_:in:now:)``).
    ///
    /// A `where` on a declared path reads only that index's matches; other
    /// filters are checked on each candidate. Whatever the plan, a page
    /// examines at most ``StoreConfiguration/itemQueryBudget`` rows (each
    /// candidate item, each section walked): a filter that rarely holds among
    /// the candidates ends the page there, short or empty, with a cursor after
    /// the last row examined, so a walk still finds every match once.
    /// - Complexity: O((page + s) · log n) for s sections walked, unfiltered
    ///   or when every candidate matches; O(b · log n) at most, for the budget
    ///   b, independent of the list's size.
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
            let generation =
                try db.first(
                    "SELECT renumbered FROM lists WHERE id = ?", list.sql, read: { $0.int64(0) }) ?? 0
            if let cursor = start { start = try relocate(cursor, in: list, now: generation) }
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
                if let page = try textPage(
                    list, query, only: only, start: start, generation: generation, pattern: pattern)
                {
                    var answer = ItemPage(
                        entries: page.entries, nextCursor: page.next, version: meta.head.version, plan: .text)
                    answer.examined = page.examined
                    return answer
                }
                (source, plan) = (.items, .scan)
            }
            var page = PageBuilder(limit: query.limit, budget: max(1, configuration.itemQueryBudget))
            try walkSections(list, only: only, from: start.map { ($0.sectionKey, $0.section ?? "") }) {
                section throws(StoreError) in
                let isStart = start.map { $0.sectionKey == section.position && $0.section == section.id.rawValue }
                // Resuming inside the cursor's section is the same walk; any other section costs a row.
                if isStart != true {
                    guard
                        page.walk(
                            ItemCursor(
                                generation: generation, sectionKey: section.position, section: section.id.rawValue,
                                itemKey: Int64.min, item: ""))
                    else { return false }
                }
                var after: (Int64, String)?
                if let start, start.sectionKey == section.position, start.section == section.id.rawValue {
                    after = (start.itemKey, start.item)
                }
                while true {
                    // One row past the page or the budget: enough to know whether there is more.
                    let count = min(filtered ? Self.filteredBatch : page.remaining + 1, page.unspent + 1)
                    let batch = try candidates(list, section.id, source, after: after, count: count)
                    for candidate in batch {
                        let model = Model(trustedCanonicalText: candidate.model)
                        let matches = try filtered ? Self.matches(model, query) : true
                        let place = ItemCursor(
                            generation: generation, sectionKey: section.position, section: section.id.rawValue,
                            itemKey: candidate.position, item: candidate.id.rawValue)
                        guard
                            page.take(
                                matches
                                    ? ItemPage.Entry(
                                        section: section.id, item: ItemSnapshot(id: candidate.id, model: model)) : nil,
                                at: place)
                        else { return false }
                    }
                    guard batch.count == count, let last = batch.last else { return true }
                    after = (last.position, last.id.rawValue)
                }
            }
            var answer = ItemPage(
                entries: page.entries, nextCursor: page.more ? page.cursor?.text : nil, version: meta.head.version,
                plan: plan)
            answer.examined = page.examined
            return answer
        }
    }

    /// Carries `cursor` into the list's keys at renumbering count `generation`.
    ///
    /// Each renumbering since the cursor was made, of the sections or of the
    /// items of the cursor's section, maps keys in order and recorded every
    /// member of the group with its key before and after. The cursor's new
    /// place is right after the last member at or before its old place (or
    /// before the whole group when none was). Why this neither repeats nor
    /// skips: an item that stayed in place was a member, and compared with
    /// that landmark before exactly as it compares after, since the mapping
    /// keeps order; so it is before the new place exactly when it was before
    /// the old one. When the landmark is another section than the cursor's,
    /// the cursor's section was moved or deleted (its items did not stay in
    /// place), and the landmark section's items were all before the cursor:
    /// the new place is after them all.
    /// - Throws: `invalidCursor` when a renumbering's record has been pruned
    ///   with its version's history, or the cursor counts more renumberings
    ///   than the list has (it was made before the list was deleted and
    ///   created again).
    /// - Complexity: O(r log n) for r renumberings to follow.
    private func relocate(_ cursor: ItemCursor, in list: Identifier, now generation: Int64) throws(StoreError)
        -> ItemCursor
    {
        var cursor = cursor
        guard let made = cursor.generation else {
            // A first-format cursor: its section is the one at its key, as then.
            cursor.section =
                try db.first(
                    "SELECT id FROM sections WHERE list_id = ? AND position = ? ORDER BY id LIMIT 1", list.sql,
                    cursor.sectionKey.sql, read: { $0.text(0) }) ?? ""
            cursor.generation = generation
            return cursor
        }
        if made == generation { return cursor }
        guard made < generation else {
            throw StoreError(
                .invalidCursor,
                "the cursor was made for an earlier list \"\(list)\" (since deleted); start again without after")
        }
        let floor = try db.first("SELECT renumber_floor FROM lists WHERE id = ?", list.sql, read: { $0.int64(0) }) ?? 0
        guard made >= floor else {
            throw StoreError(
                .invalidCursor,
                "list \"\(list)\" was renumbered since the cursor was made, and the record that would carry the "
                    + "cursor over was pruned with the list's old history; start again without after")
        }
        let steps = try db.rows(
            """
            SELECT generation, group_id FROM renumberings
            WHERE list_id = ? AND generation > ? AND generation <= ? AND group_id IN ('', ?) ORDER BY generation
            """, [list.sql, made.sql, generation.sql, (cursor.section ?? "").sql]
        ) { ($0.int64(0), $0.text(1)) }
        for (step, group) in steps {
            if group.isEmpty {
                if let (key, id) = try landmark(list, step, at: (cursor.sectionKey, cursor.section ?? "")) {
                    if id != cursor.section { (cursor.itemKey, cursor.item) = (Int64.max, "") }
                    (cursor.sectionKey, cursor.section) = (key, id)
                } else {
                    (cursor.sectionKey, cursor.section) = (Int64.min, "")
                    (cursor.itemKey, cursor.item) = (Int64.min, "")
                }
            } else if group == cursor.section, !cursor.item.isEmpty {
                (cursor.itemKey, cursor.item) =
                    try landmark(list, step, at: (cursor.itemKey, cursor.item)) ?? (Int64.min, "")
            }
        }
        cursor.generation = generation
        return cursor
    }

    /// The new key and id of the last member of renumbering `generation`
    /// whose old place (key, id) is at or before `place`.
    private func landmark(_ list: Identifier, _ generation: Int64, at place: (Int64, String)) throws(StoreError)
        -> (Int64, String)?
    {
        try db.first(
            """
            SELECT new_position, entity_id FROM renumbered_keys
            WHERE list_id = ? AND generation = ? AND (old_position, entity_id) <= (?, ?)
            ORDER BY old_position DESC, entity_id DESC LIMIT 1
            """, list.sql, generation.sql, place.0.sql, place.1.sql, read: { ($0.int64(0), $0.text(1)) })
    }

    /// The entries of a page as candidates stream by, and where it stopped:
    /// when the page is full, or when it has examined `budget` rows.
    private struct PageBuilder {
        let limit: Int
        let budget: Int
        var entries: [ItemPage.Entry] = []
        var cursor: ItemCursor?
        var more = false
        var examined = 0

        init(limit: Int, budget: Int) {
            self.limit = limit
            self.budget = budget
        }

        var remaining: Int { limit - entries.count }

        /// Rows the page may still examine.
        var unspent: Int { max(0, budget - examined) }

        /// Counts a section walked into, `place` being before its first item;
        /// `false` when the budget is spent (the next page starts there).
        /// Either way everything before `place` has been examined, so it is
        /// where a next page may resume: a budget spent on the section's
        /// first candidate must not leave the page without a cursor.
        mutating func walk(_ place: ItemCursor) -> Bool {
            cursor = place
            guard examined < budget else {
                more = true
                return false
            }
            examined += 1
            return true
        }

        /// Takes `entry` (`nil`: the candidate did not match) at `place`; `false` when the page is done.
        mutating func take(_ entry: ItemPage.Entry?, at place: ItemCursor) -> Bool {
            if entry != nil, entries.count == limit {
                // A match beyond a full page: there is more, after the page's last entry.
                more = true
                return false
            }
            guard examined < budget else {
                // The budget is spent before this row: the next page resumes
                // after the last row examined (a miss, or the last entry).
                more = true
                return false
            }
            examined += 1
            cursor = place
            if let entry { entries.append(entry) }
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
        if let text = query.text, text.unicodeScalars.count >= Self.shortestTextTerm, db.dialect.hasTextIndexTable,
            try db.first("SELECT 1 FROM list_text_indexes WHERE list_id = ?", list.sql, read: { _ in true }) != nil
        {
            return (.text("\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""), .text)
        }
        return (.items, .scan)
    }

    /// A page answered from the text index: the places of the term's
    /// candidates in the list are read (at most the budget,
    /// ``StoreConfiguration/itemQueryBudget``; `nil` beyond, and the caller
    /// scans), put in list order and cut after the cursor; then the models of
    /// the candidates after it are read one by one and checked exactly, until
    /// the page is full and one more match says there is a next page. So at
    /// most the budget's worth of small rows and of models is read, never the
    /// models of candidates before the cursor.
    /// `CROSS JOIN` keeps the text index the outer loop: left to itself,
    /// SQLite walks the list's items and runs the MATCH once per item.
    /// - Complexity: O(m log m) for the term's m ≤ budget candidates in the list.
    private func textPage(
        _ list: Identifier, _ query: ItemQuery, only: SectionPlace?, start: ItemCursor?, generation: Int64,
        pattern: String
    ) throws(StoreError) -> (entries: [ItemPage.Entry], next: String?, examined: Int)? {
        struct Row {
            var section: Identifier
            var place: ItemCursor
            var rowid: Int64
        }
        let budget = max(1, configuration.itemQueryBudget)
        let rows = try db.rows(
            """
            SELECT i.id, i.section_id, s.position, i.position, i.rowid FROM item_text
            CROSS JOIN items i ON i.rowid = item_text.rowid
            CROSS JOIN sections s ON s.list_id = i.list_id AND s.id = i.section_id
            WHERE item_text MATCH ? AND i.list_id = ? LIMIT ?
            """, [pattern.sql, list.sql, (budget + 1).sql]
        ) {
            Row(
                section: $0.identifier(1),
                place: ItemCursor(
                    generation: generation, sectionKey: $0.int64(2), section: $0.text(1), itemKey: $0.int64(3),
                    item: $0.text(0)),
                rowid: $0.int64(4))
        }
        guard rows.count <= budget else { return nil }
        func key(_ place: ItemCursor) -> (Int64, String, Int64, String) {
            (place.sectionKey, place.section ?? "", place.itemKey, place.item)
        }
        var entries: [ItemPage.Entry] = []
        var last: ItemCursor?
        var examined = 0
        for row in rows.sorted(by: { key($0.place) < key($1.place) }) {
            if let only, row.section != only.id { continue }
            if let start, key(row.place) <= key(start) { continue }
            examined += 1
            // Read in the same transaction as the places: the row is there.
            guard
                let text = try db.first("SELECT model FROM items WHERE rowid = ?", row.rowid.sql, read: { $0.text(0) })
            else { continue }
            let model = Model(trustedCanonicalText: text)
            guard try Self.matches(model, query) else { continue }
            if entries.count == query.limit { return (entries, last?.text, examined) }
            entries.append(
                ItemPage.Entry(
                    section: row.section, item: ItemSnapshot(id: Identifier(storedText: row.place.item), model: model)))
            last = row.place
        }
        return (entries, nil, examined)
    }

    /// Calls `visit` with each section in order (only `only` when set), from
    /// the place `from` (position key, id) on, that place included, until it
    /// returns `false`.
    private func walkSections(
        _ list: Identifier, only: SectionPlace?, from: (Int64, String)?,
        _ visit: (SectionPlace) throws(StoreError) -> Bool
    ) throws(StoreError) {
        if let only {
            if let from, (only.position, only.id.rawValue) < from { return }
            _ = try visit(only)
            return
        }
        // The cursor's own section is taken in (its items resume inside it).
        var after: (Int64, String) = from ?? (Int64.min, "")
        var inclusive = true
        while true {
            let batch = try db.rows(
                """
                SELECT id, position FROM sections WHERE list_id = ? AND (position, id) \(inclusive ? ">=" : ">") (?, ?)
                ORDER BY position, id LIMIT ?
                """, [list.sql, after.0.sql, after.1.sql, Self.sectionBatch.sql]
            ) { SectionPlace(id: $0.identifier(0), position: $0.int64(1)) }
            inclusive = false
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
        let value: JSONValue
        do { value = try model.jsonValue() } catch { throw StoreError(.invalidModel, error.detail) }
        for condition in query.conditions {
            guard let found = value.value(atPath: condition.path),
                found.canonicalText == condition.value.canonicalText
            else { return false }
        }
        if let text = query.text, !text.isEmpty {
            return ViewSpec.containsString(value, text)
        }
        return true
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

/// The place an items page ended at, as opaque URL-safe text.
///
/// `2,<generation>,<section key>,<item key>,<section id>,<item id>`: ids
/// never hold a comma. A cursor of the first format, `<section key>.<item
/// key>.<item id>` (no renumbering count, no section id), is still read: it
/// is taken to be made at the list's current keys, with its section the one
/// at its section key, as it was before.
struct ItemCursor {
    /// How many renumberings the list had had; `nil` for a first-format cursor.
    var generation: Int64?
    var sectionKey: Int64
    /// The id of the section at `sectionKey`; `nil` until a first-format cursor is resolved.
    var section: String?
    var itemKey: Int64
    var item: String

    init(generation: Int64?, sectionKey: Int64, section: String?, itemKey: Int64, item: String) {
        self.generation = generation
        self.sectionKey = sectionKey
        self.section = section
        self.itemKey = itemKey
        self.item = item
    }

    init?(_ text: String) {
        if text.hasPrefix("2,") {
            let parts = text.split(separator: ",", omittingEmptySubsequences: false)
            guard parts.count == 6, let generation = Int64(parts[1]), generation >= 0,
                let section = Int64(parts[2]), let item = Int64(parts[3])
            else { return nil }
            let sectionID = String(parts[4])
            let itemID = String(parts[5])
            // An empty id marks a place before every section or item (a relocated cursor).
            guard sectionID.isEmpty || Identifier(sectionID) != nil, itemID.isEmpty || Identifier(itemID) != nil
            else { return nil }
            self.init(generation: generation, sectionKey: section, section: sectionID, itemKey: item, item: itemID)
            return
        }
        let parts = text.split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let section = Int64(parts[0]), let item = Int64(parts[1]),
            Identifier(String(parts[2])) != nil
        else { return nil }
        self.init(generation: nil, sectionKey: section, section: nil, itemKey: item, item: String(parts[2]))
    }

    var text: String {
        "2,\(generation ?? 0),\(sectionKey),\(itemKey),\(section ?? ""),\(item)"
    }
}
