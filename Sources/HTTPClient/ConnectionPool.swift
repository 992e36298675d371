import POSIXIO
import Synchronization

/// Idle keep-alive connections of ``HTTPClientCall``s, per host and port.
///
/// A call takes the most recently used idle connection to its endpoint, or
/// opens one; after a complete response that the server did not ask to
/// close, it puts the connection back. So a client that makes one request
/// after another (`listd watch`: a snapshot, then long-poll after long-poll)
/// uses one TCP connection instead of one per request.
///
/// Connections idle longer than `idleTimeout` are closed instead of reused,
/// and a taken connection is checked first for a close the server sent while
/// it sat idle. Thread-safe; share one pool between the calls of a client.
public final class ConnectionPool: Sendable {
    private struct Idle {
        let fd: Int32
        let since: UInt64
    }

    /// At most this many idle connections are kept per endpoint.
    public let maxIdlePerEndpoint: Int
    /// How long a connection may sit idle and still be reused.
    public let idleTimeout: Duration
    private let idle = Mutex<[String: [Idle]]>([:])
    private let opened = Atomic<Int>(0)

    /// Creates an empty pool.
    public init(maxIdlePerEndpoint: Int = 4, idleTimeout: Duration = .seconds(30)) {
        precondition(maxIdlePerEndpoint >= 1, "a pool keeps at least one connection")
        self.maxIdlePerEndpoint = maxIdlePerEndpoint
        self.idleTimeout = idleTimeout
    }

    deinit {
        for connections in idle.withLock({ $0 }).values {
            for connection in connections { System.close(connection.fd) }
        }
    }

    /// How many TCP connections calls through this pool have opened.
    public var connectionsOpened: Int { opened.load(ordering: .relaxed) }

    /// How many connections sit idle, ready for reuse.
    public var idleConnections: Int { idle.withLock { $0.values.reduce(0) { $0 + $1.count } } }

    /// Closes every idle connection.
    public func closeIdle() {
        let all = idle.withLock { idle in
            defer { idle.removeAll() }
            return idle.values.flatMap { $0 }
        }
        for connection in all { System.close(connection.fd) }
    }

    static func endpoint(host: String, port: Int) -> String { "\(host):\(port)" }

    func recordOpened() { opened.add(1, ordering: .relaxed) }

    /// The most recently used idle connection to `endpoint` that is still
    /// open, or nil. The caller owns the descriptor.
    ///
    /// `now` is read before the idle list, so another thread may have put a
    /// connection there since (its `since` is later than `now`): that one is fresh.
    func take(_ endpoint: String, now: UInt64 = System.monotonicNanoseconds()) -> Int32? {
        let limit = UInt64(max(0, idleTimeout / .nanoseconds(1)))
        while true {
            let candidate = idle.withLock { idle -> Idle? in idle[endpoint]?.popLast() }
            guard let candidate else { return nil }
            if candidate.since >= now || now - candidate.since <= limit, Self.isOpen(candidate.fd) {
                return candidate.fd
            }
            System.close(candidate.fd)
        }
    }

    /// Puts a connection whose last response was complete back for reuse.
    func put(_ fd: Int32, _ endpoint: String) {
        let evicted = idle.withLock { idle -> Int32? in
            idle[endpoint, default: []].append(Idle(fd: fd, since: System.monotonicNanoseconds()))
            guard let count = idle[endpoint]?.count, count > maxIdlePerEndpoint else { return nil }
            return idle[endpoint]?.removeFirst().fd
        }
        if let evicted { System.close(evicted) }
    }

    /// Whether an idle connection can still carry a request: nothing to read
    /// (a server says nothing unasked; a 0 read is its close) and no error.
    private static func isOpen(_ fd: Int32) -> Bool {
        LoopConnection.endedByPeer(fd) == nil
    }

    /// How many idle connections can still carry a request (for tests: a
    /// server's close reaches the client a moment after it closes).
    var openIdleConnections: Int {
        idle.withLock { $0.values.reduce(0) { $0 + $1.count { Self.isOpen($0.fd) } } }
    }
}
