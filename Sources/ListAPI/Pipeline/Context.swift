import HTTP
import JSON
import ListModel
import ListStore

/// One request in flight through the pipeline: what every middleware and
/// every route sees of it.
struct Context: Sendable {
    var request: Request
    /// The matched route's pattern, the label metrics use (`unmatched` when no
    /// route matched, `preflight` for a CORS preflight).
    var route: String
    /// What the matched route needs of the caller's token; nil when it is open
    /// to everyone (`/healthz`) or no route matched.
    var access: AccessPolicy.Access?
    /// When the request reached the service.
    var started: ContinuousClock.Instant
    /// Who sent it, as ``AccessControl`` settled (everyone, for open routes).
    var caller: Caller

    init(request: Request, route: String, access: AccessPolicy.Access?, started: ContinuousClock.Instant) {
        self.request = request
        self.route = route
        self.access = access
        self.started = started
        self.caller = .open(address: request.remoteAddress)
    }

    /// Whether the client asked for `?pretty` output.
    var pretty: Bool { request.queryItems.contains { $0.name == "pretty" && $0.value != "false" && $0.value != "0" } }

    /// A path parameter, validated as an id (the router decoded it).
    func identifier(_ name: String) throws(Problem) -> Identifier {
        let text = request.pathParameters[name] ?? ""
        if let reason = Identifier.validationFailure(text) {
            throw Problem(
                slug: "invalid-id", title: "The id is not valid", status: 400,
                detail: "the \(name) id in the path is invalid: \(reason)")
        }
        guard let id = Identifier(text) else {
            throw Problem(
                slug: "invalid-id", title: "The id is not valid", status: 400,
                detail: "the \(name) id in the path is invalid")
        }
        return id
    }

    /// A whole-number query parameter within `range`, or `defaultValue` when absent.
    func integerParameter(_ name: String, in range: ClosedRange<Int>, default defaultValue: Int) throws(Problem) -> Int
    {
        guard let text = request.queryValue(name), !text.isEmpty else { return defaultValue }
        guard let value = Int(text), range.contains(value) else {
            throw .invalidParameter(
                "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), got \"\(text.prefix(40))\""
            )
        }
        return value
    }

    /// An id query parameter, or nil when absent.
    func identifierParameter(_ name: String) throws(Problem) -> Identifier? {
        guard let text = request.queryValue(name) else { return nil }
        if let reason = Identifier.validationFailure(text) {
            throw .invalidParameter("\(name) is not a valid id: \(reason)")
        }
        return Identifier(text)
    }

    /// A JSON answer built by `build`, compact or pretty as the client asked.
    func json(
        status: HTTPStatus = .ok, etag: String? = nil, location: String? = nil, capacity: Int = 256,
        _ build: (inout JSONWriter) -> Void
    ) -> Response {
        var writer = JSONWriter(capacity: capacity)
        build(&writer)
        var response = JSONBody.response(writer, pretty: pretty, status: status, etag: etag)
        if let location { response.headers.add(name: "Location", value: location) }
        return response
    }

    /// `{"list","epoch","version", …}` with the list's ETag: the answer about a
    /// list, a section, an item or an index.
    func listAnswer(
        _ head: ListHead, status: HTTPStatus = .ok, location: String? = nil, _ body: (inout JSONWriter) -> Void
    ) -> Response {
        json(status: status, etag: head.etag, location: location, capacity: 512) { writer in
            writer.beginObject()
            writer.listHeadMembers(head)
            body(&writer)
            writer.endObject()
        }
    }
}

/// Where a list, section or item lives (a `Location` header's value).
enum ResourcePath {
    static func of(_ list: Identifier, section: Identifier? = nil, item: Identifier? = nil) -> String {
        if let item { return "/lists/\(list)/items/\(item)" }
        if let section { return "/lists/\(list)/sections/\(section)" }
        return "/lists/\(list)"
    }
}
