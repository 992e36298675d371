/// A complete request: its head, its whole body, and what the router and server add.
public struct Request: Sendable {
    /// The request line and header fields.
    public var head: RequestHead
    /// The body with any chunked framing removed; empty when there is none.
    public var body: [UInt8]
    /// The route's parameters by name, percent-decoded; filled by the ``Router`` match.
    public var pathParameters: [String: String]
    /// The client's address, for example `127.0.0.1:50312`; filled by the server.
    public var remoteAddress: String
    /// What the handler decided about the request's head before its body was read
    /// (`HTTPHandler.admit`), handed back with the whole request; nil when the handler
    /// did not look at the head (or keeps nothing from it).
    public var admission: (any Sendable)?

    /// Creates a request.
    public init(
        head: RequestHead, body: [UInt8] = [], pathParameters: [String: String] = [:],
        remoteAddress: String = ""
    ) {
        self.head = head
        self.body = body
        self.pathParameters = pathParameters
        self.remoteAddress = remoteAddress
    }

    /// The request method.
    public var method: HTTPMethod { head.method }

    /// The raw, still percent-encoded path.
    public var path: String { head.path }

    /// The query's name-value pairs in order, percent-decoded with `+` read as a space.
    ///
    /// A pair without `=` has an empty value; empty pairs (`a=1&&b=2`) are skipped. An invalid
    /// percent-encoding is kept literally, since the parser already refuses such targets.
    public var queryItems: [QueryItem] {
        guard let query = head.query, !query.isEmpty else { return [] }
        var items: [QueryItem] = []
        for pair in query.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let name: Substring.UTF8View.SubSequence
            let value: Substring.UTF8View.SubSequence
            if let equals = pair.firstIndex(of: UInt8(ascii: "=")) {
                name = pair[..<equals]
                value = pair[pair.index(after: equals)...]
            } else {
                name = pair
                value = pair[pair.endIndex...]
            }
            items.append(
                QueryItem(
                    name: PercentDecoding.decodeLenient(name, plusAsSpace: true),
                    value: PercentDecoding.decodeLenient(value, plusAsSpace: true)))
        }
        return items
    }

    /// The first query value named `name` (compared exactly, after decoding), or nil.
    public func queryValue(_ name: String) -> String? {
        queryItems.first { $0.name == name }?.value
    }

    /// The value of the first header field named `name` (case-insensitive), or nil.
    public func header(_ name: String) -> String? { head.headers[name] }
}

/// One `name=value` pair of a query string, percent-decoded.
public struct QueryItem: Hashable, Sendable {
    /// The decoded name.
    public var name: String
    /// The decoded value; empty for a pair without `=`.
    public var value: String

    /// Creates a pair.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
