import ListModel

/// What an answer rendered inside a write may read (``ClaimAnswer``): the
/// written list's rows as the write's open transaction sees them, with
/// positions from the writer's rank index, so a section or item answer costs
/// O(log n) plus its own size, never a read of the whole list.
package struct WrittenRows {
    let writer: ListWriter

    /// The item `id` of `list` right after the write: its section, index path and value.
    package func item(_ id: Identifier, in list: Identifier) throws(StoreError)
        -> (section: Identifier, sectionIndex: Int, index: Int, item: ItemSnapshot)?
    {
        guard
            let row = try writer.db.first(
                "SELECT section_id, position, model FROM items WHERE list_id = ? AND id = ?", list.sql, id.sql,
                read: { (section: $0.identifier(0), position: $0.int64(1), model: $0.text(2)) }),
            let sectionPosition = try writer.db.first(
                "SELECT position FROM sections WHERE list_id = ? AND id = ?", list.sql, row.section.sql,
                read: { $0.int64(0) })
        else { return nil }
        let index = try writer.currentIndex(list)
        return (
            row.section, index.sections.rank(below: sectionPosition),
            index.items[row.section]?.rank(below: row.position) ?? 0,
            ItemSnapshot(id: id, model: Model(trustedCanonicalText: row.model))
        )
    }

    /// The section `id` of `list` right after the write, with its items: its index and value.
    package func section(_ id: Identifier, in list: Identifier) throws(StoreError)
        -> (index: Int, section: SectionSnapshot)?
    {
        guard
            let row = try writer.db.first(
                "SELECT position, model FROM sections WHERE list_id = ? AND id = ?", list.sql, id.sql,
                read: { (position: $0.int64(0), model: $0.text(1)) })
        else { return nil }
        let items = try writer.db.rows(
            "SELECT id, model FROM items WHERE list_id = ? AND section_id = ? ORDER BY position, id",
            [list.sql, id.sql]
        ) { ItemSnapshot(id: $0.identifier(0), model: Model(trustedCanonicalText: $0.text(1))) }
        let index = try writer.currentIndex(list)
        return (
            index.sections.rank(below: row.position),
            SectionSnapshot(id: id, model: Model(trustedCanonicalText: row.model), items: items)
        )
    }
}
