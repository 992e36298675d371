import Foundation
import ListClient

extension DefaultTransport: StreamingHTTPTransport {
    /// Whether an event stream can go to `url`: on Linux, `http://` (over `SocketTransport`);
    /// not over URLSession, so a follow with `.automatic` long-polls there.
    public func canStream(to url: URL) -> Bool {
        #if os(Linux)
            return Self.route(for: url) == .socket
        #else
            return false
        #endif
    }

    /// Streams `request` over `SocketTransport` (Linux, `http://`); anything else
    /// fails with `.invalidRequest` (see ``canStream(to:)``).
    public func stream(_ request: ClientRequest) async throws -> ClientStream {
        #if os(Linux)
            if Self.route(for: request.url) == .socket { return try await socket.stream(request) }
        #endif
        throw ListClientError(
            kind: .invalidRequest, detail: "no event stream to \(request.url.absoluteString) over URLSession")
    }
}
