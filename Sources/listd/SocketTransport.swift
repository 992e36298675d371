import Foundation
import HTTP
import HTTPClient
import ListClient
import POSIXIO

/// ListClient's transport over HTTPClient's blocking-socket `HTTPClientCall`, so
/// `listd watch` needs no FoundationNetworking (and no libcurl) in the image.
/// Its requests share one ``ConnectionPool``: a watch keeps one keep-alive
/// connection for its snapshot and long-polls instead of one per request.
///
/// Each request runs on a thread of its own: a long-poll blocks for minutes,
/// which must not happen on Swift's cooperative pool. Cancelling the task shuts
/// the socket down, so the server releases a parked long-poll at once.
struct SocketTransport: HTTPTransport {
    /// The idle connections this transport's requests reuse.
    let pool: ConnectionPool

    init(pool: ConnectionPool = ConnectionPool()) { self.pool = pool }

    func send(_ request: ClientRequest) async throws -> ClientResponse {
        guard request.url.scheme == "http", let host = request.url.host,
            let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)
        else {
            throw ListClientError(
                kind: .invalidRequest, detail: "listd watch speaks plain http:// only, not \(request.url.absoluteString)")
        }
        var target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { target += "?" + query }
        let call = HTTPClientCall(pool: pool)
        let outgoing = HTTPClientCall.Request(
            method: HTTPMethod(rawValue: request.method), host: host, port: request.url.port ?? 80, target: target,
            headers: HTTPHeaders(request.headers.map { ($0.name, $0.value) }), body: request.body,
            timeout: request.timeout)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ClientResponse, any Error>) in
                Thread.detachNewThread {
                    do throws(SystemError) {
                        let response = try call.perform(outgoing)
                        var headers: [String: String] = [:]
                        for (name, value) in response.headers { headers[name.lowercased()] = value }
                        continuation.resume(
                            returning: ClientResponse(
                                status: response.status.code, headers: headers, body: response.body))
                    } catch {
                        continuation.resume(throwing: call.isCancelled ? CancellationError() : error)
                    }
                }
            }
        } onCancel: {
            call.cancel()
        }
    }
}
