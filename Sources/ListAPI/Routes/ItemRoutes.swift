import Foundation
import HTTP
import JSON
import ListModel
import ListStore
import SectionDiff

/// `/lists/{list}/items[/{item}]` and `/lists/{list}/sections/{section}/items`:
/// one item at a time, and item queries. Holds the store (through
/// ``ListRepository``) and the request decoder.
struct ItemRoutes: RouteGroup {
    let lists: ListRepository
    let decoder: RequestDecoder

    func register(in table: inout RouteTable) {
        table.add(
            .get, "/lists/{list}/sections/{section}/items", .read,
            .async { context in try await listSectionItems(context) })
        table.add(
            .post, "/lists/{list}/sections/{section}/items", .write,
            .async { context in try await createItem(context) })
        table.add(.get, "/lists/{list}/items", .read, .async { context in try await queryItems(context) })
        table.add(.get, "/lists/{list}/items/{item}", .read, .async { context in try await getItem(context) })
        table.add(.put, "/lists/{list}/items/{item}", .write, .async { context in try await replaceItem(context) })
        table.add(.patch, "/lists/{list}/items/{item}", .write, .async { context in try await patchItem(context) })
        table.add(.delete, "/lists/{list}/items/{item}", .write, .async { context in try await deleteItem(context) })
    }

    /// `GET /lists/{list}/sections/{section}/items`.
    func listSectionItems(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let id = try context.identifier("section")
        let snapshot = try await lists.currentSnapshot(list).snapshot
        guard let (_, section) = snapshot.section(id) else { throw .unknownSection(id, in: list) }
        return context.listAnswer(snapshot.head) { writer in
            writer.key("section")
            writer.string(id.rawValue)
            writer.key("items")
            writer.beginArray()
            for item in section.items { writer.item(item) }
            writer.endArray()
        }
    }

    /// `POST /lists/{list}/sections/{section}/items`: `{"id"?, "model"?, "at"?}`.
    func createItem(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let section = try context.identifier("section")
        let value = try decoder.json(context.request, emptyAs: .object([:]))
        var item = try decoder.item(value, context: "the body", allowing: ["at"])
        let at = try FieldReader(value, context: "the body", limits: decoder.models).position("at")
        let id = item.id ?? Identifier.generate()
        item.id = id
        let expected = try await lists.expectedVersion(context, list: list)
        return try await write(
            context, [.insertItem(section: section, item: item, at: at)], to: list, expected: expected,
            answering: id, status: .created, location: ResourcePath.of(list, item: id))
    }

    /// `GET /lists/{list}/items/{item}`: the item, its section and its position.
    func getItem(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let id = try context.identifier("item")
        return try itemAnswer(context, try await lists.currentSnapshot(list).snapshot, id, in: list)
    }

    /// `PUT /lists/{list}/items/{item}`: `{"model", "section"?}` replaces the
    /// item's model; with `"section"` it also moves the item to the end of
    /// that section, or creates it there if it does not exist.
    func replaceItem(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let id = try context.identifier("item")
        let fields = try FieldReader(decoder.json(context.request), context: "the body", limits: decoder.models)
        try fields.allowOnly(["id", "model", "section"])
        if let bodyID = try fields.identifier("id"), bodyID != id {
            throw .invalidRequest("the body's id \"\(bodyID)\" differs from the item in the path, \"\(id)\"")
        }
        let model = try fields.requiredModel("model")
        let section = try fields.identifier("section")
        return try await lists.readModifyWrite(context, list: list) { snapshot, version throws(Problem) in
            var operations: [ListOperation] = []
            var created = false
            if let existing = snapshot.item(id) {
                if let section, section != existing.section.id {
                    guard let (_, target) = snapshot.section(section) else {
                        throw .unknownSection(section, in: list)
                    }
                    operations.append(.moveItem(id: id, section: section, to: target.items.count))
                }
                if existing.item.model != model { operations.append(.updateItem(id: id, model: model)) }
            } else {
                guard let section else {
                    throw Problem.unknownItem(id, in: list).adding(
                        "; to create it with PUT, name its \"section\" in the body")
                }
                created = true
                operations.append(.insertItem(section: section, item: NewItem(id: id, model: model), at: nil))
            }
            let status: HTTPStatus = created ? .created : .ok
            let location = created ? ResourcePath.of(list, item: id) : nil
            if operations.isEmpty {
                return try itemAnswer(context, snapshot, id, in: list, status: status, location: location)
            }
            return try await write(
                context, operations, to: list, expected: version, answering: id, status: status, location: location)
        }
    }

    /// `PATCH /lists/{list}/items/{item}`: `{"model"?, "section"?, "to"?}`;
    /// a `section` without `to` moves the item to that section's end.
    func patchItem(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let id = try context.identifier("item")
        let fields = try FieldReader(decoder.json(context.request), context: "the body", limits: decoder.models)
        try fields.allowOnly(["model", "section", "to"])
        let model = try fields.model("model")
        let section = try fields.identifier("section")
        let to = try fields.position("to")
        guard model != nil || section != nil || to != nil else {
            throw .invalidRequest("the body changes nothing: give \"model\", \"section\", \"to\" or several")
        }
        return try await lists.readModifyWrite(context, list: list) { snapshot, version throws(Problem) in
            guard let existing = snapshot.item(id) else { throw .unknownItem(id, in: list) }
            var operations: [ListOperation] = []
            if section != nil || to != nil {
                let targetID = section ?? existing.section.id
                guard let (_, target) = snapshot.section(targetID) else {
                    throw .unknownSection(targetID, in: list)
                }
                let end = targetID == existing.section.id ? target.items.count - 1 : target.items.count
                operations.append(.moveItem(id: id, section: section, to: to ?? end))
            }
            if let model { operations.append(.updateItem(id: id, model: model)) }
            return try await write(context, operations, to: list, expected: version, answering: id)
        }
    }

    /// `DELETE /lists/{list}/items/{item}`.
    func deleteItem(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let id = try context.identifier("item")
        let expected = try await lists.expectedVersion(context, list: list)
        let (result, kept) = try await keepingAnswer(Self.deletedAnswer) { () throws(Problem) in
            try await storeCall { () throws(StoreError) in
                try await lists.store.apply([.deleteItem(id: id)], to: list, expectedVersion: expected)
            }
        }
        return kept ?? Self.deletedAnswer(result)
    }

    /// `GET /lists/{list}/items?section=&where=&q=&limit=&after=`: items in
    /// list order matching every condition, a page at a time.
    ///
    /// `where=path:value` compares the model field at `path` (dot-separated;
    /// a number indexes an array, as in `tags.0`) with `value`, read as JSON
    /// when it is a JSON literal (`false`, `3`, `null`, `"3"`) and as a string
    /// otherwise; several `where`s must all hold. `q` is a case-insensitive
    /// substring of any string in the model. `after` is the opaque `next`
    /// cursor of the previous page; it stays valid while the list changes.
    func queryItems(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let limit = try context.integerParameter("limit", in: 1...1000, default: 100)
        let section = try context.identifierParameter("section")
        var conditions: [ItemQuery.Condition] = []
        for item in context.request.queryItems where item.name == "where" {
            conditions.append(try Self.condition(item.value))
        }
        var text = context.request.queryValue("q").flatMap { $0.isEmpty ? nil : $0 }
        if let forced = context.caller.view {
            // The token's view is forced here too: its filter joins the query's. A window
            // chooses its items by order, which a query page cannot apply.
            if let limit = forced.limit {
                throw .forbidden(
                    "this token's view is a window (limit=\(limit)); item queries cannot apply it: read the view's snapshot"
                )
            }
            if let forcedText = forced.text {
                if let text, !text.utf8.elementsEqual(forcedText.utf8) {
                    throw .forbidden(
                        "this token's view is forced (\(forced.canonicalQuery)); q: it already searches for another text"
                    )
                }
                text = forcedText
            }
            conditions += forced.conditions.map { ItemQuery.Condition(path: $0.path, value: $0.value) }
        }
        let after = try context.request.queryValue("after").map { cursor throws(Problem) in
            guard let (issuedFor, decoded) = Self.decodeCursor(cursor) else {
                throw .invalidCursor("after is not a cursor this server issued: \(cursor.prefix(60))")
            }
            guard issuedFor == list.rawValue else {
                throw .invalidCursor(
                    "after is a cursor for list \"\(issuedFor.prefix(128))\", not \"\(list)\"; start again without after"
                )
            }
            return decoded
        }
        let query = ItemQuery(section: section, conditions: conditions, text: text, limit: limit, after: after)
        let page = try await storeCall { () throws(StoreError) in try await lists.store.items(of: list, query: query) }
        let head = try await lists.head(of: list)
        var response = context.listAnswer(ListHead(id: list, epoch: head.epoch, version: page.version)) { writer in
            writer.key("items")
            writer.beginArray()
            for entry in page.entries {
                writer.beginObject()
                writer.key("section")
                writer.string(entry.section.rawValue)
                writer.key("id")
                writer.string(entry.item.id.rawValue)
                writer.key("model")
                writer.raw(entry.item.model.canonicalText)
                writer.endObject()
            }
            writer.endArray()
            if let next = page.nextCursor {
                writer.key("next")
                writer.string(Self.encodeCursor(next, list: list))
            }
        }
        response.headers.add(name: "listd-query-plan", value: page.plan.headerValue)
        return response
    }

    /// Parses `path:value` of a `where` parameter.
    static func condition(_ text: String) throws(Problem) -> ItemQuery.Condition {
        guard let colon = text.firstIndex(of: ":") else {
            throw .invalidParameter("where must be path:value, as in where=done:false; got \"\(text.prefix(80))\"")
        }
        let path = text[..<colon].split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !path.isEmpty, !path.contains(where: \.isEmpty) else {
            throw .invalidParameter("where has an empty field name in \"\(text.prefix(80))\"")
        }
        let raw = String(text[text.index(after: colon)...])
        let value: JSONValue
        if let parsed = try? JSONValue(parsing: raw, limits: JSONLimits(maxDepth: 1, maxBytes: 4096)),
            parsed.arrayValue == nil, parsed.objectValue == nil
        {
            value = parsed
        } else {
            value = .string(raw)
        }
        return ItemQuery.Condition(path: path, value: value)
    }

    /// The `next` cursor a client sees: the store's cursor, bound to the list it pages through
    /// (`list` LF `store cursor`, base64url), so that using it on another list is refused.
    static func encodeCursor(_ cursor: String, list: Identifier) -> String {
        Data("\(list)\n\(cursor)".utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The list a cursor was issued for and the store's cursor, or nil when this server did not
    /// make it.
    static func decodeCursor(_ text: String) -> (list: String, cursor: String)? {
        guard text.count <= 2048,
            text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        else {
            return nil
        }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64), let decoded = String(data: data, encoding: .utf8),
            let newline = decoded.firstIndex(of: "\n")
        else { return nil }
        let list = String(decoded[..<newline])
        guard Identifier(list) != nil else { return nil }
        return (list, String(decoded[decoded.index(after: newline)...]))
    }

    func itemAnswer(
        _ context: Context, _ snapshot: ListSnapshot, _ id: Identifier, in list: Identifier,
        status: HTTPStatus = .ok, location: String? = nil
    ) throws(Problem) -> Response {
        guard let found = snapshot.item(id) else { throw .unknownItem(id, in: list) }
        return itemAnswer(
            context, snapshot.head, section: found.section.id,
            at: ElementPath(element: found.path.1, section: found.path.0), found.item, status: status,
            location: location)
    }

    /// `{"list","epoch","version","section","at","item"}`: an item and where it is.
    func itemAnswer(
        _ context: Context, _ head: ListHead, section: Identifier, at path: ElementPath, _ item: ItemSnapshot,
        status: HTTPStatus, location: String?
    ) -> Response {
        context.listAnswer(head, status: status, location: location) { writer in
            writer.key("section")
            writer.string(section.rawValue)
            writer.key("at")
            writer.path(path)
            writer.key("item")
            writer.item(item)
        }
    }

    /// Applies `operations` and answers with item `id` as they left it: with
    /// an `Idempotency-Key`, rendered inside the write from the rows it left
    /// and kept with its commit (``keepingAnswer(reading:_:)``); otherwise
    /// from the list's snapshot at the new version.
    func write(
        _ context: Context, _ operations: [ListOperation], to list: Identifier, expected: Int64?,
        answering id: Identifier, status: HTTPStatus = .ok, location: String? = nil
    ) async throws(Problem) -> Response {
        let (result, kept) = try await keepingAnswer(reading: {
            (result: WriteResult, rows: WrittenRows) throws(StoreError) -> Response? in
            guard let found = try rows.item(id, in: list) else { return nil }
            return itemAnswer(
                context, result.head, section: found.section,
                at: ElementPath(element: found.index, section: found.sectionIndex), found.item, status: status,
                location: location)
        }) { () throws(Problem) in
            try await lists.apply(operations, to: list, expected: expected)
        }
        if let kept { return kept }
        return try itemAnswer(
            context, try await lists.snapshot(list, at: result.version), id, in: list, status: status,
            location: location)
    }
}
