import Foundation

/// An answer whose body arrives piece by piece (a server-sent event stream).
public struct ClientStream: Sendable {
    /// The status code.
    public var status: Int
    /// Header fields, names lowercased.
    public var headers: [String: String]
    private let nextPiece: @Sendable () async throws -> [UInt8]?
    private let stop: @Sendable () -> Void

    /// Creates a stream: `next` gives the body's next piece (`nil` at its end),
    /// `cancel` ends it and closes its connection. Header names are lowercased.
    public init(
        status: Int, headers: [String: String], next: @escaping @Sendable () async throws -> [UInt8]?,
        cancel: @escaping @Sendable () -> Void
    ) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }) { first, _ in first }
        nextPiece = next
        stop = cancel
    }

    /// The body's next piece; `nil` at its end. Throws when the connection fails
    /// or stays silent longer than the request's timeout.
    public func next() async throws -> [UInt8]? { try await nextPiece() }

    /// Ends the stream and closes its connection.
    public func cancel() { stop() }

    /// The rest of the body, up to `limit` bytes, as a whole response (for an error answer).
    func collect(limit: Int = 64 * 1024) async -> ClientResponse {
        var body: [UInt8] = []
        while body.count < limit, let piece = try? await next() { body += piece }
        cancel()
        return ClientResponse(status: status, headers: headers, body: Array(body.prefix(limit)))
    }
}

/// A transport that can also hand over an answer's body as it arrives, which
/// following over the event stream needs (``FollowOptions/transport``).
/// `SocketTransport` and `DefaultTransport` (for `http://` on Linux) are.
///
/// As for ``HTTPTransport/send(_:)``, cancelling the task that waits in
/// ``stream(_:)`` or in ``ClientStream/next()`` abandons the exchange and closes
/// its connection.
public protocol StreamingHTTPTransport: HTTPTransport {
    /// Whether ``stream(_:)`` can send to `url` (a transport may stream plain `http://` only).
    func canStream(to url: URL) -> Bool
    /// Sends `request` and returns as soon as the answer's head is in. The
    /// request's `timeout` bounds the wait for the head, then each silence of the body.
    func stream(_ request: ClientRequest) async throws -> ClientStream
}
