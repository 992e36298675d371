import HTTP
import JSON
import ListModel
import ListStore

extension ListService {
    /// Applies `operations` and returns the result with the list as it was
    /// right after them (not any later write).
    func write(
        _ operations: [ListOperation], to list: Identifier, expected: Int64?
    ) async throws(Problem) -> (result: WriteResult, after: ListSnapshot) {
        let result = try await storeCall { () throws(StoreError) in
            do throws(StoreError) {
                return try await store.apply(operations, to: list, expectedVersion: expected)
            } catch {
                throw Self.withoutOperationPrefix(error, operations)
            }
        }
        return (result, try await snapshot(list, at: result.version))
    }

    /// The error without the store's `op N (name): ` prefix: these routes write one section or
    /// item, and their client sent no ops, so a detail naming one would confuse it.
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

    /// `{"list","epoch","version", "<key>": …}` with the list's ETag.
    func listAnswer(
        _ context: Context, _ head: ListHead, status: HTTPStatus = .ok, location: String? = nil,
        _ body: (inout JSONWriter) -> Void
    ) -> Response {
        json(context, status: status, etag: head.etag, location: location, capacity: 512) { writer in
            writer.beginObject()
            writer.listHeadMembers(head)
            body(&writer)
            writer.endObject()
        }
    }

    // MARK: - Routes

    /// `GET /lists/{list}/sections`: the sections with their items.
    func listSections(_ context: Context) async throws(Problem) -> Response {
        let snapshot = try await currentSnapshot(try context.identifier("list")).snapshot
        return listAnswer(context, snapshot.head) { writer in
            writer.key("sections")
            writer.beginArray()
            for section in snapshot.sections { writer.section(section) }
            writer.endArray()
        }
    }

    /// `GET /lists/{list}/sections/{section}`.
    func getSection(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let id = try context.identifier("section")
        let snapshot = try await currentSnapshot(list).snapshot
        guard let found = snapshot.section(id) else { throw Self.unknownSection(id, in: list) }
        return sectionAnswer(context, snapshot, found)
    }

    /// `POST /lists/{list}/sections`: `{"id"?, "model"?, "items"?, "at"?}`.
    func createSection(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let value = try body(context, emptyAs: .object([:]))
        var section = try decoder.section(value, context: "the body", allowing: ["at"])
        let at = try FieldReader(value, context: "the body", limits: decoder.models).position("at")
        let id = section.id ?? Identifier.generate()
        section.id = id
        let expected = try await expectedVersion(context, list: list)
        let (_, after) = try await write([.insertSection(section, at: at)], to: list, expected: expected)
        guard let found = after.section(id) else { throw Self.unknownSection(id, in: list) }
        return sectionAnswer(context, after, found, status: .created, location: Self.location(list, section: id))
    }

    /// `PUT /lists/{list}/sections/{section}`: `{"model"?, "items"?}` replaces
    /// the section's model and (if given) its items, creating the section at
    /// the end if it does not exist. Items named here that live in another
    /// section move here, keeping their identity; items left out are deleted.
    func replaceSection(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let id = try context.identifier("section")
        let value = try body(context)
        let fields = try FieldReader(value, context: "the body", limits: decoder.models)
        try fields.allowOnly(["id", "model", "items"])
        if let bodyID = try fields.identifier("id"), bodyID != id {
            throw .invalidRequest("the body's id \"\(bodyID)\" differs from the section in the path, \"\(id)\"")
        }
        let wanted = try decoder.section(value, context: "the body")
        let replacesItems = fields.has("items")
        return try await readModifyWrite(context, list: list) { snapshot, version throws(Problem) in
            var operations: [ListOperation] = []
            var created = false
            if let (_, current) = snapshot.section(id) {
                if fields.has("model"), wanted.model != current.model {
                    operations.append(.updateSection(id: id, model: wanted.model))
                }
                if replacesItems {
                    operations += Self.itemOperations(placing: wanted.items, in: id, snapshot: snapshot)
                }
            } else {
                created = true
                var section = wanted
                section.id = id
                section.items = []
                operations.append(.insertSection(section, at: nil))
                operations += Self.itemOperations(placing: wanted.items, in: id, snapshot: snapshot)
            }
            let after: ListSnapshot
            if operations.isEmpty {
                after = snapshot
            } else {
                after = try await write(operations, to: list, expected: version).after
            }
            guard let found = after.section(id) else { throw Self.unknownSection(id, in: list) }
            return sectionAnswer(
                context, after, found, status: created ? .created : .ok,
                location: created ? Self.location(list, section: id) : nil)
        }
    }

    /// The ops that make section `id` hold exactly `items`, in order:
    /// delete its items not named, then place each named item at its index
    /// (moving it from wherever it is, updating its model, or inserting it).
    static func itemOperations(placing items: [NewItem], in id: Identifier, snapshot: ListSnapshot) -> [ListOperation] {
        var operations: [ListOperation] = []
        let named = Set(items.compactMap(\.id))
        if let (_, section) = snapshot.section(id) {
            for item in section.items where !named.contains(item.id) { operations.append(.deleteItem(id: item.id)) }
        }
        for (index, item) in items.enumerated() {
            if let itemID = item.id, let existing = snapshot.item(itemID) {
                operations.append(.moveItem(id: itemID, section: id, to: index))
                if existing.item.model != item.model { operations.append(.updateItem(id: itemID, model: item.model)) }
            } else {
                operations.append(.insertItem(section: id, item: item, at: index))
            }
        }
        return operations
    }

    /// `PATCH /lists/{list}/sections/{section}`: `{"model"?, "to"?}`.
    func patchSection(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let id = try context.identifier("section")
        let fields = try FieldReader(body(context), context: "the body", limits: decoder.models)
        try fields.allowOnly(["model", "to"])
        var operations: [ListOperation] = []
        if let model = try fields.model("model") { operations.append(.updateSection(id: id, model: model)) }
        if let to = try fields.position("to") { operations.append(.moveSection(id: id, to: to)) }
        guard !operations.isEmpty else {
            throw .invalidRequest("the body changes nothing: give \"model\", \"to\" or both")
        }
        let expected = try await expectedVersion(context, list: list)
        let (_, after) = try await write(operations, to: list, expected: expected)
        guard let found = after.section(id) else { throw Self.unknownSection(id, in: list) }
        return sectionAnswer(context, after, found)
    }

    /// `DELETE /lists/{list}/sections/{section}`: the section and its items.
    func deleteSection(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let id = try context.identifier("section")
        let expected = try await expectedVersion(context, list: list)
        let result = try await storeCall { () throws(StoreError) in
            try await store.apply([.deleteSection(id: id)], to: list, expectedVersion: expected)
        }
        var headers = HTTPHeaders()
        headers.add(name: "ETag", value: ListHead(id: list, epoch: result.epoch, version: result.version).etag)
        return Response(status: .noContent, headers: headers)
    }

    func sectionAnswer(
        _ context: Context, _ snapshot: ListSnapshot, _ found: (index: Int, section: SectionSnapshot),
        status: HTTPStatus = .ok, location: String? = nil
    ) -> Response {
        listAnswer(context, snapshot.head, status: status, location: location) { writer in
            writer.key("index")
            writer.int(found.index)
            writer.key("section")
            writer.section(found.section)
        }
    }

    static func unknownSection(_ id: Identifier, in list: Identifier) -> Problem {
        Problem(StoreError(.sectionNotFound, "section \"\(id)\" not found in list \"\(list)\""))
    }

    static func unknownItem(_ id: Identifier, in list: Identifier) -> Problem {
        Problem(StoreError(.itemNotFound, "item \"\(id)\" not found in list \"\(list)\""))
    }
}
