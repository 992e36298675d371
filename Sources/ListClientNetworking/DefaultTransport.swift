import Foundation
import ListClient
import Synchronization

/// The transport `ListClient(baseURL:token:)` and `ListClient(baseURLs:token:)`
/// use: on Linux, `SocketTransport` for `http://` and ``URLSessionTransport``
/// for `https://`; on Apple platforms, `URLSessionTransport` for everything.
///
/// Why two on Linux: there URLSession goes through libcurl and its threads,
/// which delayed a follower's updates by tens of milliseconds against a plain
/// socket (Benchmarks/FollowBenchmarks), but the socket transport has no TLS.
/// So each request goes by its URL's scheme (``route(for:)``), and an
/// `https://` request works as it always did rather than failing. The
/// URLSession is made at the first request that needs it: a client of
/// `http://` servers never starts one.
///
/// One `DefaultTransport` holds one keep-alive connection pool and at most one
/// URLSession; a client made by the convenience initializers has its own.
/// Pass `SocketTransport()` or `URLSessionTransport()` to
/// ``/ListClient/ListClient/init(baseURL:token:transport:)`` to pin one (for example
/// `URLSessionTransport` on Linux to go through an `http_proxy`).
public final class DefaultTransport: HTTPTransport {
    /// Which transport a request goes through.
    public enum Route: Sendable, Equatable {
        /// `SocketTransport` (Linux, `http://` only).
        case socket
        /// ``URLSessionTransport``.
        case urlSession
    }

    #if os(Linux)
        /// The transport of `http://` requests.
        public let socket: SocketTransport
    #endif
    private let session = Mutex<URLSessionTransport?>(nil)

    /// Creates a transport with an empty connection pool and no URLSession yet.
    public init() {
        #if os(Linux)
            socket = SocketTransport()
        #endif
    }

    /// Where a request to `url` goes: `.socket` on Linux for `http://`, else `.urlSession`.
    public static func route(for url: URL) -> Route {
        #if os(Linux)
            return SocketTransport.canSend(to: url) ? .socket : .urlSession
        #else
            return .urlSession
        #endif
    }

    /// The URLSession transport, made at its first use.
    public var urlSession: URLSessionTransport {
        session.withLock { session in
            if let session { return session }
            let made = URLSessionTransport()
            session = made
            return made
        }
    }

    /// Whether a request has needed the URLSession transport yet.
    public var hasMadeURLSession: Bool { session.withLock { $0 != nil } }

    /// Sends `request` through the transport ``route(for:)`` picks for its URL.
    public func send(_ request: ClientRequest) async throws -> ClientResponse {
        #if os(Linux)
            if Self.route(for: request.url) == .socket { return try await socket.send(request) }
        #endif
        return try await urlSession.send(request)
    }
}

extension ListClient {
    /// A client for `baseURL` with its own ``DefaultTransport``: on Linux plain
    /// sockets for `http://` and URLSession for `https://`; URLSession on Apple platforms.
    ///
    /// ```swift
    /// let client = ListClient(baseURL: URL(string: "https://lists.example.com")!, token: token)
    /// ```
    public convenience init(baseURL: URL, token: String?) {
        self.init(baseURL: baseURL, token: token, transport: DefaultTransport())
    }

    /// A client for several instances of one listd cluster, with its own
    /// ``DefaultTransport``; follows fail over from one to the next
    /// (``/ListClient/ListClient/init(baseURLs:token:transport:)``).
    public convenience init(baseURLs: [URL], token: String?) {
        self.init(baseURLs: baseURLs, token: token, transport: DefaultTransport())
    }
}
