import HTTP
import JSON
import ListStore
import Logging

/// `/lists/{list}/indexes[/{path}]` and `/lists/{list}/text-index`: declared
/// indexes. Holds the store (through ``ListRepository``) and the logger that
/// reports an index build's progress.
struct IndexRoutes: RouteGroup {
    let lists: ListRepository
    let logger: Logger

    func register(in table: inout RouteTable) {
        table.add(.get, "/lists/{list}/indexes", .read, .async { context in try await listIndexes(context) })
        table.add(.put, "/lists/{list}/indexes/{path}", .admin, .async { context in try await putIndex(context) })
        table.add(
            .delete, "/lists/{list}/indexes/{path}", .admin, .async { context in try await deleteIndex(context) })
        table.add(.put, "/lists/{list}/text-index", .admin, .async { context in try await putTextIndex(context) })
        table.add(
            .delete, "/lists/{list}/text-index", .admin, .async { context in try await deleteTextIndex(context) })
    }

    /// `GET /lists/{list}/indexes`: the model paths the list indexes for `where=`.
    func listIndexes(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let indexes = try await storeCall { () throws(StoreError) in try await lists.store.indexes(of: list) }
        let head = try await lists.head(of: list)
        return context.listAnswer(head) { writer in
            writer.key("text")
            writer.bool(indexes.text)
            writer.key("indexes")
            writer.beginArray()
            for path in indexes.paths {
                writer.beginObject()
                writer.key("path")
                writer.string(path.joined(separator: "."))
                writer.endObject()
            }
            writer.endArray()
        }
    }

    /// `PUT /lists/{list}/indexes/{path}`: declares an index on a model path
    /// (`done`, `tags.0`) and indexes the existing items before answering
    /// (`201`; `200` when it was declared already). Progress goes to the log.
    func putIndex(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let path = try Self.indexPath(context)
        let dotted = path.joined(separator: ".")
        let logger = self.logger
        let started = ContinuousClock.now
        logger.info("declaring index", metadata: ["list": "\(list)", "path": "\(dotted)"])
        let created = try await storeCall { () throws(StoreError) in
            try await lists.store.addIndex(path, to: list) { done, total in
                logger.info(
                    "indexing items",
                    metadata: ["list": "\(list)", "path": "\(dotted)", "done": "\(done)", "total": "\(total)"])
            }
        }
        logger.info(
            created ? "index built" : "index already declared",
            metadata: ["list": "\(list)", "path": "\(dotted)", "duration": "\(ContinuousClock.now - started)"])
        let head = try await lists.head(of: list)
        return context.listAnswer(
            head, status: created ? .created : .ok,
            location: created ? "\(ResourcePath.of(list))/indexes/\(Self.percentEncoded(dotted))" : nil
        ) { writer in
            writer.key("path")
            writer.string(dotted)
        }
    }

    /// `DELETE /lists/{list}/indexes/{path}`: drops the index (`204`; `404 unknown-index` when there is none).
    func deleteIndex(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let path = try Self.indexPath(context)
        let dropped = try await storeCall { () throws(StoreError) in try await lists.store.dropIndex(path, from: list) }
        guard dropped else {
            throw Problem(
                slug: "unknown-index", title: "No such index", status: 404,
                detail: "list \"\(list)\" has no index on \"\(path.joined(separator: ".").prefix(300))\"")
        }
        return Response(status: .noContent)
    }

    /// `PUT /lists/{list}/text-index`: turns on the text index that serves
    /// `q=` and indexes the existing items (`201`; `200` when it was on).
    func putTextIndex(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let logger = self.logger
        let started = ContinuousClock.now
        let created = try await storeCall { () throws(StoreError) in
            try await lists.store.setTextIndex(true, on: list) { done, total in
                logger.info(
                    "indexing item text", metadata: ["list": "\(list)", "done": "\(done)", "total": "\(total)"])
            }
        }
        if created {
            logger.info(
                "text index built", metadata: ["list": "\(list)", "duration": "\(ContinuousClock.now - started)"])
        }
        let head = try await lists.head(of: list)
        return context.listAnswer(
            head, status: created ? .created : .ok,
            location: created ? "\(ResourcePath.of(list))/text-index" : nil
        ) { writer in
            writer.key("text")
            writer.bool(true)
        }
    }

    /// `DELETE /lists/{list}/text-index` (`204`; `404 unknown-index` when it is off).
    func deleteTextIndex(_ context: Context) async throws(Problem) -> Response {
        let list = try context.identifier("list")
        let dropped = try await storeCall { () throws(StoreError) in
            try await lists.store.setTextIndex(false, on: list, progress: { _, _ in })
        }
        guard dropped else {
            throw Problem(
                slug: "unknown-index", title: "No such index", status: 404, detail: "list \"\(list)\" has no text index"
            )
        }
        return Response(status: .noContent)
    }

    /// The `{path}` of an index route, checked against ``DeclaredIndexes``.
    static func indexPath(_ context: Context) throws(Problem) -> [String] {
        try indexPath(context.request.pathParameters["path"] ?? "")
    }

    /// A dotted index path (`tags.0`) as its fields, checked against
    /// ``DeclaredIndexes``; `invalid-index-path` names what was sent (and
    /// `where`, when given: `indexes[1]` of a body).
    static func indexPath(_ text: String, where place: String? = nil) throws(Problem) -> [String] {
        let path = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        if let problem = DeclaredIndexes.problem(with: path) {
            throw Problem(
                slug: "invalid-index-path", title: "The index path is not valid", status: 400,
                detail: "\(place.map { "\($0): " } ?? "")\(problem); got \"\(text.prefix(300))\"")
        }
        return path
    }

    /// The `indexes` of a create or replace body (`["done", "tags.0"]`): each
    /// checked as the index routes check a path; none when absent.
    static func declaredIndexes(_ fields: FieldReader) throws(Problem) -> [[String]] {
        guard let values = try fields.array("indexes") else { return [] }
        var paths: [[String]] = []
        for (index, value) in values.enumerated() {
            guard case .string(let text) = value else {
                throw Problem(
                    slug: "invalid-index-path", title: "The index path is not valid", status: 400,
                    detail: "\(fields.context): indexes[\(index)] is not a string (a dotted path such as \"tags.0\")")
            }
            paths.append(try indexPath(text, where: "\(fields.context): indexes[\(index)]"))
        }
        return paths
    }

    /// `text` percent-encoded for one path segment.
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                out += byte < 0x10 ? "%0\(hex)" : "%\(hex)"
            }
        }
        return out
    }
}
