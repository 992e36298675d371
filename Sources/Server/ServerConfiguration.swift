import Glibc
import HTTP

/// How an `HTTPServer` listens, how many loops it runs, and its limits and timeouts.
///
/// Every timeout is configurable so tests can use milliseconds; the defaults
/// are the ones listd serves with.
public struct ServerConfiguration: Sendable {
    /// Numeric IPv4 or IPv6 address to bind, or "localhost".
    public var host: String
    /// Port to bind; 0 picks an ephemeral port (returned by `start()`).
    public var port: Int
    /// Event loop threads, each with its own listener (SO_REUSEPORT).
    public var eventLoops: Int
    /// The parser's limits (head, fields, body sizes).
    public var limits: HTTPLimits
    /// Time to receive a whole request head before 408 (the slowloris guard).
    public var headTimeout: Duration
    /// Longest pause while a request body arrives before 408.
    public var bodyIdleTimeout: Duration
    /// How long an idle persistent connection stays open.
    public var keepAliveIdleTimeout: Duration
    /// How long queued output may make no progress (a client that stopped
    /// reading) before the connection is closed.
    public var sendTimeout: Duration
    /// After a final response, how long to discard input before closing
    /// (so the client reads the response rather than a reset).
    public var lingerTimeout: Duration
    /// Open connections allowed; over it, 503 and close. Nil: RLIMIT_NOFILE
    /// less `descriptorReserve`, which is also the most it can be (a larger
    /// value is lowered to it, with a warning in the log).
    public var maxConnections: Int?
    /// Descriptors connections never take: the database's files, the loops'
    /// own descriptors, the 503 answers over the limit (at most a quarter of
    /// the reserve at once), and what the runtime opens (libdispatch reads
    /// /proc and aborts the process if it cannot).
    public var descriptorReserve: Int
    /// Seconds for `Retry-After` on a 503, picked at random in this range so
    /// rejected clients do not all return at once.
    public var retryAfterSeconds: ClosedRange<Int>
    /// Longest graceful shutdown before remaining connections are closed.
    public var drainTimeout: Duration
    /// Queued output per connection above which the server stops reading and
    /// processing its pipelined requests until the client catches up.
    public var outputHighWaterMark: Int
    /// listen(2) backlog.
    public var backlog: Int32

    /// Creates a configuration; every parameter has listd's default.
    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        eventLoops: Int = ServerConfiguration.coreCount,
        limits: HTTPLimits = HTTPLimits(),
        headTimeout: Duration = .seconds(10),
        bodyIdleTimeout: Duration = .seconds(30),
        keepAliveIdleTimeout: Duration = .seconds(60),
        sendTimeout: Duration = .seconds(30),
        lingerTimeout: Duration = .seconds(2),
        maxConnections: Int? = nil,
        descriptorReserve: Int = 64,
        retryAfterSeconds: ClosedRange<Int> = 1...10,
        drainTimeout: Duration = .seconds(10),
        outputHighWaterMark: Int = 256 * 1024,
        backlog: Int32 = 1024
    ) {
        self.host = host
        self.port = port
        self.eventLoops = eventLoops
        self.limits = limits
        self.headTimeout = headTimeout
        self.bodyIdleTimeout = bodyIdleTimeout
        self.keepAliveIdleTimeout = keepAliveIdleTimeout
        self.sendTimeout = sendTimeout
        self.lingerTimeout = lingerTimeout
        self.maxConnections = maxConnections
        self.descriptorReserve = descriptorReserve
        self.retryAfterSeconds = retryAfterSeconds
        self.drainTimeout = drainTimeout
        self.outputHighWaterMark = outputHighWaterMark
        self.backlog = backlog
    }

    /// The number of online processors (at least 1).
    public static var coreCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}

extension Duration {
    /// Whole nanoseconds, clamped at 0.
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        let total = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
        return total <= 0 ? 0 : UInt64(min(total, Double(UInt64.max / 2)))
    }
}
