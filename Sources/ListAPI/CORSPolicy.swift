import HTTP

/// Which web origins may call listd from a browser (`--cors-origin`), and the
/// header fields that say so.
///
/// With no origin configured, listd sends no CORS header at all and treats
/// `OPTIONS` like any other method it does not serve (405). Credentials are
/// bearer tokens in `Authorization`, never cookies, so no
/// `Access-Control-Allow-Credentials` is sent and `*` is safe to use.
public struct CORSPolicy: Sendable, Equatable {
    /// The origins allowed, exactly as browsers send them (`https://app.example`), or `*`.
    public var origins: [String]

    /// Request header fields a browser may send.
    public static let allowedHeaders =
        "Authorization, Content-Type, Idempotency-Key, If-Match, If-None-Match, Last-Event-ID"
    /// Response header fields a script may read.
    public static let exposedHeaders = "ETag, Idempotent-Replayed, Location, Retry-After, listd-query-plan"
    /// Methods a preflight may ask for.
    public static let allowedMethods = "GET, HEAD, POST, PUT, PATCH, DELETE"
    /// How long a browser may cache a preflight answer, in seconds.
    public static let maxAge = "600"

    /// Creates a policy; an empty list disables CORS.
    public init(origins: [String] = []) {
        self.origins = origins
    }

    /// Whether CORS is on at all.
    public var isEnabled: Bool { !origins.isEmpty }

    /// Why `origin` cannot be configured, or nil: `*`, or `scheme://host[:port]`.
    public static func validationFailure(_ origin: String) -> String? {
        if origin == "*" { return nil }
        guard let schemeEnd = origin.range(of: "://"),
            ["http", "https"].contains(origin[..<schemeEnd.lowerBound].lowercased())
        else {
            return "\"\(origin)\" is not an origin: use scheme://host[:port] (such as https://app.example) or *"
        }
        let rest = origin[schemeEnd.upperBound...]
        if rest.isEmpty || rest.contains("/") || rest.contains(" ") {
            return "\"\(origin)\" is not an origin: no path and no trailing slash (https://app.example)"
        }
        return nil
    }

    /// The `Access-Control-Allow-Origin` value for a request from `origin`, or nil when not allowed.
    public func allowedOrigin(_ origin: String?) -> String? {
        guard let origin, isEnabled else { return nil }
        if origins.contains("*") { return "*" }
        return origins.contains(origin) ? origin : nil
    }

    /// Adds the fields of an actual (not preflight) response.
    public func addHeaders(to headers: inout HTTPHeaders, origin: String?) {
        guard isEnabled else { return }
        if !origins.contains("*") { headers.add(name: "Vary", value: "Origin") }
        guard let allowed = allowedOrigin(origin) else { return }
        headers.add(name: "Access-Control-Allow-Origin", value: allowed)
        headers.add(name: "Access-Control-Expose-Headers", value: Self.exposedHeaders)
    }

    /// Adds the fields of a refusal sent before any request was read (the 503
    /// at the connection limit, a head too slow or too large), when they do
    /// not depend on the request's `Origin`: with `*`, or with one configured
    /// origin (a browser of another origin ignores it). Without them a page
    /// sees an opaque network error instead of the 503 and its `Retry-After`.
    public func addHeadersWithoutRequest(to headers: inout HTTPHeaders) {
        guard isEnabled else { return }
        let allowed: String
        if origins.contains("*") {
            allowed = "*"
        } else if origins.count == 1 {
            allowed = origins[0]
            headers.add(name: "Vary", value: "Origin")
        } else {
            return
        }
        headers.add(name: "Access-Control-Allow-Origin", value: allowed)
        headers.add(name: "Access-Control-Expose-Headers", value: Self.exposedHeaders)
    }

    /// The answer to a preflight `OPTIONS` request: 204 with the allowed
    /// methods and fields when `origin` is allowed, else nil.
    public func preflight(origin: String?) -> Response? {
        guard let allowed = allowedOrigin(origin) else { return nil }
        var headers = HTTPHeaders()
        headers.add(name: "Access-Control-Allow-Origin", value: allowed)
        headers.add(name: "Access-Control-Allow-Methods", value: Self.allowedMethods)
        headers.add(name: "Access-Control-Allow-Headers", value: Self.allowedHeaders)
        headers.add(name: "Access-Control-Max-Age", value: Self.maxAge)
        if !origins.contains("*") { headers.add(name: "Vary", value: "Origin") }
        return Response(status: .noContent, headers: headers)
    }
}
