import ListModel
import Storage

/// "What changed since V" on a reader thread, so a catch-up never holds the
/// writer: the history and the rows come from the reader's own snapshot, and
/// the rank index that turns keys into index paths from the ``IndexBoard``,
/// moved to the snapshot's version on a private copy.
///
/// Only the reads run inside the read transaction; condensing (the CPU part)
/// runs after it ends. A read transaction held open keeps SQLite from
/// restarting its write-ahead log, so clients catching up back to back with
/// long transactions would let the log grow without bound.
extension ListReader {
    /// What one read transaction gathered for a catch-up.
    private enum Gathered {
        /// The answer needs nothing more (a reset, or no versions in between).
        case answer(ChangeSince)
        /// The snapshot is older than the published index: read again.
        case retry
        /// The list's head, the index at that version, and what changed since the client's version.
        case material(head: ListHead, index: ListIndex, fromRows: Bool, movedForward: Bool, touched: TouchedEntities)
    }

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
        var rowsOnly = false
        while true {
            let gathered = try inTransaction { () throws(StoreError) -> Gathered in
                try gather(list, since: version, board: board, mayRetry: attempt < 2, rowsOnly: rowsOnly)
            }
            attempt += 1
            switch gathered {
            case .answer(let answer):
                return answer
            case .retry:
                continue
            case .material(let head, let index, let fromRows, let movedForward, let touched):
                do throws(IndexMismatch) {
                    let condensed = try touched.condense(with: index)
                    if fromRows || movedForward {
                        board.publish(index, of: list, epoch: head.epoch, version: head.version)
                    }
                    return .change(
                        NetChange(
                            list: list, epoch: head.epoch, from: version, to: head.version, old: condensed.old,
                            new: condensed.new))
                } catch {
                    guard !fromRows else {
                        configuration.onInconsistency?(
                            "list \(list), changes since v\(version): its rank index built from the rows disagrees "
                                + "with the change (\(error)); answering with the snapshot")
                        return .reset(try snapshot(list))
                    }
                    configuration.onInconsistency?(
                        "list \(list), changes since v\(version): its published rank index disagrees with the change "
                            + "(\(error)); rebuilding it")
                    board.remove(list)
                    rowsOnly = true
                }
            }
        }
    }

    /// One read transaction's part of ``changes(of:since:board:)``.
    private func gather(
        _ list: Identifier, since version: Int64, board: IndexBoard, mayRetry: Bool, rowsOnly: Bool
    ) throws(StoreError) -> Gathered {
        let meta = try meta(list)
        let head = meta.head
        guard version >= meta.floor, version <= head.version else {
            return .answer(.reset(try currentState(list, name: meta.name).snapshot(of: head)))
        }
        guard version < head.version else {
            return .answer(
                .change(NetChange(list: list, epoch: head.epoch, from: version, to: version, old: [], new: [])))
        }
        var index: ListIndex?
        var movedForward = false
        if !rowsOnly, let published = board.index(of: list), published.epoch == head.epoch {
            if published.version > head.version {
                if mayRetry { return .retry }
            } else if published.version >= meta.floor,
                head.version - published.version <= ListWriter.maxCatchUpVersions
            {
                var moved = published.index
                if published.version < head.version {
                    moved.apply(try db.touchedSpan(list, since: published.version, through: head.version))
                    movedForward = true
                }
                index = moved
            }
        }
        let fromRows = index == nil
        let touched = try db.touchedSpan(list, since: version, through: head.version, separateSections: true)
        let built: ListIndex
        if let index { built = index } else { built = try db.rankIndex(of: list) }
        return .material(head: head, index: built, fromRows: fromRows, movedForward: movedForward, touched: touched)
    }
}
