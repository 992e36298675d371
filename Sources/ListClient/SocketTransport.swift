#if os(Linux)
    import Foundation
    internal import HTTP
    internal import HTTPClient
    internal import POSIXIO

    /// An ``HTTPTransport`` over plain sockets (HTTPClient's `KeepAliveClient`),
    /// with no URLSession and so no FoundationNetworking or libcurl: `listd watch`
    /// uses it, and on Linux `ListClient(baseURL:token:)` (from
    /// ListClientNetworking) sends its `http://` requests with it.
    ///
    /// Why: on Linux, URLSession hands every exchange through libcurl and its
    /// own threads; with 100 followers at 50 writes/s, a follower's update came
    /// about 80 ms (p50) after the write was sent, against about 8 ms with this
    /// transport (Benchmarks/FollowBenchmarks).
    ///
    /// Its requests share one keep-alive connection pool: a follow keeps one
    /// connection for its snapshot and long-polls instead of opening one per
    /// request. Copies of a transport share its pool; give each client its own.
    ///
    /// No thread blocks per request: the calling task sends its request with a
    /// non-blocking write and suspends, and one event-loop thread in the process
    /// (epoll) waits on every transport's connections and resumes each task when
    /// its answer is in. A long-poll parked for minutes costs a connection and a
    /// suspended task, not a thread. Cancelling the task shuts the socket down,
    /// so the server releases a parked long-poll at once.
    ///
    /// It speaks plain `http://` only: there is no TLS, and no proxy (it ignores
    /// `http_proxy`). An `https://` request fails at once with a
    /// ``ListClientError`` of kind `.invalidRequest` that says so; use
    /// `URLSessionTransport` for those (`ListClient(baseURL:token:)` does).
    ///
    /// ```swift
    /// let client = ListClient(baseURL: URL(string: "http://127.0.0.1:8080")!, token: nil, transport: SocketTransport())
    /// ```
    public struct SocketTransport: HTTPTransport {
        /// The keep-alive connections this transport's requests reuse.
        let client: KeepAliveClient

        /// Creates a transport with an empty connection pool.
        ///
        /// - Parameters:
        ///   - maxIdleConnectionsPerEndpoint: idle connections kept per host and port
        ///     (more are closed when their request ends); at least 1.
        ///   - idleTimeout: how long a connection may sit idle and still be reused.
        public init(maxIdleConnectionsPerEndpoint: Int = 4, idleTimeout: Duration = .seconds(30)) {
            client = KeepAliveClient(
                maxIdlePerEndpoint: max(1, maxIdleConnectionsPerEndpoint), idleTimeout: idleTimeout)
        }

        /// How many TCP connections this transport has opened (reuse keeps it low).
        public var connectionsOpened: Int { client.connectionsOpened }

        /// How many connections sit idle, ready for the next request.
        public var idleConnections: Int { client.idleConnections }

        /// Closes every idle connection (a request in flight keeps its own).
        public func closeIdleConnections() { client.closeIdle() }

        /// Whether this transport can send to `url`: `http://` with a host.
        public static func canSend(to url: URL) -> Bool {
            url.scheme?.lowercased() == "http" && url.host != nil
        }

        /// Sends `request` on a pooled connection and suspends until the answer is in.
        ///
        /// Throws ``ListClientError`` (`.invalidRequest`) for a URL that is not
        /// `http://`, `CancellationError` when the task is cancelled, and the
        /// socket layer's error (naming the failed call and errno) otherwise.
        public func send(_ request: ClientRequest) async throws -> ClientResponse {
            guard Self.canSend(to: request.url), let host = request.url.host else {
                throw ListClientError(
                    kind: .invalidRequest,
                    detail: "SocketTransport speaks plain http:// only (no TLS), not \(request.url.absoluteString); "
                        + "use URLSessionTransport for https://")
            }
            // The URL's own percent-encoded parts: no URLComponents parse per request.
            let path = request.url.path(percentEncoded: true)
            var target = path.isEmpty ? "/" : path
            if let query = request.url.query(percentEncoded: true) { target += "?" + query }
            let outgoing = HTTPClientCall.Request(
                method: HTTPMethod(rawValue: request.method), host: host, port: request.url.port ?? 80, target: target,
                headers: HTTPHeaders(request.headers.map { ($0.name, $0.value) }), body: request.body,
                timeout: request.timeout)
            let response: HTTPClientCall.Response
            do {
                response = try await client.perform(outgoing)
            } catch {
                throw error.errno == ECANCELED && Task.isCancelled ? CancellationError() : error
            }
            var headers: [String: String] = [:]
            for (name, value) in response.headers { headers[name.lowercased()] = value }
            return ClientResponse(status: response.status.code, lowercasedHeaders: headers, body: response.body)
        }
    }
#endif
