import Storage

/// "What changed since V" on a reader thread, so a catch-up never holds the
/// writer: the history and the rows come from the reader's own snapshot, and
/// the rank index that turns keys into index paths from the ``IndexBoard``,
/// moved to the snapshot's version on a private copy.
extension ListReader {
    /// The net change from `version` to the version this reader's snapshot
    /// sees, or a reset carrying that snapshot when `version` is outside the
    /// kept history, above the current version, or cannot be condensed.
    ///
    /// The index comes from `board` when one there is of the list's epoch, no
    /// newer than the snapshot and within ``ListWriter/maxCatchUpVersions`` of
    /// it; it is brought forward by the entities touched in between. Otherwise
    /// it is built from the rows (O(n) once) and published for the next reader.
    /// A snapshot older than the published index (the writer committed while
    /// this read began) is read again, twice at most, then served from rows.
    /// - Complexity: O(k log n) for k entities touched since `version`.
    package func changes(of list: Identifier, since version: Int64, board: IndexBoard) throws(StoreError)
        -> ChangeSince
    {
        var attempt = 0
        while true {
            let answer: ChangeSince? = try inTransaction { () throws(StoreError) -> ChangeSince? in
                try changesInTransaction(of: list, since: version, board: board, mayRetry: attempt < 2)
            }
            if let answer { return answer }
            attempt += 1
        }
    }

    /// One attempt of ``changes(of:since:board:)``; `nil` asks for a newer snapshot.
    private func changesInTransaction(of list: Identifier, since version: Int64, board: IndexBoard, mayRetry: Bool)
        throws(StoreError) -> ChangeSince?
    {
        let meta = try meta(list)
        let head = meta.head
        guard version >= meta.floor, version <= head.version else {
            return .reset(try currentState(list, name: meta.name).snapshot(of: head))
        }
        guard version < head.version else {
            return .change(NetChange(list: list, epoch: head.epoch, from: version, to: version, old: [], new: []))
        }
        var index: ListIndex
        var fromRows = false
        var movedForward = false
        if let published = board.index(of: list), published.epoch == head.epoch {
            if published.version > head.version {
                if mayRetry { return nil }
                index = try db.rankIndex(of: list)
                fromRows = true
            } else if published.version >= meta.floor, head.version - published.version <= ListWriter.maxCatchUpVersions {
                index = published.index
                if published.version < head.version {
                    index.apply(
                        try db.touchedEntities(
                            list, since: published.version, expectedRows: Int(head.version - published.version)))
                    movedForward = true
                }
            } else {
                index = try db.rankIndex(of: list)
                fromRows = true
            }
        } else {
            index = try db.rankIndex(of: list)
            fromRows = true
        }
        let touched = try db.touchedEntities(list, since: version, expectedRows: Int(head.version - version))
        let condensed: (old: [CondensedSection], new: [CondensedSection])
        do throws(IndexMismatch) {
            condensed = try touched.condense(with: index)
        } catch {
            guard !fromRows else {
                configuration.onInconsistency?(
                    "list \(list), changes since v\(version): its rank index built from the rows disagrees with "
                        + "the change (\(error)); answering with the snapshot")
                return .reset(try currentState(list, name: meta.name).snapshot(of: head))
            }
            configuration.onInconsistency?(
                "list \(list), changes since v\(version): its published rank index disagrees with the change "
                    + "(\(error)); rebuilding it")
            board.remove(list)
            return try changesFromRows(of: list, since: version, touched: touched, meta: meta, board: board)
        }
        if fromRows || movedForward { board.publish(index, of: list, epoch: head.epoch, version: head.version) }
        return .change(
            NetChange(list: list, epoch: head.epoch, from: version, to: head.version, old: condensed.old, new: condensed.new))
    }

    /// The change condensed with an index built from the rows, after a published one disagreed.
    private func changesFromRows(
        of list: Identifier, since version: Int64, touched: TouchedEntities, meta: Meta, board: IndexBoard
    ) throws(StoreError) -> ChangeSince {
        let head = meta.head
        let index = try db.rankIndex(of: list)
        do throws(IndexMismatch) {
            let condensed = try touched.condense(with: index)
            board.publish(index, of: list, epoch: head.epoch, version: head.version)
            return .change(
                NetChange(
                    list: list, epoch: head.epoch, from: version, to: head.version, old: condensed.old,
                    new: condensed.new))
        } catch {
            configuration.onInconsistency?(
                "list \(list), changes since v\(version): its rank index rebuilt from the rows disagrees with the "
                    + "change too (\(error)); answering with the snapshot")
            return .reset(try currentState(list, name: meta.name).snapshot(of: head))
        }
    }
}
