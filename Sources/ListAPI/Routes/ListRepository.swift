import HTTP
import ListModel
import ListStore

/// Runs a store call, turning its error into the matching problem.
func storeCall<T>(_ body: () async throws(StoreError) -> T) async throws(Problem) -> T {
    do throws(StoreError) {
        return try await body()
    } catch {
        throw Problem(error)
    }
}

/// Where routes learn a list's current head: the commit router, which the
/// commit pipeline keeps current, or else the store.
///
/// Every write's head is recorded by the pipeline, not here:
/// ``CommitRouter/accept(_:)`` runs on the store's committing thread, before
/// the writer is answered, for every commit (creates and deletes included).
/// What is noted here is only what a *read* learned: a list nobody wrote since
/// this process started, or one another instance wrote that this one has not
/// heard of yet. This is the one place routes note a head.
struct HeadLookup: Sendable {
    let router: CommitRouter
    let store: any Store

    /// The head the commit router knows, without asking the store.
    func known(_ list: Identifier) -> ListHead? { router.head(of: list) }

    /// The list's current head, from the commit router when it knows it.
    func head(of list: Identifier) async throws(Problem) -> ListHead {
        if let head = router.head(of: list) { return head }
        let head = try await storeCall { () throws(StoreError) in try await store.head(of: list) }
        return learned(head)
    }

    /// Records a head read from the store and returns the newest the router
    /// knows (a commit may have been heard meanwhile).
    @discardableResult
    func learned(_ head: ListHead) -> ListHead {
        router.note(head)
        return router.head(of: head.id) ?? head
    }
}

/// The store as the list, section, item and index routes use it: reads
/// through the head cache (``HeadLookup``) and the ``SnapshotCache``, and
/// writes checked against `If-Match`.
///
/// The caches stay coherent without this type's help: an entry of the
/// snapshot cache is served only while its version is the head the commit
/// router holds, which every commit moves before its writer is answered, and
/// a deleted list's entry is dropped by the commit pipeline
/// (``SnapshotCache/committed(_:)``). Here snapshots are only *added*: read
/// through, or written through when a list is created.
struct ListRepository: Sendable {
    let heads: HeadLookup
    let cache: SnapshotCache

    var store: any Store { heads.store }

    /// The list's current head.
    func head(of list: Identifier) async throws(Problem) -> ListHead { try await heads.head(of: list) }

    /// The list's current snapshot if the cache holds it, without waiting.
    func cachedSnapshot(_ list: Identifier) -> SnapshotCache.Entry? {
        guard let head = heads.known(list) else { return nil }
        return cache.entry(for: head)
    }

    /// The list's current snapshot, serialized, from the cache when it is current.
    func currentSnapshot(_ list: Identifier) async throws(Problem) -> SnapshotCache.Entry {
        if let entry = cachedSnapshot(list) { return entry }
        let snapshot = try await storeCall { () throws(StoreError) in try await store.snapshot(of: list) }
        heads.learned(snapshot.head)
        return cache.store(snapshot)
    }

    /// A list just created, serialized and kept, so the next read needs no store call.
    func created(_ snapshot: ListSnapshot) -> SnapshotCache.Entry { cache.store(snapshot) }

    /// The list's snapshot at `version` (which must be within the kept history).
    func snapshot(_ list: Identifier, at version: Int64) async throws(Problem) -> ListSnapshot {
        let snapshots = try await storeCall { () throws(StoreError) in
            try await store.snapshots(of: list, at: [version])
        }
        heads.learned(snapshots.current.head)
        if snapshots.current.version == version { return snapshots.current }
        guard let snapshot = snapshots.atVersion[version] else {
            // Only when history is kept for fewer versions than writes race in.
            return snapshots.current
        }
        return snapshot
    }

    /// The version `If-Match` demands, or nil when the request has none.
    ///
    /// Accepts the list's ETag (`"<epoch>-<version>"`), a bare `"<version>"`,
    /// or `*`. An ETag of another epoch fails at once: the list was deleted
    /// and created again since the client read it.
    func expectedVersion(_ context: Context, list: Identifier) async throws(Problem) -> Int64? {
        guard let header = context.request.header("If-Match")?.trimmingWhitespace(), !header.isEmpty else {
            return nil
        }
        if header == "*" { return nil }
        guard header.hasPrefix("\""), header.hasSuffix("\""), header.count >= 3,
            !header.dropFirst().dropLast().contains("\"")
        else {
            throw .invalidHeader(
                "If-Match must be one ETag such as \"\\\"<epoch>-<version>\\\"\" or \"\\\"<version>\\\"\", got \(header.prefix(80))"
            )
        }
        let tag = header.dropFirst().dropLast()
        let epoch: Substring?
        let versionText: Substring
        if let dash = tag.lastIndex(of: "-") {
            epoch = tag[..<dash]
            versionText = tag[tag.index(after: dash)...]
        } else {
            epoch = nil
            versionText = tag
        }
        guard let version = Int64(versionText), version >= 0 else {
            throw .invalidHeader("If-Match names no version: \(header.prefix(80))")
        }
        if let epoch {
            let current = try await head(of: list)
            if current.epoch != epoch {
                throw .preconditionFailed(
                    "If-Match names epoch \(epoch) but list \"\(list)\" is now epoch \(current.epoch) (it was deleted and created again)"
                )
            }
        }
        return version
    }

    /// Applies `operations` and returns the result with the list as it was
    /// right after them (not any later write).
    func write(
        _ operations: [ListOperation], to list: Identifier, expected: Int64?
    ) async throws(Problem) -> (result: WriteResult, after: ListSnapshot) {
        let result = try await apply(operations, to: list, expected: expected)
        return (result, try await snapshot(list, at: result.version))
    }

    /// Applies `operations` for a section or item route (errors without the op prefix).
    func apply(_ operations: [ListOperation], to list: Identifier, expected: Int64?) async throws(Problem)
        -> WriteResult
    {
        try await storeCall { () throws(StoreError) in
            do throws(StoreError) {
                return try await store.apply(operations, to: list, expectedVersion: expected)
            } catch {
                throw Self.withoutOperationPrefix(error, operations)
            }
        }
    }

    /// The error without the store's `op N (name): ` prefix: the section and
    /// item routes write one section or item, and their client sent no ops,
    /// so a detail naming one would confuse it.
    static func withoutOperationPrefix(_ error: StoreError, _ operations: [ListOperation]) -> StoreError {
        guard let index = error.operationIndex, operations.indices.contains(index) else { return error }
        let prefix = "op \(index) (\(operations[index].name)): "
        guard error.detail.hasPrefix(prefix) else { return error }
        var error = error
        error.detail.removeFirst(prefix.count)
        return error
    }

    /// Runs `attempt` against the current snapshot, retrying when another
    /// write slips in between the read and the write. With `If-Match` the
    /// client's version is used instead and a mismatch is a 412 at once.
    func readModifyWrite<T>(
        _ context: Context, list: Identifier,
        _ attempt: (ListSnapshot, Int64) async throws(Problem) -> T
    ) async throws(Problem) -> T {
        let demanded = try await expectedVersion(context, list: list)
        var tries = 0
        while true {
            let snapshot = try await currentSnapshot(list).snapshot
            if let demanded, demanded != snapshot.version {
                throw .preconditionFailed(
                    "If-Match names version \(demanded) but list \"\(list)\" is at version \(snapshot.version)")
            }
            do throws(Problem) {
                return try await attempt(snapshot, snapshot.version)
            } catch  where error.status == 412 && demanded == nil && tries < 5 {
                tries += 1
            }
        }
    }
}

extension ListSnapshot {
    /// The index and value of a section.
    func section(_ id: Identifier) -> (index: Int, section: SectionSnapshot)? {
        guard let index = sections.firstIndex(where: { $0.id == id }) else { return nil }
        return (index, sections[index])
    }

    /// The section, position and value of an item.
    func item(_ id: Identifier) -> (section: SectionSnapshot, path: (Int, Int), item: ItemSnapshot)? {
        for (sectionIndex, section) in sections.enumerated() {
            if let itemIndex = section.items.firstIndex(where: { $0.id == id }) {
                return (section, (sectionIndex, itemIndex), section.items[itemIndex])
            }
        }
        return nil
    }
}

extension Problem {
    /// 404: no such section in the list.
    static func unknownSection(_ id: Identifier, in list: Identifier) -> Problem {
        Problem(StoreError(.sectionNotFound, "section \"\(id)\" not found in list \"\(list)\""))
    }

    /// 404: no such item in the list.
    static func unknownItem(_ id: Identifier, in list: Identifier) -> Problem {
        Problem(StoreError(.itemNotFound, "item \"\(id)\" not found in list \"\(list)\""))
    }

    /// The same problem with more words in its detail.
    func adding(_ words: String) -> Problem {
        var problem = self
        problem.detail += words
        return problem
    }
}

extension RouteGroup {
    /// `204 No Content` with the list's new `ETag`: the answer to deleting a section or an item.
    static func deletedAnswer(_ result: WriteResult) -> Response {
        var headers = HTTPHeaders()
        headers.add(name: "ETag", value: ListHead(id: result.list, epoch: result.epoch, version: result.version).etag)
        return Response(status: .noContent, headers: headers)
    }
}
