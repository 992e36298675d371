import HTTP
import JSON
import ListModel
import ListStore

extension ListService {
    /// Runs a store call, turning its error into the matching problem.
    func storeCall<T>(_ body: () async throws(StoreError) -> T) async throws(Problem) -> T {
        do throws(StoreError) {
            return try await body()
        } catch {
            if error.kind == .storageFailure || error.kind == .storageFull {
                logger.error("store failure", metadata: ["detail": "\(error.detail)"])
            }
            throw Problem(error)
        }
    }

    /// The list's current head, from the commit router when it knows it.
    func head(of list: Identifier) async throws(Problem) -> ListHead {
        if let head = router.head(of: list) { return head }
        let head = try await storeCall { () throws(StoreError) in try await store.head(of: list) }
        router.note(head)
        return router.head(of: list) ?? head
    }

    /// The list's current snapshot, serialized, from the cache when it is current.
    func currentSnapshot(_ list: Identifier) async throws(Problem) -> SnapshotCache.Entry {
        if let head = router.head(of: list), let entry = cache.entry(for: head) { return entry }
        let snapshot = try await storeCall { () throws(StoreError) in try await store.snapshot(of: list) }
        router.note(snapshot.head)
        return cache.store(snapshot)
    }

    /// The list's snapshot at `version` (which must be within the kept history).
    func snapshot(_ list: Identifier, at version: Int64) async throws(Problem) -> ListSnapshot {
        let snapshots = try await storeCall { () throws(StoreError) in
            try await store.snapshots(of: list, at: [version])
        }
        router.note(snapshots.current.head)
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

    /// The body as JSON.
    func body(_ context: Context, emptyAs empty: JSONValue? = nil) throws(Problem) -> JSONValue {
        try decoder.json(context.request, emptyAs: empty)
    }

    /// A JSON answer built by `build`.
    func json(
        _ context: Context, status: HTTPStatus = .ok, etag: String? = nil, location: String? = nil,
        capacity: Int = 256, _ build: (inout JSONWriter) -> Void
    ) -> Response {
        var writer = JSONWriter(capacity: capacity)
        build(&writer)
        var response = JSONBody.response(writer, pretty: context.pretty, status: status, etag: etag)
        if let location { response.headers.add(name: "Location", value: location) }
        return response
    }

    /// A whole-number query parameter within `range`, or `defaultValue` when absent.
    func integerParameter(
        _ context: Context, _ name: String, in range: ClosedRange<Int>, default defaultValue: Int
    ) throws(Problem) -> Int {
        guard let text = context.request.queryValue(name), !text.isEmpty else { return defaultValue }
        guard let value = Int(text), range.contains(value) else {
            throw .invalidParameter(
                "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), got \"\(text.prefix(40))\""
            )
        }
        return value
    }

    /// An id query parameter, or nil when absent.
    func identifierParameter(_ context: Context, _ name: String) throws(Problem) -> Identifier? {
        guard let text = context.request.queryValue(name) else { return nil }
        if let reason = Identifier.validationFailure(text) {
            throw .invalidParameter("\(name) is not a valid id: \(reason)")
        }
        return Identifier(text)
    }

    /// Where a list, section or item lives.
    static func location(_ list: Identifier, section: Identifier? = nil, item: Identifier? = nil) -> String {
        if let item { return "/lists/\(list)/items/\(item)" }
        if let section { return "/lists/\(list)/sections/\(section)" }
        return "/lists/\(list)"
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
