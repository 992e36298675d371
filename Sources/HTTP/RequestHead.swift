/// The request line and header fields of a request, validated by ``RequestParser``.
///
/// The parser hands this out as soon as the head is complete (``RequestParserEvent/head(_:)``),
/// before the body is read, so the server can answer `100 Continue` or switch timeouts.
public struct RequestHead: Sendable {
    /// The request method; the parser accepts GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS.
    public var method: HTTPMethod
    /// The raw request-target as sent: origin-form (`/path?query`) or `*` for OPTIONS.
    public var target: String
    /// The raw, still percent-encoded path: the target before any `?`.
    public var path: String
    /// The raw, still percent-encoded query: the target after the first `?`, or nil without one.
    public var query: String?
    /// The protocol version: 1.0 or 1.1.
    public var version: HTTPVersion
    /// The header fields in the order received.
    public var headers: HTTPHeaders
    /// Whether the connection may stay open after the response: true for HTTP/1.1 unless
    /// `Connection: close`, and for HTTP/1.0 only with `Connection: keep-alive`.
    public var keepAlive: Bool
    /// Whether the client sent `Expect: 100-continue` on HTTP/1.1 and a body is still to come,
    /// so the server should send ``ResponseSerializer/continueLine`` before reading it.
    public var expectsContinue: Bool

    /// Creates a head; `path` and `query` are split from `target` at the first `?`.
    public init(
        method: HTTPMethod, target: String, version: HTTPVersion = .http1_1,
        headers: HTTPHeaders = HTTPHeaders(), keepAlive: Bool = true, expectsContinue: Bool = false
    ) {
        self.method = method
        self.target = target
        if let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) {
            path = String(target[..<mark])
            query = String(target[target.utf8.index(after: mark)...])
        } else {
            path = target
            query = nil
        }
        self.version = version
        self.headers = headers
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
    }

    /// Creates a head from parts the parser has already split.
    init(
        method: HTTPMethod, target: String, path: String, query: String?, version: HTTPVersion,
        headers: HTTPHeaders, keepAlive: Bool, expectsContinue: Bool
    ) {
        self.method = method
        self.target = target
        self.path = path
        self.query = query
        self.version = version
        self.headers = headers
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
    }
}
