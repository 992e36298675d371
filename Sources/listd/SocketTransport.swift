import Foundation
import ListClient
import Server

/// ListClient's transport over Server's blocking-socket `HTTPClientCall`, so
/// `listd watch` needs no FoundationNetworking (and no libcurl) in the image.
///
/// Each request runs on a thread of its own: a long-poll blocks for minutes,
/// which must not happen on Swift's cooperative pool. Cancelling the task shuts
/// the socket down, so the server releases a parked long-poll at once.
struct SocketTransport: HTTPTransport {
    func send(_ request: ClientRequest) async throws -> ClientResponse {
        guard request.url.scheme == "http", let host = request.url.host,
            let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)
        else {
            throw ListClientError(
                kind: .invalidRequest, detail: "listd watch speaks plain http:// only, not \(request.url.absoluteString)")
        }
        var target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { target += "?" + query }
        let call = HTTPClientCall()
        let outgoing = HTTPClientCall.Request(
            method: request.method, host: host, port: request.url.port ?? 80, target: target,
            headers: request.headers, body: request.body, timeout: request.timeout)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ClientResponse, any Error>) in
                Thread.detachNewThread {
                    do throws(SystemError) {
                        let response = try call.perform(outgoing)
                        var headers: [String: String] = [:]
                        for (name, value) in response.headers { headers[name.lowercased()] = value }
                        continuation.resume(
                            returning: ClientResponse(status: response.status, headers: headers, body: response.body))
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
