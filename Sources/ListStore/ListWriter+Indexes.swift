import ListModel
import Storage

/// Rules for declared index paths (`PUT /lists/{list}/indexes/{path}`).
public enum DeclaredIndexes {
    /// Indexes one list may declare.
    public static let maxPerList = 16
    /// Components of one path.
    public static let maxComponents = 8
    /// Components that look like array indices (each is indexed both ways).
    public static let maxNumericComponents = 4
    /// UTF-8 bytes of a whole dotted path.
    public static let maxBytes = 256

    /// Why `path` cannot be declared, or `nil` when it can.
    public static func problem(with path: [String]) -> String? {
        let dotted = path.joined(separator: ".")
        if path.isEmpty || path.contains(where: \.isEmpty) { return "an index path has no empty field names" }
        if dotted.utf8.count > maxBytes { return "an index path is at most \(maxBytes) bytes" }
        if path.count > maxComponents { return "an index path has at most \(maxComponents) fields" }
        if path.filter({ arrayIndex($0) != nil }).count > maxNumericComponents {
            return "an index path has at most \(maxNumericComponents) numeric fields"
        }
        if dotted.utf8.contains(where: {
            $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\")
        }) {
            return "an index path holds no quotes, backslashes or control characters"
        }
        return nil
    }

    /// The array index `component` names, as the model's paths read it (`where=tags.0`).
    static func arrayIndex(_ component: String) -> Int? {
        let utf8 = component.utf8
        guard let first = utf8.first, utf8.count <= 18, utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            first != UInt8(ascii: "0") || utf8.count == 1
        else { return nil }
        return Int(component)
    }

    /// The SQLite JSON paths `path` may stand for: a numeric field is an array
    /// index in an array and an object key in an object.
    static func jsonPaths(_ path: [String]) -> [String] {
        var paths = ["$"]
        for component in path {
            var next: [String] = []
            for prefix in paths {
                next.append(prefix + ".\"" + component + "\"")
                if let index = arrayIndex(component) { next.append(prefix + "[\(index)]") }
            }
            paths = next
        }
        return paths
    }
}

extension ListWriter {
    /// Items re-indexed per statement when an index is declared on a list that has items.
    static let indexBuildBatch = 10_000

    /// Declares an index on `path` and indexes the list's items, reporting
    /// `progress(done, total)` after each batch; `false` when it was declared already.
    ///
    /// Existing items are indexed in the write's transaction (``reindexItems(of:progress:)``).
    /// - Complexity: O(n log n) for the list's n items.
    package func addIndex(_ path: [String], to list: Identifier, progress: (Int, Int) -> Void) throws(StoreError)
        -> Bool
    {
        _ = try checkIndexPaths([path])
        let target = try load(list, expectedVersion: nil)
        guard try declareIndex(path, on: target.id) else { return false }
        try reindexItems(of: target.id, progress: progress)
        return true
    }

    /// `paths` without repeats, in order, each one ``DeclaredIndexes`` accepts.
    /// - Throws: `invalidModel` naming the first refused path; `limitExceeded`
    ///   when there are more than a list may declare.
    func checkIndexPaths(_ paths: [[String]]) throws(StoreError) -> [[String]] {
        var seen = Set<[String]>()
        var unique: [[String]] = []
        for path in paths where seen.insert(path).inserted {
            if let problem = DeclaredIndexes.problem(with: path) {
                throw StoreError(.invalidModel, "\(problem): \"\(path.joined(separator: ".").prefix(300))\"")
            }
            unique.append(path)
        }
        guard unique.count <= DeclaredIndexes.maxPerList else {
            throw StoreError(
                .limitExceeded,
                "\(unique.count) index paths, more than the \(DeclaredIndexes.maxPerList) a list may declare")
        }
        return unique
    }

    /// Declares the index on `path` (a checked path) without indexing any
    /// item; `false` when it was declared already.
    /// - Throws: `limitExceeded` when the list has as many indexes as it may.
    func declareIndex(_ path: [String], on list: Identifier) throws(StoreError) -> Bool {
        let dotted = path.joined(separator: ".")
        if try db.first(
            "SELECT 1 FROM list_indexes WHERE list_id = ? AND path = ?", list.sql, dotted.sql, read: { _ in true })
            != nil
        {
            return false
        }
        let declared = try db.integer("SELECT count(*) FROM list_indexes WHERE list_id = ?", list.sql)
        guard declared < DeclaredIndexes.maxPerList else {
            throw StoreError(
                .limitExceeded, "list \"\(list)\" has \(declared) indexes, the most a list may have")
        }
        try db.run("INSERT INTO list_indexes (list_id, path) VALUES (?, ?)", list.sql, dotted.sql)
        for jsonPath in DeclaredIndexes.jsonPaths(path) {
            try db.run(
                "INSERT INTO list_index_paths (list_id, path, json_path) VALUES (?, ?, ?)",
                list.sql, dotted.sql, jsonPath.sql)
        }
        return true
    }

    /// Adds the rows of every declared path to the index for each item of
    /// `list` (rows already there stay), in id order, `indexBuildBatch` items
    /// per statement, reporting `progress(done, total)` after each. On SQLite
    /// with the insert trigger's formula (migration 0006's update trigger skips
    /// a value that did not change, so rewriting a model in place would add
    /// nothing); on PostgreSQL by rewriting each model in place, which runs its
    /// trigger (migration 0002).
    func reindexItems(of list: Identifier, progress: (Int, Int) -> Void) throws(StoreError) {
        let inserting = db.dialect.indexesItemsByInserting
        try inBatches(of: list, progress: progress) { range, arguments throws(StoreError) in
            if inserting {
                try db.run(
                    """
                    INSERT OR IGNORE INTO item_values (list_id, path, value, section_id, position, item_id)
                    SELECT items.list_id, p.path, items.model -> p.json_path, items.section_id, items.position, items.id
                    FROM items JOIN list_index_paths p ON p.list_id = items.list_id
                    WHERE items.list_id = ? AND \(range)
                      AND json_type(items.model, p.json_path) IN ('null', 'true', 'false', 'integer', 'real', 'text')
                    """, arguments)
            } else {
                try db.run("UPDATE items SET model = model WHERE list_id = ? AND \(range)", arguments)
            }
        }
    }

    /// Calls `body` with a condition on `items.id` (and its arguments, the
    /// list's id first) for each run of `indexBuildBatch` items of `list` in id
    /// order, reporting `progress(done, total)` after each.
    private func inBatches(
        of list: Identifier, progress: (Int, Int) -> Void,
        _ body: (String, [SQLValue]) throws(StoreError) -> Void
    ) throws(StoreError) {
        let total = Int(try db.integer("SELECT count(*) FROM items WHERE list_id = ?", list.sql))
        var done = 0
        var after = ""
        while done < total {
            let end = try db.first(
                "SELECT id FROM items WHERE list_id = ? AND id > ? ORDER BY id LIMIT 1 OFFSET ?",
                list.sql, after.sql, (Self.indexBuildBatch - 1).sql, read: { $0.text(0) })
            if let end {
                try body("id > ? AND id <= ?", [list.sql, after.sql, end.sql])
                after = end
                done = min(total, done + Self.indexBuildBatch)
            } else {
                try body("id > ?", [list.sql, after.sql])
                done = total
            }
            progress(done, total)
        }
    }

    /// What SQLite's text index holds for an item: its model's string values,
    /// joined by line feeds (the triggers of migrations 0004 and 0007 compute the same).
    private static let textBody =
        "(SELECT coalesce(group_concat(value, char(10)), '') FROM json_tree(items.model) WHERE type = 'text')"

    /// Turns the text index on (indexing every item) or off; `false` when it already was so.
    ///
    /// SQLite's FTS5 table keeps no copy of the text (migration 0004), so an
    /// entry can only be removed by handing FTS5 the text it was indexed with:
    /// entries are added and removed here directly, while the list's flag says
    /// whether the triggers keep them (an update or delete trigger given a row
    /// that was never indexed would damage the index).
    package func setTextIndex(_ enabled: Bool, on list: Identifier, progress: (Int, Int) -> Void) throws(StoreError)
        -> Bool
    {
        let target = try load(list, expectedVersion: nil)
        let current =
            try db.first("SELECT 1 FROM list_text_indexes WHERE list_id = ?", target.id.sql, read: { _ in true }) != nil
        guard current != enabled else { return false }
        if enabled {
            if db.dialect.hasTextIndexTable {
                try applyPendingText()
                try inBatches(of: target.id, progress: progress) { range, arguments throws(StoreError) in
                    try db.run(
                        "INSERT INTO item_text (rowid, body) SELECT rowid, \(Self.textBody) FROM items WHERE list_id = ? AND \(range)",
                        arguments)
                }
                try db.run("INSERT INTO list_text_indexes (list_id) VALUES (?)", target.id.sql)
            } else {
                try db.run("INSERT INTO list_text_indexes (list_id) VALUES (?)", target.id.sql)
                try reindexItems(of: target.id, progress: progress)
            }
        } else {
            try removeTextEntries(of: target.id)
            try db.run("DELETE FROM list_text_indexes WHERE list_id = ?", target.id.sql)
        }
        return true
    }

    /// Removes `list`'s entries from SQLite's text index, before its flag goes
    /// (turning the index off, deleting the list). Nothing to do on PostgreSQL.
    func removeTextEntries(of list: Identifier) throws(StoreError) {
        guard db.dialect.hasTextIndexTable,
            try db.first("SELECT 1 FROM list_text_indexes WHERE list_id = ?", list.sql, read: { _ in true }) != nil
        else { return }
        // The entries of rows changed since the last apply still hold their old text.
        try applyPendingText()
        try db.run(
            "INSERT INTO item_text (item_text, rowid, body) SELECT 'delete', rowid, \(Self.textBody) FROM items WHERE list_id = ?",
            list.sql)
    }

    /// Brings SQLite's text index up to date with the rows its triggers noted
    /// since the last apply (migration 0007): each noted row's old text is
    /// removed and its current text added, unless the text is the same; a row
    /// that is gone, or whose list's flag is off, gets no new entry. Then the
    /// notes go. Runs before each commit of the writer (so FTS5 writes a
    /// segment or two a commit, not one a write) and before a list's entries
    /// are added or removed wholesale. Nothing to do on PostgreSQL, whose text
    /// index is an ordinary index.
    ///
    /// Two statements, all removals before any addition (a row whose text
    /// changed is removed with its old text first), each streaming the notes:
    /// a whole-list replacement may leave a million of them.
    package func applyPendingText() throws(StoreError) {
        guard db.dialect.hasTextIndexTable,
            try db.first("SELECT 1 FROM item_text_pending LIMIT 1", read: { _ in true }) != nil
        else { return }
        try db.run(
            """
            INSERT INTO item_text (item_text, rowid, body)
            SELECT 'delete', r, old FROM (\(Self.notedText)) WHERE old IS NOT NULL AND old IS NOT new
            """, [])
        try db.run(
            """
            INSERT INTO item_text (rowid, body)
            SELECT r, new FROM (\(Self.notedText)) WHERE new IS NOT NULL AND new IS NOT old
            """, [])
        try db.run("DELETE FROM item_text_pending", [])
    }

    /// Each noted row: its rowid, the text its entry holds (`old`, NULL: none)
    /// and the text it should hold now (`new`, NULL: none). `LIMIT -1` (no
    /// limit) keeps SQLite from flattening it into the outer query, which
    /// would compute `new` once for each mention there; as a co-routine it is
    /// computed once a row and still streamed.
    private static let notedText = """
        SELECT p.item_rowid AS r, p.old_body AS old,
            CASE WHEN EXISTS (SELECT 1 FROM list_text_indexes t WHERE t.list_id = items.list_id)
                THEN \(textBody) END AS new
        FROM item_text_pending p LEFT JOIN items ON items.rowid = p.item_rowid
        LIMIT -1
        """

    /// Drops the index on `path`; `false` when there was none.
    package func dropIndex(_ path: [String], from list: Identifier) throws(StoreError) -> Bool {
        let target = try load(list, expectedVersion: nil)
        let dotted = path.joined(separator: ".")
        guard
            try db.first(
                "SELECT 1 FROM list_indexes WHERE list_id = ? AND path = ?", target.id.sql, dotted.sql,
                read: { _ in true }) != nil
        else { return false }
        try db.run("DELETE FROM list_indexes WHERE list_id = ? AND path = ?", target.id.sql, dotted.sql)
        return true
    }
}
