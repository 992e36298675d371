import CSystem
import Glibc
import HTTP
import POSIXIO
import Synchronization

/// One HTTP/1.1 request over a blocking socket, for tools that must not link
/// libcurl (`listd watch` and `listd health` in the runtime image).
///
/// Why blocking: a call runs on a thread of its own (a long-poll waits minutes
/// doing nothing), and blocking reads with `SO_RCVTIMEO` keep it short and easy
/// to check. `cancel()` from any thread shuts the socket down, which wakes the
/// blocked read at once and closes the connection, so the server releases the
/// request.
///
/// With a ``ConnectionPool`` the call reuses an idle keep-alive connection to
/// the same endpoint and gives it back after a complete response. When a
/// reused connection turns out closed before any byte of the answer arrived
/// (the server dropped it while idle), an idempotent request is sent once more
/// on a new connection; a POST or PATCH is not, since the server may have
/// acted on it. Without a pool each call uses a fresh connection and asks the
/// server to close it (`Connection: close`).
public final class HTTPClientCall: Sendable {
    /// What to send.
    public struct Request: Sendable {
        /// The method.
        public var method: HTTPMethod
        /// A host name or address (resolved with getaddrinfo).
        public var host: String
        /// The TCP port.
        public var port: Int
        /// The path with its query, as sent on the request line (`/lists/a?since=3`).
        public var target: String
        /// Header fields; `Host`, `Content-Length` and `Connection` are set by the call.
        public var headers: HTTPHeaders
        /// The body, if any.
        public var body: [UInt8]?
        /// How long the whole exchange may take.
        public var timeout: Duration

        /// Creates a request.
        public init(
            method: HTTPMethod, host: String, port: Int, target: String, headers: HTTPHeaders = [:],
            body: [UInt8]? = nil, timeout: Duration
        ) {
            self.method = method
            self.host = host
            self.port = port
            self.target = target
            self.headers = headers
            self.body = body
            self.timeout = timeout
        }
    }

    /// What came back.
    public struct Response: Sendable {
        /// The status.
        public var status: HTTPStatus
        /// Header fields in order, names as the server wrote them.
        public var headers: HTTPHeaders
        /// The body, with any chunked coding removed.
        public var body: [UInt8]
    }

    /// The largest response head accepted.
    public static let maximumHeadBytes = 64 * 1024
    /// The largest response body accepted.
    public static let maximumBodyBytes = 256 * 1024 * 1024

    private struct State {
        var fd: Int32?
        var cancelled = false
    }

    private let state = Mutex(State())
    private let pool: ConnectionPool?

    /// A call that has not started; with `pool`, it reuses that pool's connections.
    public init(pool: ConnectionPool? = nil) {
        self.pool = pool
    }

    /// Whether `cancel()` was called.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Stops the call: a blocked `perform` returns with ECANCELED at once.
    public func cancel() {
        state.withLock { state in
            state.cancelled = true
            // shutdown, not close: the descriptor stays ours until perform closes it,
            // so it cannot be reused by another thread under our feet.
            if let fd = state.fd { try? System.shutdown(fd, how: Int32(SHUT_RDWR)) }
        }
    }

    /// Sends `request` and reads the whole response. Blocks the calling thread.
    ///
    /// Throws a `SystemError` naming the step that failed (resolve, connect, send,
    /// read, or the response's framing); ECANCELED when cancelled, ETIMEDOUT past the timeout.
    public func perform(_ request: Request) throws(SystemError) -> Response {
        guard (1...65_535).contains(request.port) else {
            throw SystemError(call: "connect (port out of range)", errno: EINVAL)
        }
        let deadline = System.monotonicNanoseconds() + UInt64(max(1, request.timeout / .milliseconds(1))) * 1_000_000
        let endpoint = ConnectionPool.endpoint(host: request.host, port: request.port)
        let head = head(request)
        if let pool, let fd = pool.take(endpoint) {
            switch try exchange(on: fd, request, head, deadline: deadline, endpoint: endpoint) {
            case .answered(let response):
                return response
            case .staleConnection(let error):
                // Only a request that may be repeated goes out again: the server
                // may have acted on it before the connection failed.
                guard request.mayBeRepeated else {
                    throw SystemError(
                        call: "\(error.call) (a reused connection failed; \(request.method) not retried)",
                        errno: error.errno)
                }
            }
        }
        let fd = try connect(request, deadline: deadline)
        switch try exchange(on: fd, request, head, deadline: deadline, endpoint: endpoint) {
        case .answered(let response): return response
        case .staleConnection(let error): throw error
        }
    }

    private enum Outcome {
        case answered(Response)
        /// The connection failed before any byte of a response arrived.
        case staleConnection(SystemError)
    }

    /// Sends on `fd` (owned from here on) and reads the answer; puts the
    /// connection back in the pool when it can carry another request.
    private func exchange(
        on fd: Int32, _ request: Request, _ head: [UInt8], deadline: UInt64, endpoint: String
    ) throws(SystemError) -> Outcome {
        guard register(fd) else {
            System.close(fd)
            throw SystemError(call: "connect (cancelled)", errno: ECANCELED)
        }
        var reusable = false
        defer {
            let cancelled = state.withLock { state -> Bool in
                state.fd = nil
                return state.cancelled
            }
            if reusable && !cancelled, let pool { pool.put(fd, endpoint) } else { System.close(fd) }
        }
        var reader = ResponseReader(fd: fd, deadline: deadline, isCancelled: { [self] in isCancelled })
        do throws(SystemError) {
            try write(fd, head + (request.body ?? []), deadline: deadline)
            let response = try reader.response(request.method)
            reusable = pool != nil && reader.canCarryAnotherRequest(after: response)
            return .answered(response)
        } catch {
            if isCancelled { throw SystemError(call: "\(error.call) (cancelled)", errno: ECANCELED) }
            if reader.received == 0, error.errno == EPIPE || error.errno == ECONNRESET {
                return .staleConnection(error)
            }
            throw error
        }
    }

    private func register(_ fd: Int32) -> Bool {
        state.withLock { state -> Bool in
            if state.cancelled { return false }
            state.fd = fd
            return true
        }
    }

    /// A new connection to the request's endpoint, trying each address in turn.
    private func connect(_ request: Request, deadline: UInt64) throws(SystemError) -> Int32 {
        let fd = try Dialer.connect(
            host: request.host, port: request.port, deadline: deadline, register: { [self] fd in register(fd) },
            unregister: { [self] in state.withLock { $0.fd = nil } }, isCancelled: { [self] in isCancelled })
        pool?.recordOpened()
        return fd
    }

    private func head(_ request: Request) -> [UInt8] {
        Self.head(request, keepAlive: pool != nil)
    }

    /// The request line and header fields, with `Host` and `Content-Length` set here and
    /// `Connection: close` unless the connection is to be kept.
    static func head(_ request: Request, keepAlive: Bool) -> [UInt8] {
        var text = "\(request.method) \(request.target) HTTP/1.1\r\nHost: \(request.host):\(request.port)\r\n"
        for (name, value) in request.headers {
            let lowered = name.lowercased()
            if lowered == "host" || lowered == "content-length" || lowered == "connection" { continue }
            text += "\(name): \(value)\r\n"
        }
        if let body = request.body { text += "Content-Length: \(body.count)\r\n" }
        if !keepAlive { text += "Connection: close\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }

    static func setTimeouts(_ fd: Int32, deadline: UInt64) throws(SystemError) {
        let now = System.monotonicNanoseconds()
        guard now < deadline else { throw SystemError(call: "read (timed out)", errno: ETIMEDOUT) }
        let milliseconds = max(1, Int((deadline - now) / 1_000_000))
        try System.setTimeout(fd, option: SO_SNDTIMEO, milliseconds: milliseconds)
        try System.setTimeout(fd, option: SO_RCVTIMEO, milliseconds: milliseconds)
    }

    private func write(_ fd: Int32, _ bytes: [UInt8], deadline: UInt64) throws(SystemError) {
        try Self.setTimeouts(fd, deadline: deadline)
        var sent = 0
        while sent < bytes.count {
            let result = bytes.withUnsafeBytes { buffer in
                Result { () throws(SystemError) in
                    try System.send(fd, UnsafeRawBufferPointer(rebasing: buffer[sent...]))
                }
            }
            switch try result.get() {
            case .processed(let count): sent += count
            case .wouldBlock: throw SystemError(call: "send (timed out)", errno: ETIMEDOUT)
            }
        }
    }
}

extension HTTPClientCall.Request {
    /// Whether the request may go out again, unasked, after a reused connection
    /// failed before any byte of an answer (the server may have acted on it and
    /// then gone): a safe method (GET, HEAD, OPTIONS, TRACE), or a request with an
    /// `Idempotency-Key`, whose repeat the server answers with the first answer.
    ///
    /// Not a bare PUT or DELETE, although RFC 9110 calls them idempotent: the
    /// effect of two equals one only if nothing happened in between, and a repeat
    /// after the first was applied undoes another client's write made since (a
    /// PUT), or answers 404 for a delete that was done (a DELETE). The caller is
    /// told the connection failed and decides.
    var mayBeRepeated: Bool {
        method == .get || method == .head || method == .options || method.rawValue == "TRACE"
            || headers.contains("Idempotency-Key")
    }
}

/// Reads and frames one response from a blocking socket.
private struct ResponseReader {
    let fd: Int32
    let deadline: UInt64
    let isCancelled: () -> Bool
    var buffer: [UInt8] = []
    var position = 0
    var closed = false
    /// Bytes read so far: 0 means the server has said nothing yet.
    var received = 0
    /// Whether the body ran to the end of the stream (no length, not chunked).
    var readToClose = false

    init(fd: Int32, deadline: UInt64, isCancelled: @escaping () -> Bool) {
        self.fd = fd
        self.deadline = deadline
        self.isCancelled = isCancelled
    }

    /// Reads more bytes into `buffer`; false at end of stream.
    mutating func fill() throws(SystemError) -> Bool {
        if closed { return false }
        if isCancelled() { throw SystemError(call: "read", errno: ECANCELED) }
        try HTTPClientCall.setTimeouts(fd, deadline: deadline)
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let result = chunk.withUnsafeMutableBytes { bytes in
            Result { () throws(SystemError) in try System.read(fd, into: bytes) }
        }
        switch try result.get() {
        case .processed(0):
            closed = true
            if received == 0 {
                throw SystemError(call: "read (connection closed before a response)", errno: ECONNRESET)
            }
            return false
        case .processed(let count):
            received += count
            if position > 0 && position == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                position = 0
            }
            buffer += chunk[..<count]
            return true
        case .wouldBlock: throw SystemError(call: "read (timed out)", errno: ETIMEDOUT)
        }
    }

    /// Whether the connection may carry the next request: the response was
    /// framed, nothing follows it, and neither side asked to close.
    func canCarryAnotherRequest(after response: HTTPClientCall.Response) -> Bool {
        guard !closed, !readToClose, position == buffer.count else { return false }
        let tokens = response.headers.values(for: "Connection").flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: " \t").lowercased() }
        return !tokens.contains("close")
    }

    /// The next line without its CRLF.
    mutating func line(limit: Int) throws(SystemError) -> [UInt8] {
        while true {
            if let end = buffer[position...].firstIndex(of: UInt8(ascii: "\n")) {
                var line = Array(buffer[position..<end])
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                position = end + 1
                return line
            }
            guard buffer.count - position <= limit else {
                throw SystemError(call: "read (response head too large)", errno: EMSGSIZE)
            }
            guard try fill() else { throw SystemError(call: "read (connection closed mid-head)", errno: ECONNRESET) }
        }
    }

    mutating func bytes(_ count: Int) throws(SystemError) -> [UInt8] {
        while buffer.count - position < count {
            guard try fill() else { throw SystemError(call: "read (connection closed mid-body)", errno: ECONNRESET) }
        }
        defer { position += count }
        return Array(buffer[position..<position + count])
    }

    mutating func response(_ method: HTTPMethod) throws(SystemError) -> HTTPClientCall.Response {
        let statusLine = String(decoding: try line(limit: HTTPClientCall.maximumHeadBytes), as: UTF8.self)
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let code = Int(parts[1]), (100...999).contains(code)
        else { throw SystemError(call: "read (not an HTTP status line)", errno: EPROTO) }
        let reason = parts.count > 2 ? String(parts[2]) : ""
        var headers = HTTPHeaders()
        var headBytes = statusLine.utf8.count
        while true {
            let raw = try line(limit: HTTPClientCall.maximumHeadBytes)
            headBytes += raw.count
            guard headBytes <= HTTPClientCall.maximumHeadBytes else {
                throw SystemError(call: "read (response head too large)", errno: EMSGSIZE)
            }
            if raw.isEmpty { break }
            guard let colon = raw.firstIndex(of: UInt8(ascii: ":")) else {
                throw SystemError(call: "read (a header line without a colon)", errno: EPROTO)
            }
            let name = String(decoding: raw[..<colon], as: UTF8.self)
            let value = String(decoding: raw[(colon + 1)...], as: UTF8.self)
            headers.add(name: name, value: value.trimmingCharacters(in: " \t"))
        }
        if code == 100 { return try response(method) }
        var response = HTTPClientCall.Response(
            status: HTTPStatus(code: code, reasonPhrase: reason), headers: headers, body: [])
        if parts[0] == "HTTP/1.0" { readToClose = true }
        if method == .head || code == 204 || code == 304 || code < 200 { return response }
        if response.headers["Transfer-Encoding"]?.lowercased().contains("chunked") == true {
            response.body = try chunkedBody()
        } else if let lengthText = response.headers["Content-Length"] {
            guard let length = Int(lengthText), length >= 0, length <= HTTPClientCall.maximumBodyBytes else {
                throw SystemError(call: "read (bad Content-Length \(lengthText.prefix(20)))", errno: EPROTO)
            }
            response.body = try bytes(length)
        } else {
            readToClose = true
            while try fill() {
                guard buffer.count - position <= HTTPClientCall.maximumBodyBytes else {
                    throw SystemError(call: "read (response body too large)", errno: EMSGSIZE)
                }
            }
            response.body = Array(buffer[position...])
            position = buffer.count
        }
        return response
    }

    mutating func chunkedBody() throws(SystemError) -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let sizeLine = String(decoding: try line(limit: 1024), as: UTF8.self)
            let sizeText = sizeLine.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: " \t"), radix: 16), size >= 0,
                body.count + size <= HTTPClientCall.maximumBodyBytes
            else { throw SystemError(call: "read (bad chunk size \(sizeLine.prefix(20)))", errno: EPROTO) }
            if size == 0 {
                // Trailers, up to the empty line.
                while !(try line(limit: HTTPClientCall.maximumHeadBytes)).isEmpty {}
                return body
            }
            body += try bytes(size)
            guard try line(limit: 2).isEmpty else {
                throw SystemError(call: "read (chunk without CRLF)", errno: EPROTO)
            }
        }
    }
}

extension String {
    /// The string without leading and trailing characters from `set`.
    fileprivate func trimmingCharacters(in set: String) -> String {
        var slice = Substring(self)
        while let first = slice.first, set.contains(first) { slice.removeFirst() }
        while let last = slice.last, set.contains(last) { slice.removeLast() }
        return String(slice)
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> String { String(self).trimmingCharacters(in: set) }
}
