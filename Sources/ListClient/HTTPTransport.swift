import Foundation

/// One HTTP request as the client sends it, independent of any HTTP library.
public struct ClientRequest: Sendable, Equatable {
    /// `GET`, `POST`, `PUT`, `PATCH` or `DELETE`.
    public var method: String
    /// The absolute `http://` or `https://` URL.
    public var url: URL
    /// Header fields in order; names as written.
    public var headers: [(name: String, value: String)]
    /// The body, if any.
    public var body: [UInt8]?
    /// How long the whole exchange may take; a long-poll sets it above its `timeout`.
    public var timeout: Duration

    /// Creates a request.
    public init(
        method: String, url: URL, headers: [(name: String, value: String)] = [], body: [UInt8]? = nil,
        timeout: Duration = .seconds(30)
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }

    /// The value of the first header named `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// Requests are equal when method, URL, headers (in order), body and timeout are.
    public static func == (lhs: ClientRequest, rhs: ClientRequest) -> Bool {
        lhs.method == rhs.method && lhs.url == rhs.url && lhs.body == rhs.body && lhs.timeout == rhs.timeout
            && lhs.headers.elementsEqual(rhs.headers) { $0.name == $1.name && $0.value == $1.value }
    }
}

/// One HTTP response: status, header fields and the whole body.
public struct ClientResponse: Sendable {
    /// The status code.
    public var status: Int
    /// Header fields, names lowercased (HTTP field names are case-insensitive).
    public var headers: [String: String]
    /// The whole body (after any chunked transfer coding is removed).
    public var body: [UInt8]

    /// Creates a response; header names are lowercased.
    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }) { first, _ in first }
        self.body = body
    }

    /// A response whose header names are lowercased already (a transport's own), so not lowercased again.
    init(status: Int, lowercasedHeaders: [String: String], body: [UInt8]) {
        self.status = status
        headers = lowercasedHeaders
        self.body = body
    }

    /// The value of the header named `name` (case-insensitive).
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// How `ListClient` sends HTTP requests.
///
/// Why a protocol: the client logic must not link FoundationNetworking (the
/// `listd` binary ships without libcurl), so apps plug in `URLSessionTransport`
/// from ListClientNetworking, `listd watch` a socket transport, and tests a fake.
///
/// A transport must honour task cancellation: when the calling task is
/// cancelled, it abandons the exchange (closing the connection, so the server
/// releases a parked long-poll) and throws `CancellationError`.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the complete response, whatever its status.
    /// Throws only when no response arrived (connection refused, reset, timeout, cancellation).
    func send(_ request: ClientRequest) async throws -> ClientResponse
}
