#if os(Linux)
    import Foundation
    internal import HTTP
    internal import HTTPClient
    internal import POSIXIO

    extension SocketTransport: StreamingHTTPTransport {
        /// `http://` URLs, as ``send(_:)``.
        public func canStream(to url: URL) -> Bool { Self.canSend(to: url) }

        /// Sends `request` on a connection of its own (never pooled) and returns
        /// once the head is in; the body's pieces come as the event loop reads them.
        public func stream(_ request: ClientRequest) async throws -> ClientStream {
            guard Self.canSend(to: request.url), let host = request.url.host else {
                throw ListClientError(
                    kind: .invalidRequest,
                    detail: "SocketTransport streams plain http:// only, not \(request.url.absoluteString)")
            }
            let path = request.url.path(percentEncoded: true)
            var target = path.isEmpty ? "/" : path
            if let query = request.url.query(percentEncoded: true) { target += "?" + query }
            let outgoing = HTTPClientCall.Request(
                method: HTTPMethod(rawValue: request.method), host: host, port: request.url.port ?? 80, target: target,
                headers: HTTPHeaders(request.headers.map { ($0.name, $0.value) }), body: request.body,
                timeout: request.timeout)
            let opened: (head: HTTPClientCall.Response, body: ResponseBodyStream)
            do {
                opened = try await client.stream(outgoing)
            } catch {
                throw error.errno == ECANCELED && Task.isCancelled ? CancellationError() : error
            }
            var headers: [String: String] = [:]
            for (name, value) in opened.head.headers { headers[name.lowercased()] = value }
            let body = opened.body
            return ClientStream(
                status: opened.head.status.code, headers: headers,
                next: { () async throws -> [UInt8]? in
                    do throws(SystemError) {
                        return try await body.next()
                    } catch {
                        throw error.errno == ECANCELED && Task.isCancelled ? CancellationError() : error
                    }
                },
                cancel: { body.cancel() })
        }
    }
#endif
