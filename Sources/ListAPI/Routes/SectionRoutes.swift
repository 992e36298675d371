import HTTP
import JSON
import ListModel
import ListStore

/// `/lists/{list}/sections[/{section}]`: one section at a time. Holds the
/// store (through ``ListRepository``) and the request decoder.
struct SectionRoutes: RouteGroup {
    let lists: ListRepository
    let decoder: RequestDecoder

    func register(in table: inout RouteTable) {
        table.add(.get, "/lists/{list}/sections", .read, .async { context in try await listSections(context) })
        table.add(.post, "/lists/{list}/sections", .write, .async { context in try await createSection(context) })
        table.add(.get, "/lists/{list}/sections/{section}", .read, .async { context in try await getSection(context) })
        table.add(
            .put, "/lists/{list}/sections/{section}", .write, .async { context in try await replaceSection(context) })
        table.add(
            .patch, "/lists/{list}/sections/{section}", .write, .async { context in try await patchSection(context) })
        table.add(
            .delete, "/lists/{list}/sections/{section}", .write,
            .async { context in try await deleteSection(context) })
    }

    /// `GET /lists/{list}/sections`: the sections with their items.
    func listSections(_ context: Context) async throws(Problem) -> Response {
        let snapshot = try await lists.currentSnapshot(try context.identifier("list")).snapshot
        return context.listAnswer(snapshot.head) { writer in
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
        let snapshot = try await lists.currentSnapshot(list).snapshot
        guard let found = snapshot.section(id) else { throw .unknownSection(id, in: list) }
        return sectionAnswer(context, snapshot, found)
    }

    /// `POST /lists/{list}/sections`: `{"id"?, "model"?, "items"?, "at"?}`.
    func createSection(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let value = try decoder.json(context.request, emptyAs: .object([:]))
        var section = try decoder.section(value, context: "the body", allowing: ["at"])
        let at = try FieldReader(value, context: "the body", limits: decoder.models).position("at")
        let id = section.id ?? Identifier.generate()
        section.id = id
        let expected = try await lists.expectedVersion(context, list: list)
        return try await write(
            context, [.insertSection(section, at: at)], to: list, expected: expected, answering: id,
            status: .created, location: ResourcePath.of(list, section: id))
    }

    /// `PUT /lists/{list}/sections/{section}`: `{"model"?, "items"?}` replaces
    /// the section's model and (if given) its items, creating the section at
    /// the end if it does not exist. Items named here that live in another
    /// section move here, keeping their identity; items left out are deleted.
    func replaceSection(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let id = try context.identifier("section")
        let value = try decoder.json(context.request)
        let fields = try FieldReader(value, context: "the body", limits: decoder.models)
        try fields.allowOnly(["id", "model", "items"])
        if let bodyID = try fields.identifier("id"), bodyID != id {
            throw .invalidRequest("the body's id \"\(bodyID)\" differs from the section in the path, \"\(id)\"")
        }
        let wanted = try decoder.section(value, context: "the body")
        let replacesItems = fields.has("items")
        return try await lists.readModifyWrite(context, list: list) { snapshot, version throws(Problem) in
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
            let status: HTTPStatus = created ? .created : .ok
            let location = created ? ResourcePath.of(list, section: id) : nil
            if operations.isEmpty {
                guard let found = snapshot.section(id) else { throw .unknownSection(id, in: list) }
                return sectionAnswer(context, snapshot, found, status: status, location: location)
            }
            return try await write(
                context, operations, to: list, expected: version, answering: id, status: status, location: location)
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
        let fields = try FieldReader(decoder.json(context.request), context: "the body", limits: decoder.models)
        try fields.allowOnly(["model", "to"])
        var operations: [ListOperation] = []
        if let model = try fields.model("model") { operations.append(.updateSection(id: id, model: model)) }
        if let to = try fields.position("to") { operations.append(.moveSection(id: id, to: to)) }
        guard !operations.isEmpty else {
            throw .invalidRequest("the body changes nothing: give \"model\", \"to\" or both")
        }
        let expected = try await lists.expectedVersion(context, list: list)
        return try await write(context, operations, to: list, expected: expected, answering: id)
    }

    /// `DELETE /lists/{list}/sections/{section}`: the section and its items.
    func deleteSection(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let id = try context.identifier("section")
        let expected = try await lists.expectedVersion(context, list: list)
        let (result, kept) = try await keepingAnswer(Self.deletedAnswer) { () throws(Problem) in
            try await storeCall { () throws(StoreError) in
                try await lists.store.apply([.deleteSection(id: id)], to: list, expectedVersion: expected)
            }
        }
        return kept ?? Self.deletedAnswer(result)
    }

    func sectionAnswer(
        _ context: Context, _ snapshot: ListSnapshot, _ found: (index: Int, section: SectionSnapshot),
        status: HTTPStatus = .ok, location: String? = nil
    ) -> Response {
        sectionAnswer(context, snapshot.head, found, status: status, location: location)
    }

    /// Applies `operations` and answers with section `id` as they left it:
    /// with an `Idempotency-Key`, rendered inside the write from the rows it
    /// left and kept with its commit (``keepingAnswer(reading:_:)``);
    /// otherwise from the list's snapshot at the new version.
    func write(
        _ context: Context, _ operations: [ListOperation], to list: Identifier, expected: Int64?,
        answering id: Identifier, status: HTTPStatus = .ok, location: String? = nil
    ) async throws(Problem) -> Response {
        let (result, kept) = try await keepingAnswer(reading: {
            (result: WriteResult, rows: WrittenRows) throws(StoreError) -> Response? in
            guard let found = try rows.section(id, in: list) else { return nil }
            return sectionAnswer(context, result.head, found, status: status, location: location)
        }) { () throws(Problem) in
            try await lists.apply(operations, to: list, expected: expected)
        }
        if let kept { return kept }
        let after = try await lists.snapshot(list, at: result.version)
        guard let found = after.section(id) else { throw .unknownSection(id, in: list) }
        return sectionAnswer(context, after, found, status: status, location: location)
    }

    /// `{"list","epoch","version","index","section"}`: a section with its items and where it is.
    func sectionAnswer(
        _ context: Context, _ head: ListHead, _ found: (index: Int, section: SectionSnapshot),
        status: HTTPStatus, location: String?
    ) -> Response {
        context.listAnswer(head, status: status, location: location) { writer in
            writer.key("index")
            writer.int(found.index)
            writer.key("section")
            writer.section(found.section)
        }
    }
}
