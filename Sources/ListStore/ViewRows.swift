import ListModel

/// A section's row as a live view sees it: its id, position key and model.
public struct SectionRow: Sendable, Hashable {
    /// The section's id.
    public var id: Identifier
    /// Its position key: sections are ordered by key (keys are gapped, not ranks).
    public var key: Int64
    /// Its model.
    public var model: Model

    /// Creates a row.
    public init(id: Identifier, key: Int64, model: Model) {
        self.id = id
        self.key = key
        self.model = model
    }
}

/// An item's row as a live view sees it: its id, section, position key in the section, and model.
public struct ItemRow: Sendable, Hashable {
    /// The item's id.
    public var id: Identifier
    /// The section holding it.
    public var section: Identifier
    /// Its position key in the section.
    public var key: Int64
    /// Its model.
    public var model: Model

    /// Creates a row.
    public init(id: Identifier, section: Identifier, key: Int64, model: Model) {
        self.id = id
        self.section = section
        self.key = key
        self.model = model
    }
}

/// What a live view is built from: a list's rows at one version, read in one
/// transaction (``Store/viewRows(of:matching:)``).
public struct ViewRows: Sendable, Hashable {
    /// The list's head at the version read.
    public var head: ListHead
    /// The list's name then.
    public var name: String
    /// Every section, in order.
    public var sections: [SectionRow]
    /// The items that may match: every item holding the conditions' values
    /// when a declared index serves one of them, else every item; in no particular order.
    public var items: [ItemRow]
    /// Whether a declared index chose `items`.
    public var indexed: Bool

    /// Creates the rows.
    public init(head: ListHead, name: String, sections: [SectionRow], items: [ItemRow], indexed: Bool) {
        self.head = head
        self.name = name
        self.sections = sections
        self.items = items
        self.indexed = indexed
    }
}

/// An entity's state at both ends of a span of versions; `nil` where it did not exist.
public struct RowChange<Row: Sendable & Hashable>: Sendable, Hashable {
    /// At the span's start.
    public var before: Row?
    /// At its end.
    public var after: Row?

    /// Creates a change.
    public init(before: Row?, after: Row?) {
        self.before = before
        self.after = after
    }
}

/// Every section and item one commit touched, with its rows before and after
/// it: the rows of a one-version ``TouchedSpan``, recorded by the writer as it
/// commits and carried by the ``Commit``, so a live view moves forward by the
/// commit without reading history again.
public struct TouchedRows: Sendable, Hashable {
    /// Touched sections (and sections holding touched items, unchanged), by id.
    public var sections: [Identifier: RowChange<SectionRow>]
    /// Touched items, by id; one made and deleted by the commit has no row at either end.
    public var items: [Identifier: RowChange<ItemRow>]

    /// Creates a record.
    public init(sections: [Identifier: RowChange<SectionRow>], items: [Identifier: RowChange<ItemRow>]) {
        self.sections = sections
        self.items = items
    }

    /// How many sections and items it names.
    public var count: Int { sections.count + items.count }
}

/// Every section and item touched after a version, with its rows then and now,
/// read from history (``Store/touched(_:since:)``): what a live view needs to
/// move forward, or to see itself as it was, at a cost that grows with the change.
public struct TouchedSpan: Sendable, Hashable {
    /// The list's head now (the span's end).
    public var head: ListHead
    /// The list's name now.
    public var name: String
    /// The span's start.
    public var from: Int64
    /// Touched sections (and sections holding touched items, unchanged), by id;
    /// a section made and deleted within the span is here with no row at either end.
    public var sections: [Identifier: RowChange<SectionRow>]
    /// Touched items, by id; an item made and deleted within the span is here
    /// with no row at either end (a view kept at a version inside the span holds it).
    public var items: [Identifier: RowChange<ItemRow>]

    /// Creates a span.
    public init(
        head: ListHead, name: String, from: Int64, sections: [Identifier: RowChange<SectionRow>],
        items: [Identifier: RowChange<ItemRow>]
    ) {
        self.head = head
        self.name = name
        self.from = from
        self.sections = sections
        self.items = items
    }
}

extension ListReader {
    /// The rows a live view of `list` is built from (see ``ViewRows``), in one transaction.
    /// - Complexity: O(s + m) for s sections and m candidate items: the items
    ///   with an indexed condition's value, or all n.
    package func viewRows(_ list: Identifier, matching conditions: [ItemQuery.Condition]) throws(StoreError)
        -> ViewRows
    {
        try inTransaction { () throws(StoreError) in
            let meta = try meta(list)
            let sections = try db.rows(
                "SELECT id, position, model FROM sections WHERE list_id = ? ORDER BY position", [list.sql]
            ) {
                ListStore.SectionRow(
                    id: $0.identifier(0), key: $0.int64(1), model: Model(trustedCanonicalText: $0.text(2)))
            }
            let declared = Set(
                try db.rows("SELECT path FROM list_indexes WHERE list_id = ?", [list.sql]) { $0.text(0) })
            func item(_ row: StoreRow) -> ListStore.ItemRow {
                ListStore.ItemRow(
                    id: row.identifier(0), section: row.identifier(1), key: row.int64(2),
                    model: Model(trustedCanonicalText: row.text(3)))
            }
            if let condition = conditions.first(where: { declared.contains($0.path.joined(separator: ".")) }) {
                let items = try db.rows(
                    """
                    SELECT i.id, i.section_id, i.position, i.model FROM item_values v
                    JOIN items i ON i.list_id = v.list_id AND i.id = v.item_id
                    WHERE v.list_id = ? AND v.path = ? AND v.value = ?
                    """,
                    [list.sql, condition.path.joined(separator: ".").sql, condition.value.canonicalText.sql], item)
                return ViewRows(head: meta.head, name: meta.name, sections: sections, items: items, indexed: true)
            }
            let items = try db.rows(
                "SELECT id, section_id, position, model FROM items WHERE list_id = ?", [list.sql], item)
            return ViewRows(head: meta.head, name: meta.name, sections: sections, items: items, indexed: false)
        }
    }

    /// Every section and item touched after `version` (see ``TouchedSpan``),
    /// from history alone where it has after-images; `nil` when `version` is
    /// below the kept history or above the current version.
    /// - Complexity: O(k log k) for k history rows after `version`.
    package func touched(_ list: Identifier, since version: Int64) throws(StoreError) -> TouchedSpan? {
        try inTransaction { () throws(StoreError) -> TouchedSpan? in
            let meta = try meta(list)
            guard version >= meta.floor, version <= meta.head.version else { return nil }
            guard version < meta.head.version else {
                return TouchedSpan(head: meta.head, name: meta.name, from: version, sections: [:], items: [:])
            }
            let rows = try db.touchedSpan(list, since: version, through: meta.head.version, separateSections: true)
                .rows
            return TouchedSpan(
                head: meta.head, name: meta.name, from: version, sections: rows.sections, items: rows.items)
        }
    }
}

extension TouchedEntities {
    /// How many sections and items it names.
    var count: Int { sections.count + items.count + vanishedSections.count + vanishedItems.count }

    /// The touched entities as rows (``TouchedRows``); those made and gone
    /// again within the span are there with no row at either end (a view kept
    /// at a version inside the span may hold them).
    var rows: TouchedRows {
        var sections: [Identifier: RowChange<ListStore.SectionRow>] = [:]
        sections.reserveCapacity(self.sections.count + vanishedSections.count)
        for (id, states) in self.sections {
            func row(_ state: SectionState?) -> ListStore.SectionRow? {
                state.map { ListStore.SectionRow(id: id, key: $0.key, model: Model(trustedCanonicalText: $0.model)) }
            }
            sections[id] = RowChange(before: row(states.before), after: row(states.after))
        }
        var items: [Identifier: RowChange<ListStore.ItemRow>] = [:]
        items.reserveCapacity(self.items.count + vanishedItems.count)
        for (id, states) in self.items {
            func row(_ state: ItemState?) -> ListStore.ItemRow? {
                state.map {
                    ListStore.ItemRow(
                        id: id, section: $0.section, key: $0.key, model: Model(trustedCanonicalText: $0.model))
                }
            }
            items[id] = RowChange(before: row(states.before), after: row(states.after))
        }
        for id in vanishedSections { sections[id] = RowChange(before: nil, after: nil) }
        for id in vanishedItems { items[id] = RowChange(before: nil, after: nil) }
        return TouchedRows(sections: sections, items: items)
    }
}
