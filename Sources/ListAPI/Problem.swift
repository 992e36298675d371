import HTTP
import JSON
import ListStore

/// An error answer in the shape of RFC 9457 (`application/problem+json`).
///
/// Every error listd returns is one of these: a stable `type` URI a client can
/// switch on, a short `title`, the HTTP `status`, and a `detail` that names what
/// was wrong (the field, the id, the limit).
public struct Problem: Error, Sendable, Equatable {
    /// The last path component of the type URI, for example `unknown-list`.
    public var slug: String
    /// A short, fixed summary of the problem type.
    public var title: String
    /// The HTTP status code.
    public var status: Int
    /// What exactly was wrong with this request.
    public var detail: String
    /// Extra response headers (`Allow`, `WWW-Authenticate`, `Retry-After`).
    public var headers: [(name: String, value: String)] = []

    /// The prefix of every problem type URI.
    public static let typePrefix = "https://listd.dev/problems/"

    /// Creates a problem.
    public init(slug: String, title: String, status: Int, detail: String) {
        self.slug = slug
        self.title = title
        self.status = status
        self.detail = detail
    }

    /// The full type URI.
    public var type: String { Problem.typePrefix + slug }

    public static func == (lhs: Problem, rhs: Problem) -> Bool {
        lhs.slug == rhs.slug && lhs.status == rhs.status && lhs.detail == rhs.detail && lhs.title == rhs.title
    }

    /// The problem as an HTTP response with an `application/problem+json` body.
    public func response() -> Response {
        var writer = JSONWriter(capacity: 128 + detail.utf8.count)
        writer.beginObject()
        writer.key("type")
        writer.string(type)
        writer.key("title")
        writer.string(title)
        writer.key("status")
        writer.int(status)
        writer.key("detail")
        writer.string(detail)
        writer.endObject()
        var responseHeaders = HTTPHeaders()
        responseHeaders.add(name: "Content-Type", value: "application/problem+json")
        for header in headers { responseHeaders.add(name: header.name, value: header.value) }
        return Response(
            status: HTTPStatus(code: status), headers: responseHeaders, body: JSONBody.finish(writer, pretty: false))
    }
}

// MARK: - The catalogue

extension Problem {
    /// The problem for a request the HTTP server refused before routing it
    /// (408, 413, 414, 431, 503, the parser's 400s), typed by its status.
    public static func refused(status: HTTPStatus, detail: String) -> Problem {
        Problem(slug: refusalSlug(for: status), title: status.reasonPhrase, status: status.code, detail: detail)
    }

    /// The type slug of a refusal: fixed for the statuses the server sends,
    /// else the reason phrase lower-cased with words joined by hyphens.
    static func refusalSlug(for status: HTTPStatus) -> String {
        switch status.code {
        case 400: return "bad-request"
        case 408: return "request-timeout"
        case 413: return "content-too-large"
        case 414: return "uri-too-long"
        case 417: return "expectation-failed"
        case 431: return "header-fields-too-large"
        case 501: return "not-implemented"
        case 503: return "service-unavailable"
        case 505: return "http-version-not-supported"
        default:
            let words = status.reasonPhrase.lowercased().split { !$0.isLetter && !$0.isNumber }
            return words.isEmpty ? "status-\(status.code)" : words.joined(separator: "-")
        }
    }

    /// 400: the body is not valid JSON.
    static func invalidJSON(_ detail: String) -> Problem {
        Problem(slug: "invalid-json", title: "The body is not valid JSON", status: 400, detail: detail)
    }

    /// 400: the JSON is well-formed but a field is missing, unknown or of the wrong type.
    static func invalidRequest(_ detail: String) -> Problem {
        Problem(slug: "invalid-request", title: "The request is not valid", status: 400, detail: detail)
    }

    /// 400: a query parameter is malformed.
    static func invalidParameter(_ detail: String) -> Problem {
        Problem(slug: "invalid-parameter", title: "A query parameter is not valid", status: 400, detail: detail)
    }

    /// 400: a request header (`If-Match`) is malformed.
    /// 422: an `Idempotency-Key` the caller used for another request.
    static func idempotencyKeyReused(_ detail: String) -> Problem {
        Problem(
            slug: "idempotency-key-reused", title: "The Idempotency-Key was used for another request", status: 422,
            detail: detail)
    }

    static func invalidHeader(_ detail: String) -> Problem {
        Problem(slug: "invalid-header", title: "A request header is not valid", status: 400, detail: detail)
    }

    /// 400: an `after` cursor this server did not issue, or issued for another list.
    static func invalidCursor(_ detail: String) -> Problem {
        Problem(slug: "invalid-cursor", title: "The cursor is not valid", status: 400, detail: detail)
    }

    /// 401, with `WWW-Authenticate: Bearer`.
    static func unauthorized(_ detail: String) -> Problem {
        var problem = Problem(
            slug: "unauthorized", title: "Authentication required", status: 401, detail: detail)
        problem.headers = [("WWW-Authenticate", "Bearer realm=\"listd\"")]
        return problem
    }

    /// 403: authenticated, but this token may not do this.
    static func forbidden(_ detail: String) -> Problem {
        Problem(slug: "forbidden", title: "Not allowed with this token", status: 403, detail: detail)
    }

    /// 404 for a path no route matches.
    static func noRoute(_ method: HTTPMethod, _ path: String) -> Problem {
        Problem(
            slug: "not-found", title: "No such resource", status: 404,
            detail: "nothing is served at \(method) \(path)")
    }

    /// 405, with `Allow`.
    static func methodNotAllowed(_ method: HTTPMethod, _ path: String, allowed: [HTTPMethod]) -> Problem {
        let names = allowed.map(\.rawValue).joined(separator: ", ")
        var problem = Problem(
            slug: "method-not-allowed", title: "Method not allowed", status: 405,
            detail: "\(method) is not allowed on \(path); allowed: \(names)")
        problem.headers = [("Allow", names)]
        return problem
    }

    /// 412: `If-Match` named another version.
    static func preconditionFailed(_ detail: String) -> Problem {
        Problem(slug: "version-mismatch", title: "The list has another version", status: 412, detail: detail)
    }

    /// 415: a body that is not JSON.
    static func unsupportedMediaType(_ contentType: String) -> Problem {
        Problem(
            slug: "unsupported-media-type", title: "The body must be JSON", status: 415,
            detail: "Content-Type \(contentType) is not accepted; send application/json")
    }

    /// 503 while the server shuts down.
    static func shuttingDown() -> Problem {
        var problem = Problem(
            slug: "shutting-down", title: "The server is shutting down", status: 503,
            detail: "listd is shutting down; retry against another instance or in a moment")
        problem.headers = [("Retry-After", String(Int.random(in: 1...3)))]
        return problem
    }

    /// 500 for a failure of the server itself (never for bad input).
    static func internalError(_ detail: String) -> Problem {
        Problem(slug: "internal-error", title: "The server failed", status: 500, detail: detail)
    }

    /// The answer to a store error.
    init(_ error: StoreError) {
        switch error.kind {
        case .listNotFound:
            self.init(slug: "unknown-list", title: "No such list", status: 404, detail: error.detail)
        case .sectionNotFound:
            self.init(slug: "unknown-section", title: "No such section", status: 404, detail: error.detail)
        case .itemNotFound:
            self.init(slug: "unknown-item", title: "No such item", status: 404, detail: error.detail)
        case .duplicateId:
            self.init(slug: "duplicate-id", title: "The id is already taken", status: 409, detail: error.detail)
        case .listAlreadyExists:
            self.init(slug: "list-exists", title: "The list already exists", status: 409, detail: error.detail)
        case .positionOutOfRange:
            self.init(slug: "position-out-of-range", title: "Position out of range", status: 400, detail: error.detail)
        case .invalidId:
            self.init(slug: "invalid-id", title: "The id is not valid", status: 400, detail: error.detail)
        case .modelTooLarge:
            self.init(slug: "model-too-large", title: "The model is too large", status: 413, detail: error.detail)
        case .invalidModel:
            self.init(slug: "invalid-model", title: "The model is not valid JSON", status: 400, detail: error.detail)
        case .invalidName:
            self.init(slug: "invalid-name", title: "The name is not valid", status: 400, detail: error.detail)
        case .versionMismatch:
            self = .preconditionFailed(error.detail)
        case .limitExceeded:
            self.init(slug: "limit-exceeded", title: "A limit was exceeded", status: 413, detail: error.detail)
        case .invalidCursor:
            self = .invalidCursor(error.detail)
        case .storageFailure:
            self.init(slug: "storage-failure", title: "The database failed", status: 500, detail: error.detail)
        case .storageFull:
            self.init(slug: "insufficient-storage", title: "The database is full", status: 507, detail: error.detail)
        case .commitOutcomeUnknown:
            // 503: the clients retry it (with their key, which settles it).
            self.init(
                slug: "commit-outcome-unknown", title: "The write may or may not have been applied", status: 503,
                detail: error.detail)
        case .closed:
            self = .shuttingDown()
        case .cancelled:
            // The client went away before the store started its call; nobody
            // reads this answer, but the access log and metrics record 499
            // ("client closed request", as nginx logs it).
            self.init(slug: "cancelled", title: "The request was cancelled", status: 499, detail: error.detail)
        case .idempotencyKeyUsed:
            // The idempotency layer replays or refuses before this is seen; a
            // route outside it that met a used key sees the reuse.
            self = .idempotencyKeyReused(error.detail)
        }
    }
}
