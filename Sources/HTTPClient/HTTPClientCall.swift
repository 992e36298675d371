import CSystem
import Glibc
import Synchronization

/// One HTTP/1.1 request over a blocking socket, for tools that must not link
/// libcurl (`listd watch` in the runtime image).
///
/// Why blocking: a call runs on a thread of its own (a long-poll waits minutes
/// doing nothing), and blocking reads with `SO_RCVTIMEO` keep it short and easy
/// to check. `cancel()` from any thread shuts the socket down, which wakes the
/// blocked read at once and closes the connection, so the server releases the
/// request. Each call uses a fresh connection (`Connection: close`).
public final class HTTPClientCall: Sendable {
    /// What to send.
    public struct Request: Sendable {
        /// `GET`, `POST`, …
        public var method: String
        /// A host name or address (resolved with getaddrinfo).
        public var host: String
        /// The TCP port.
        public var port: Int
        /// The path with its query, as sent on the request line (`/lists/a?since=3`).
        public var target: String
        /// Header fields; `Host`, `Content-Length` and `Connection` are added.
        public var headers: [(name: String, value: String)]
        /// The body, if any.
        public var body: [UInt8]?
        /// How long the whole exchange may take.
        public var timeout: Duration

        /// Creates a request.
        public init(
            method: String, host: String, port: Int, target: String, headers: [(name: String, value: String)] = [],
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
        /// The status code.
        public var status: Int
        /// Header fields in order, names as the server wrote them.
        public var headers: [(name: String, value: String)]
        /// The body, with any chunked coding removed.
        public var body: [UInt8]

        /// The first header named `name` (case-insensitive).
        public func header(_ name: String) -> String? {
            let lowered = name.lowercased()
            return headers.first { $0.name.lowercased() == lowered }?.value
        }
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

    /// A call that has not started.
    public init() {}

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

    /// Connects, sends `request` and reads the whole response. Blocks the calling thread.
    ///
    /// Throws a `SystemError` naming the step that failed (resolve, connect, send,
    /// read, or the response's framing); ECANCELED when cancelled, ETIMEDOUT past the timeout.
    public func perform(_ request: Request) throws(SystemError) -> Response {
        guard (1...65_535).contains(request.port) else { throw SystemError(call: "connect (port out of range)", errno: EINVAL) }
        let deadline = System.monotonicNanoseconds() + UInt64(max(1, request.timeout / .milliseconds(1))) * 1_000_000
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(request.host, String(request.port), &hints, &list)
        guard resolved == 0, let first = list else {
            throw SystemError(call: "getaddrinfo (\(String(cString: gai_strerror(resolved))))", errno: EHOSTUNREACH)
        }
        defer { freeaddrinfo(list) }
        var lastError = SystemError(call: "connect (no address)", errno: EHOSTUNREACH)
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let address = candidate {
            candidate = address.pointee.ai_next
            guard let sockaddr = address.pointee.ai_addr else { continue }
            let fd = try System.socket(domain: address.pointee.ai_family, type: Int32(SOCK_STREAM.rawValue))
            let registered = state.withLock { state -> Bool in
                if state.cancelled { return false }
                state.fd = fd
                return true
            }
            defer {
                state.withLock { state in
                    state.fd = nil
                    System.close(fd)
                }
            }
            guard registered else { throw SystemError(call: "connect (cancelled)", errno: ECANCELED) }
            do throws(SystemError) {
                try setTimeouts(fd, deadline: deadline)
                try System.connect(fd, address: sockaddr, length: address.pointee.ai_addrlen)
            } catch {
                if isCancelled { throw SystemError(call: "connect (cancelled)", errno: ECANCELED) }
                lastError = error
                continue
            }
            do throws(SystemError) {
                try write(fd, head(request) + (request.body ?? []), deadline: deadline)
                var reader = Reader(fd: fd, deadline: deadline, call: self)
                return try reader.response(request.method)
            } catch {
                if isCancelled { throw SystemError(call: "\(error.call) (cancelled)", errno: ECANCELED) }
                throw error
            }
        }
        throw lastError
    }

    private func head(_ request: Request) -> [UInt8] {
        var text = "\(request.method) \(request.target) HTTP/1.1\r\nHost: \(request.host):\(request.port)\r\n"
        for (name, value) in request.headers {
            let lowered = name.lowercased()
            if lowered == "host" || lowered == "content-length" || lowered == "connection" { continue }
            text += "\(name): \(value)\r\n"
        }
        if let body = request.body { text += "Content-Length: \(body.count)\r\n" }
        text += "Connection: close\r\n\r\n"
        return Array(text.utf8)
    }

    fileprivate func setTimeouts(_ fd: Int32, deadline: UInt64) throws(SystemError) {
        let now = System.monotonicNanoseconds()
        guard now < deadline else { throw SystemError(call: "read (timed out)", errno: ETIMEDOUT) }
        let milliseconds = max(1, Int((deadline - now) / 1_000_000))
        try System.setTimeout(fd, option: SO_SNDTIMEO, milliseconds: milliseconds)
        try System.setTimeout(fd, option: SO_RCVTIMEO, milliseconds: milliseconds)
    }

    private func write(_ fd: Int32, _ bytes: [UInt8], deadline: UInt64) throws(SystemError) {
        var sent = 0
        while sent < bytes.count {
            let result = bytes.withUnsafeBytes { buffer in
                Result { () throws(SystemError) in try System.send(fd, UnsafeRawBufferPointer(rebasing: buffer[sent...])) }
            }
            switch try result.get() {
            case .processed(let count): sent += count
            case .wouldBlock: throw SystemError(call: "send (timed out)", errno: ETIMEDOUT)
            }
        }
    }
}

/// Reads and frames one response from a blocking socket.
private struct Reader {
    let fd: Int32
    let deadline: UInt64
    let call: HTTPClientCall
    var buffer: [UInt8] = []
    var position = 0
    var closed = false

    init(fd: Int32, deadline: UInt64, call: HTTPClientCall) {
        self.fd = fd
        self.deadline = deadline
        self.call = call
    }

    /// Reads more bytes into `buffer`; false at end of stream.
    mutating func fill() throws(SystemError) -> Bool {
        if closed { return false }
        if call.isCancelled { throw SystemError(call: "read", errno: ECANCELED) }
        try call.setTimeouts(fd, deadline: deadline)
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let result = chunk.withUnsafeMutableBytes { bytes in
            Result { () throws(SystemError) in try System.read(fd, into: bytes) }
        }
        switch try result.get() {
        case .processed(0):
            closed = true
            return false
        case .processed(let count):
            if position > 0 && position == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                position = 0
            }
            buffer += chunk[..<count]
            return true
        case .wouldBlock: throw SystemError(call: "read (timed out)", errno: ETIMEDOUT)
        }
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

    mutating func response(_ method: String) throws(SystemError) -> HTTPClientCall.Response {
        let statusLine = String(decoding: try line(limit: HTTPClientCall.maximumHeadBytes), as: UTF8.self)
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]), (100...999).contains(status)
        else { throw SystemError(call: "read (not an HTTP status line)", errno: EPROTO) }
        var headers: [(name: String, value: String)] = []
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
            headers.append((name, value.trimmingSpaces))
        }
        if status == 100 { return try response(method) }
        var response = HTTPClientCall.Response(status: status, headers: headers, body: [])
        if method == "HEAD" || status == 204 || status == 304 || status < 200 { return response }
        if response.header("transfer-encoding")?.lowercased().contains("chunked") == true {
            response.body = try chunkedBody()
        } else if let lengthText = response.header("content-length") {
            guard let length = Int(lengthText), length >= 0, length <= HTTPClientCall.maximumBodyBytes else {
                throw SystemError(call: "read (bad Content-Length \(lengthText.prefix(20)))", errno: EPROTO)
            }
            response.body = try bytes(length)
        } else {
            while try fill() {
                guard buffer.count - position <= HTTPClientCall.maximumBodyBytes else {
                    throw SystemError(call: "read (response body too large)", errno: EMSGSIZE)
                }
            }
            response.body = Array(buffer[position...])
        }
        return response
    }

    mutating func chunkedBody() throws(SystemError) -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let sizeLine = String(decoding: try line(limit: 1024), as: UTF8.self)
            let sizeText = sizeLine.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
            guard let size = Int(sizeText.trimmingSpaces, radix: 16), size >= 0,
                body.count + size <= HTTPClientCall.maximumBodyBytes
            else { throw SystemError(call: "read (bad chunk size \(sizeLine.prefix(20)))", errno: EPROTO) }
            if size == 0 {
                // Trailers, up to the empty line.
                while !(try line(limit: HTTPClientCall.maximumHeadBytes)).isEmpty {}
                return body
            }
            body += try bytes(size)
            guard try line(limit: 2).isEmpty else { throw SystemError(call: "read (chunk without CRLF)", errno: EPROTO) }
        }
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return String(slice)
    }
}
