import HTTP
import JSON
import ListModel
import ListStore
import ListView

/// `/lists` and `/lists/{list}`: the lists and their whole snapshots. Holds
/// the store (through ``ListRepository``), the request decoder, and the
/// change computer, for the change answer a `PATCH` or `PUT` returns.
struct ListRoutes: RouteGroup {
    let lists: ListRepository
    let decoder: RequestDecoder
    let changes: ChangeComputer

    func register(in table: inout RouteTable) {
        table.add(.get, "/lists", .read, .async { context in try await listLists(context) })
        table.add(.post, "/lists", .write, .async { context in try await createList(context) })
        table.add(.get, "/lists/{list}", .read, .custom { exchange in getList(exchange) })
        table.add(.put, "/lists/{list}", .write, .async { context in try await replaceList(context) })
        table.add(.patch, "/lists/{list}", .write, .async { context in try await patchList(context) })
        table.add(.delete, "/lists/{list}", .admin, .async { context in try await deleteList(context) })
    }

    /// `GET /lists?limit=&after=`: lists in id order, a page at a time.
    func listLists(_ context: Context) async throws(Problem) -> Response {
        let limit = try context.integerParameter("limit", in: 1...1000, default: 100)
        let after = try context.identifierParameter("after")
        let page = try await storeCall { () throws(StoreError) in
            try await Self.lists(in: lists.store, limit: limit, after: after, scope: context.caller.lists)
        }
        return context.json(capacity: 64 + page.count * 128) { writer in
            writer.beginObject()
            writer.key("lists")
            writer.beginArray()
            for summary in page {
                writer.beginObject()
                writer.key("id")
                writer.string(summary.head.id.rawValue)
                writer.key("name")
                writer.string(summary.name)
                writer.key("epoch")
                writer.string(summary.head.epoch)
                writer.key("version")
                writer.int64(summary.head.version)
                writer.key("sectionCount")
                writer.int(summary.sectionCount)
                writer.key("itemCount")
                writer.int(summary.itemCount)
                writer.endObject()
            }
            writer.endArray()
            if page.count == limit, let last = page.last {
                writer.key("next")
                writer.string(last.head.id.rawValue)
            }
            writer.endObject()
        }
    }

    /// A page of the lists `scope` opens (every list without one): one range
    /// of ids per scope entry, each read only as far as the page needs, merged
    /// in id order. The cost grows with the token's entries and the page, not
    /// with the lists it cannot see.
    static func lists(in store: any Store, limit: Int, after: Identifier?, scope: ListScope?) async throws(StoreError)
        -> [ListSummary]
    {
        guard let scope else { return try await store.lists(limit: limit, after: after, in: nil) }
        var merged: [ListSummary] = []
        for range in scope.ranges {
            if let after, after.rawValue.utf8.lexicographicallyPrecedes(range.upperBound.utf8) == false { continue }
            merged += try await store.lists(limit: limit, after: after, in: range)
        }
        merged.sort { $0.head.id.rawValue.utf8.lexicographicallyPrecedes($1.head.id.rawValue.utf8) }
        var page: [ListSummary] = []
        for summary in merged where page.last?.head.id != summary.head.id {
            page.append(summary)
            if page.count == limit { break }
        }
        return page
    }

    /// `POST /lists`: creates a list, with sections if the body has them.
    func createList(_ context: Context) async throws(Problem) -> Response {
        let fields = try FieldReader(
            decoder.json(context.request, emptyAs: .object([:])), context: "the body", limits: decoder.models)
        try fields.allowOnly(["id", "name", "sections", "indexes"])
        let named = try fields.identifier("id")
        if let scope = context.caller.lists {
            guard let named else {
                throw .forbidden("this token may create only lists it opens: name the list with \"id\"")
            }
            guard scope.contains(named) else {
                throw .forbidden("this token may not create list \"\(named)\": it is outside the token's lists")
            }
        }
        let id = named ?? Identifier.generate()
        let name = try fields.string("name") ?? ""
        let sections = try decoder.sections(fields)
        let indexes = try IndexRoutes.declaredIndexes(fields)
        let (snapshot, kept) = try await keepingAnswer({ createdAnswer(context, SnapshotCache.entry($0)) }) {
            () throws(Problem) in
            try await storeCall { () throws(StoreError) in
                try await lists.store.createList(id: id, name: name, sections: sections, indexes: indexes)
            }
        }
        // The store announced the create (its commit recorded the head) before answering.
        let entry = lists.created(snapshot)
        return kept ?? createdAnswer(context, entry)
    }

    /// `201 Created` with the new list's snapshot and its `Location`.
    func createdAnswer(_ context: Context, _ entry: SnapshotCache.Entry) -> Response {
        var response = snapshotResponse(context, entry, status: .created)
        response.headers.add(name: "Location", value: ResourcePath.of(entry.snapshot.id))
        return response
    }

    /// `GET /lists/{list}`: the snapshot, from memory when unchanged; 304 for a matching `If-None-Match`.
    /// With `where`, `q`, `order`, `group` or `limit`: the view's snapshot (``viewSnapshot(_:of:)``).
    func getList(_ exchange: Exchange) {
        let context = exchange.context
        let list: Identifier
        let view: ViewSpec?
        do throws(Problem) {
            list = try context.identifier("list")
            view = try context.view(allowing: [])
        } catch {
            return exchange.fail(error)
        }
        if let view {
            return exchange.task {
                do throws(Problem) {
                    exchange.respond(try await viewSnapshot(context, view, of: list))
                } catch {
                    exchange.fail(error)
                }
            }
        }
        if let entry = lists.cachedSnapshot(list) {
            return exchange.respond(snapshotResponse(context, entry))
        }
        exchange.task {
            do throws(Problem) {
                exchange.respond(snapshotResponse(context, try await lists.currentSnapshot(list)))
            } catch {
                exchange.fail(error)
            }
        }
    }

    /// A view's snapshot: the list's shape with the view's sections and
    /// positions; the list's `ETag` (a view changes only when its list does),
    /// so `If-None-Match` gives 304 while the list is unchanged.
    func viewSnapshot(_ context: Context, _ view: ViewSpec, of list: Identifier) async throws(Problem) -> Response {
        let (head, body) = try await storeCall { () throws(StoreError) in
            try await changes.views.snapshot(LiveViews.Key(list: list, view: view))
        }
        var headers = HTTPHeaders()
        headers.add(name: "ETag", value: head.etag)
        if let condition = context.request.header("If-None-Match"), Self.etagMatches(condition, head.etag) {
            return Response(status: .notModified, headers: headers)
        }
        headers.add(name: "Content-Type", value: "application/json")
        return Response(
            status: .ok, headers: headers,
            body: context.pretty ? prettyPrinted(body.dropLast()) + [UInt8(ascii: "\n")] : body)
    }

    /// The snapshot answer, honouring `If-None-Match` and `?pretty`.
    func snapshotResponse(_ context: Context, _ entry: SnapshotCache.Entry, status: HTTPStatus = .ok) -> Response {
        var headers = HTTPHeaders()
        headers.add(name: "ETag", value: entry.etag)
        if status == .ok, let condition = context.request.header("If-None-Match"),
            Self.etagMatches(condition, entry.etag)
        {
            return Response(status: .notModified, headers: headers)
        }
        headers.add(name: "Content-Type", value: "application/json")
        let body = context.pretty ? prettyPrinted(entry.body.dropLast()) + [UInt8(ascii: "\n")] : entry.body
        return Response(status: status, headers: headers, body: body)
    }

    /// Whether an `If-None-Match` value names `etag` (weak comparison, `*` matches all).
    static func etagMatches(_ condition: String, _ etag: String) -> Bool {
        for candidate in condition.split(separator: ",") {
            var tag = Substring(candidate.trimmingWhitespace())
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
            if tag == etag { return true }
        }
        return false
    }

    /// `PUT /lists/{list}`: replaces the whole snapshot (creating the list if
    /// it does not exist); the server matches sections and items by id and
    /// records the difference as one version.
    func replaceList(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let fields = try FieldReader(decoder.json(context.request), context: "the body", limits: decoder.models)
        // A snapshot read with GET may be sent back as it is: its id, epoch and version are ignored.
        try fields.allowOnly(["id", "name", "sections", "indexes", "epoch", "version"])
        if let id = try fields.identifier("id"), id != list {
            throw .invalidRequest("the body's id \"\(id)\" differs from the list in the path, \"\(list)\"")
        }
        guard fields.has("sections") else {
            throw .invalidRequest("the body needs \"sections\" (use [] to empty the list)")
        }
        let name = try fields.string("name")
        let sections = try decoder.sections(fields)
        let indexes = try IndexRoutes.declaredIndexes(fields)
        let expected = try await lists.expectedVersion(context, list: list)
        let result: WriteResult
        do throws(Problem) {
            let (replaced, kept) = try await keepingChange(unchanged: { renderedWriteAnswer(context, $0) }) {
                () throws(Problem) in
                do throws(StoreError) {
                    return try await lists.store.replace(
                        list, name: name, sections: sections, indexes: indexes, expectedVersion: expected)
                } catch {
                    throw Problem(error)
                }
            }
            if let kept { return kept }
            result = replaced
        } catch  where error.slug == "unknown-list" && expected == nil {
            let (snapshot, kept) = try await keepingAnswer({ createdAnswer(context, SnapshotCache.entry($0)) }) {
                () throws(Problem) in
                try await storeCall { () throws(StoreError) in
                    try await lists.store.createList(
                        id: list, name: name ?? "", sections: sections, indexes: indexes)
                }
            }
            let entry = lists.created(snapshot)
            return kept ?? createdAnswer(context, entry)
        }
        return try await writeAnswer(context, result)
    }

    /// `PATCH /lists/{list}`: a batch of ops, all or nothing.
    func patchList(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let operations = try decoder.operations(decoder.json(context.request))
        let expected = try await lists.expectedVersion(context, list: list)
        let (result, kept) = try await keepingChange(unchanged: { renderedWriteAnswer(context, $0) }) {
            () throws(Problem) in
            try await storeCall { () throws(StoreError) in
                try await lists.store.apply(operations, to: list, expectedVersion: expected)
            }
        }
        if let kept { return kept }
        return try await writeAnswer(context, result)
    }

    /// `DELETE /lists/{list}`.
    func deleteList(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let expected = try await lists.expectedVersion(context, list: list)
        // The commit pipeline dropped the list's cached snapshot before the store answered.
        let (_, kept) = try await keepingAnswer({ (_: Void) in Response(status: .noContent) }) {
            () throws(Problem) in
            try await storeCall { () throws(StoreError) in
                try await lists.store.deleteList(list, expectedVersion: expected)
            }
        }
        return kept ?? Response(status: .noContent)
    }

    /// ``writeAnswer(_:_:)`` from the result alone, with no effect (the
    /// change is encoded, not remembered): what a keyed write that changed
    /// nothing keeps with its commit (one that changed something keeps its
    /// change: ``keepingChange(unchanged:_:)``); `nil` when the store
    /// recorded no change to encode.
    func renderedWriteAnswer(_ context: Context, _ result: WriteResult) -> Response? {
        let head = ListHead(id: result.list, epoch: result.epoch, version: result.version)
        let answer: EncodedChangeAnswer
        if !result.changed {
            answer = .unchanged(head, from: result.version)
        } else if let change = result.change {
            answer = .change(change)
        } else {
            return nil
        }
        return ChangeAnswerResponse.response(json: answer.json, pretty: context.pretty, etag: head.etag)
    }

    /// The answer to a write of the whole list: the new version and the
    /// changeset the write made, in the change stream's shape.
    ///
    /// No head is noted here: the write's commit recorded it (on the store's
    /// thread, before the store answered), and a later one the read below
    /// may see is recorded by its own commit.
    func writeAnswer(_ context: Context, _ result: WriteResult) async throws(Problem) -> Response {
        let head = ListHead(id: result.list, epoch: result.epoch, version: result.version)
        let answer: EncodedChangeAnswer
        if !result.changed {
            answer = .unchanged(head, from: result.version)
        } else if let change = result.change {
            answer = changes.recorded(change)
        } else {
            // A store that does not record its writes' changes: ask it for the one version.
            let lookup = try await storeCall { () throws(StoreError) in
                try await lists.store.changes(of: result.list, since: result.previousVersion)
            }
            switch lookup {
            case .change(let change):
                // When later writes landed already, this is the net change up to the latest: still exact.
                answer = .change(change)
            case .reset(let snapshot):
                answer = .reset(snapshot, from: result.previousVersion)
            }
        }
        return ChangeAnswerResponse.response(json: answer.json, pretty: context.pretty, etag: head.etag)
    }
}
