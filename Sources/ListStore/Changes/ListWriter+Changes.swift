import ListModel
import ListWire
import Storage

/// The change engine on the writer's connection: what a write or a span of
/// versions touched, and its net change, at a cost that grows with the change.
extension ListWriter {

    /// The list's rank index as of the current rows: the hot one, or one read
    /// from the database (O(n) once) and kept hot.
    func currentIndex(_ list: Identifier) throws(StoreError) -> ListIndex {
        if let index = hot.index(of: list) { return index }
        let index = try db.rankIndex(of: list)
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
        let touched = try db.touchedSpan(list, since: tag.version, through: version)
        hot.apply(touched, to: list)
        hot.tag(list, epoch: epoch, version: version)
    }

    /// Beyond this many versions behind, a hot index is rebuilt rather than caught up.
    static let maxCatchUpVersions: Int64 = 10_000

    /// The net change a write just made, from version `target.version` to the
    /// next (`nil` when it cannot be condensed, see ``condense(_:of:with:_:)``),
    /// and what it touched; brings the list's hot index along. Runs inside the write.
    func recordedChange(_ target: Target) throws(StoreError) -> (NetChange?, TouchedEntities) {
        // Bounded above by the version written: PostgreSQL then plans the
        // read as the few index probes it is. With `version > ?` alone it
        // guessed from the whole table's spread of versions (every list's)
        // and chose to scan history and hash-join every item: O(n) a write.
        let touched = try db.touchedEntities(target.id, since: target.version, through: target.newVersion)
        try db.recordAfterImages(touched, of: target.id, version: target.newVersion)
        let index: ListIndex
        if hot.apply(touched, to: target.id), let moved = hot.index(of: target.id) {
            index = moved
        } else {
            index = try currentIndex(target.id)
        }
        let condensed = try condense(touched, of: target.id, with: index, "write to v\(target.newVersion)")
        hot.tag(target.id, epoch: target.epoch, version: target.newVersion)
        guard let (old, new) = condensed else { return (nil, touched) }
        let change = NetChange(
            list: target.id, epoch: target.epoch, from: target.version, to: target.newVersion, old: old, new: new)
        return (change, touched)
    }

    /// `touched` condensed with `index`; when the two disagree (a stale index),
    /// the index is rebuilt from the rows once and the condensing tried again.
    /// Both mismatches go to ``StoreConfiguration/onInconsistency``; a server
    /// answers a reset rather than trap or send a wrong change.
    /// - Returns: `nil` when even the rebuilt index disagrees.
    func condense(_ touched: TouchedEntities, of list: Identifier, with index: ListIndex, _ context: String)
        throws(StoreError) -> (old: CondensedListSections, new: CondensedListSections)?
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

    /// Publishes the rank indexes readers use (see ``IndexBoard``), after the
    /// transaction that made `commits` committed: for each list, its hot index
    /// when it describes the list's last commit here and the board's is missing
    /// or ``IndexBoard/publishInterval`` versions old.
    package func publishIndexes(of commits: [Commit], to board: IndexBoard) {
        var last: [Identifier: Commit] = [:]
        for commit in commits { last[commit.list] = commit }
        for (list, commit) in last {
            if commit.deleted {
                board.remove(list)
                continue
            }
            guard board.wants(list, epoch: commit.epoch, version: commit.version),
                let tag = hot.tag(of: list), tag.epoch == commit.epoch, tag.version == commit.version,
                let index = hot.index(of: list)
            else { continue }
            board.publish(index, of: list, epoch: commit.epoch, version: commit.version)
        }
    }
}

/// The hot rank indexes' bookkeeping around transactions: ``GroupCommit``
/// calls these around each write and each batch; a store's other
/// transactions on the writer (pruning) call ``transactionRolledBack()``.
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
