import ListModel
import ListWire
import SectionDiff

/// The list store: the only thing the service knows about persistence.
///
/// Nothing here mentions a database so that listd can later run several
/// instances on another backend; ``SQLiteStore`` is the embedded implementation.
/// Every method is safe to call from any task: implementations do their blocking
/// work on their own threads and resume the caller when done.
///
/// Cancellation: a call whose task is cancelled before the store has started
/// it may fail with `cancelled` having done nothing (a queued write is not
/// applied); a call already started runs to its end, and a committed write is
/// answered as committed. ``SQLiteStore`` does so; a store may also ignore
/// cancellation and complete every call.
public protocol Store: Sendable {
    /// Creates a list at version 1 with a fresh epoch; ids left `nil` are generated.
    /// `indexes` are model paths to declare indexes on (see ``DeclaredIndexes``),
    /// in the same transaction, so the items are indexed as they are written.
    ///
    /// Fails with `listAlreadyExists`, `duplicateId`, `modelTooLarge`, `invalidName`,
    /// `invalidModel` (an index path ``DeclaredIndexes`` refuses), `limitExceeded`.
    func createList(id: Identifier?, name: String, sections: [NewSection], indexes: [[String]]) async throws(StoreError)
        -> ListSnapshot

    /// Lists in id order, at most `limit`, starting after the id `after`, and
    /// only those whose ids lie in `range` (byte order) when it is given: a
    /// token that opens `u42-*` pages through its own lists without reading
    /// anyone else's.
    func lists(limit: Int, after: Identifier?, in range: ClosedRange<String>?) async throws(StoreError)
        -> [ListSummary]

    /// The whole list, read in one transaction so content and version agree.
    func snapshot(of list: Identifier) async throws(StoreError) -> ListSnapshot

    /// The list's id, epoch and version, without its content.
    func head(of list: Identifier) async throws(StoreError) -> ListHead

    /// Applies `ops` in order, all or nothing, in one version.
    ///
    /// With `expectedVersion`, fails with `versionMismatch` (writing nothing)
    /// unless the list is at that version. A write whose every op is a no-op
    /// (same model, same place) does not bump the version.
    func apply(_ ops: [ListOperation], to list: Identifier, expectedVersion: Int64?) async throws(StoreError)
        -> WriteResult

    /// Replaces the whole content (`PUT`): entities are matched by id and kept,
    /// updated, moved, deleted or inserted; `name` is kept when `nil`.
    /// `indexes` are declared too (those not declared yet; none is dropped),
    /// in the same transaction; declaring one is not a content change.
    func replace(
        _ list: Identifier, name: String?, sections: [NewSection], indexes: [[String]], expectedVersion: Int64?
    ) async throws(StoreError) -> WriteResult

    /// Deletes a list with its sections, items and history.
    ///
    /// Every write method (this one, ``createList(id:name:sections:indexes:)``,
    /// ``apply(_:to:expectedVersion:)``, ``replace(_:name:sections:indexes:expectedVersion:)``,
    /// ``addIndex(_:to:progress:)``, ``dropIndex(_:from:)``, ``setTextIndex(_:on:progress:)``)
    /// claims the calling task's ``IdempotencyClaim/current`` key in its own
    /// transaction, failing with `idempotencyKeyUsed` (applying nothing) when
    /// the caller's key is recorded already.
    func deleteList(_ list: Identifier, expectedVersion: Int64?) async throws(StoreError)

    /// The current snapshot and the snapshot at each of `versions` still inside
    /// the retained history, all in one read transaction.
    func snapshots(of list: Identifier, at versions: Set<Int64>) async throws(StoreError) -> VersionedSnapshots

    /// The net change from `version` to the current version, or a reset when
    /// `version` is outside the kept history or above the current version.
    ///
    /// Its cost should grow with the change, not with the list; the default
    /// implementation rebuilds both snapshots (O(n)) and is only a fallback.
    func changes(of list: Identifier, since version: Int64) async throws(StoreError) -> ChangeSince

    /// The rows a live view is built from, in one read (see ``ViewRows``):
    /// the items holding an indexed condition's value, else every item.
    func viewRows(of list: Identifier, matching conditions: [ItemQuery.Condition]) async throws(StoreError)
        -> ViewRows

    /// Every section and item touched after `version`, with its rows then and
    /// now (see ``TouchedSpan``); `nil` when `version` is outside the kept
    /// history or above the current version. Costs what changed, not the list.
    func touched(_ list: Identifier, since version: Int64) async throws(StoreError) -> TouchedSpan?

    /// A page of items filtered by section, model-field equality and substring.
    func items(of list: Identifier, query: ItemQuery) async throws(StoreError) -> ItemPage

    /// The model paths the list has declared indexes on, and whether `q=` has its text index.
    func indexes(of list: Identifier) async throws(StoreError) -> ListIndexes

    /// Declares an index on `path` (see ``DeclaredIndexes``) and indexes the
    /// list's items in one transaction, calling `progress(done, total)` as it
    /// goes; `false` when the index was declared already. Not a content
    /// change: the version stays.
    func addIndex(_ path: [String], to list: Identifier, progress: @escaping @Sendable (Int, Int) -> Void)
        async throws(StoreError) -> Bool

    /// Drops the index on `path`; `false` when the list has none.
    func dropIndex(_ path: [String], from list: Identifier) async throws(StoreError) -> Bool

    /// Turns the list's text index for `q=` on (indexing its items, calling
    /// `progress(done, total)`) or off; `false` when it already was so.
    func setTextIndex(
        _ enabled: Bool, on list: Identifier, progress: @escaping @Sendable (Int, Int) -> Void
    ) async throws(StoreError) -> Bool

    /// The caller's record of an `Idempotency-Key` (see ``IdempotencyClaim``), if any.
    func idempotencyRecord(caller: String, key: String) async throws(StoreError) -> IdempotencyRecord?

    /// Attaches the service's answer to `claim`'s record, in its own
    /// transaction; inserts the record with it when no write of the request
    /// claimed the key (a request that changed nothing). Returns `nil` when
    /// kept, or the record as it is when it holds an answer already or
    /// another request's fingerprint (to replay or refuse that instead).
    func recordIdempotentAnswer(_ claim: IdempotencyClaim, _ answer: StoredAnswer) async throws(StoreError)
        -> IdempotencyRecord?

    /// Registers `observer` to hear of every durable commit that changed or
    /// deleted a list. It is called on the store's writer thread after the
    /// commit and before the writers are answered (so a cache fed by it is
    /// never behind a client's own acknowledged write), never under a lock; it
    /// must return quickly. A store's own commits of one list come in version
    /// order; a store shared by several processes also reports the others'
    /// commits as it hears of them, which may be after a later local one, so
    /// an observer keeps the highest version it heard.
    func onCommit(_ observer: @escaping @Sendable (Commit) -> Void) -> CommitSubscription
}

extension Store {
    /// Lists in id order, at most `limit`, starting after the id `after`.
    public func lists(limit: Int, after: Identifier?) async throws(StoreError) -> [ListSummary] {
        try await lists(limit: limit, after: after, in: nil)
    }

    /// Creates a list with no declared indexes.
    public func createList(id: Identifier?, name: String, sections: [NewSection]) async throws(StoreError)
        -> ListSnapshot
    {
        try await createList(id: id, name: name, sections: sections, indexes: [])
    }

    /// Replaces the whole content, declaring no index.
    public func replace(_ list: Identifier, name: String?, sections: [NewSection], expectedVersion: Int64?)
        async throws(StoreError) -> WriteResult
    {
        try await replace(list, name: name, sections: sections, indexes: [], expectedVersion: expectedVersion)
    }

    /// The fallback: both whole snapshots, every element named (no runs).
    public func changes(of list: Identifier, since version: Int64) async throws(StoreError) -> ChangeSince {
        let snapshots = try await snapshots(of: list, at: [version])
        let current = snapshots.current
        guard version <= current.version, let old = snapshots.atVersion[version] else { return .reset(current) }
        return .change(
            NetChange(
                list: current.id, epoch: current.epoch, from: version, to: current.version,
                old: old.condensedSections, new: current.condensedSections))
    }
}

extension ListSnapshot {
    /// The whole snapshot as a condensed list with no runs.
    public var condensedSections: CondensedListSections {
        sections.map { section in
            ArraySection(
                model: .element(JSONEntry(id: section.id.rawValue, model: JSONText(section.model.canonicalText))),
                items: section.items.map {
                    .element(JSONEntry(id: $0.id.rawValue, model: JSONText($0.model.canonicalText)))
                })
        }
    }
}
