import CSystem
import Dispatch
import Glibc
import HTTP
import Logging
import POSIXIO
import Synchronization

@testable import Server

/// A blocking loopback client for the server tests, with a receive timeout
/// so that a broken server fails a test instead of hanging it.
final class TestClient {
    struct Reply {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]
        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    enum Failure: Error { case connect(Int32), closed, timeout, malformed(String) }

    let fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int, receiveBuffer: Int32? = nil, timeoutSeconds: Int = 3) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, 4)
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if result != 0 {
            let error = errno
            Glibc.close(fd)
            throw Failure.connect(error)
        }
    }

    deinit { Glibc.close(fd) }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written <= 0 { return }
            offset += written
        }
    }

    func shutdownWrite() { Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// Reads more bytes into the buffer; false on EOF.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
        if count == 0 { return false }
        if count < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK { throw Failure.timeout }
            if errno == ECONNRESET { return false }
            throw Failure.malformed("recv errno \(errno)")
        }
        buffer.append(contentsOf: chunk[0..<count])
        return true
    }

    private func readLine() throws -> String {
        while true {
            if let index = findCRLF() {
                let line = String(decoding: buffer[0..<index], as: UTF8.self)
                buffer.removeFirst(index + 2)
                return line
            }
            guard try fill() else { throw Failure.closed }
        }
    }

    private func findCRLF() -> Int? {
        guard buffer.count >= 2 else { return nil }
        for index in 0..<(buffer.count - 1) where buffer[index] == 13 && buffer[index + 1] == 10 { return index }
        return nil
    }

    private func readExactly(_ count: Int) throws -> [UInt8] {
        while buffer.count < count {
            guard try fill() else { throw Failure.closed }
        }
        let bytes = Array(buffer[0..<count])
        buffer.removeFirst(count)
        return bytes
    }

    /// Reads one response; `bodyless` for HEAD requests.
    func readReply(bodyless: Bool = false) throws -> Reply {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else { throw Failure.malformed(statusLine) }
        var headers: [(String, String)] = []
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { throw Failure.malformed(line) }
            headers.append((String(line[..<colon]), String(line[line.index(after: colon)...].drop { $0 == " " })))
        }
        var reply = Reply(status: status, headers: headers, body: [])
        if bodyless || status == 100 || status == 204 || status == 304 { return reply }
        if reply.header("transfer-encoding") == "chunked" {
            while true {
                let sizeLine = try readLine()
                guard let size = Int(sizeLine, radix: 16) else { throw Failure.malformed(sizeLine) }
                if size == 0 {
                    _ = try readLine()
                    break
                }
                reply.body += try readExactly(size)
                _ = try readLine()
            }
        } else if let length = reply.header("content-length").flatMap({ Int($0) }) {
            reply.body = try readExactly(length)
        } else {
            while try fill() {}
            reply.body = buffer
            buffer = []
        }
        return reply
    }

    /// Whether the server closes the connection (EOF) with no more bytes, within the timeout.
    func closesWithoutMoreBytes() -> Bool {
        guard buffer.isEmpty else { return false }
        do {
            return try !fill()
        } catch {
            return false
        }
    }
}

/// A handler made of a closure.
struct ClosureHandler: HTTPHandler {
    let body: @Sendable (Request, Responder) -> Void
    func handle(_ request: Request, responder: Responder) { body(request, responder) }
}

/// A thread-safe list for recording what handlers saw.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    func append(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }
    var count: Int { values.withLock { $0.count } }
}

/// Polls `condition` every 5 ms for up to `seconds`.
func eventually(_ seconds: Double = 2, _ condition: () -> Bool) -> Bool {
    let deadline = System.monotonicNanoseconds() + UInt64(seconds * 1e9)
    while System.monotonicNanoseconds() < deadline {
        if condition() { return true }
        usleep(5_000)
    }
    return condition()
}

/// Starts a server on 127.0.0.1:0 with short timeouts.
/// A handler that renders the server's refusals in its own format.
struct BrandedRefusalHandler: HTTPHandler {
    func handle(_ request: Request, responder: Responder) {
        responder.respond(Response(status: .ok, headers: [:], body: Array("x".utf8)))
    }

    func errorResponse(status: HTTPStatus, detail: String) -> Response {
        Response(
            status: status, headers: ["Content-Type": "application/x-branded"],
            body: Array("branded \(status.code): \(detail)".utf8))
    }
}

func startServer(
    _ configure: (inout ServerConfiguration) -> Void = { _ in },
    handler: @escaping @Sendable (Request, Responder) -> Void
) throws -> (HTTPServer, Int) {
    try startServer(configure, handling: ClosureHandler(body: handler))
}

func startServer(
    _ configure: (inout ServerConfiguration) -> Void = { _ in }, handling handler: some HTTPHandler
) throws -> (HTTPServer, Int) {
    var configuration = ServerConfiguration(
        host: "127.0.0.1", port: 0, eventLoops: 2,
        headTimeout: .milliseconds(200), bodyIdleTimeout: .milliseconds(200),
        keepAliveIdleTimeout: .milliseconds(300), sendTimeout: .seconds(2), lingerTimeout: .milliseconds(200),
        drainTimeout: .seconds(2))
    configure(&configuration)
    var logger = Logger(label: "test")
    logger.logLevel = .error
    let server = HTTPServer(configuration: configuration, handler: handler, logger: logger)
    let port = try server.start()
    return (server, port)
}

func stop(_ server: HTTPServer) {
    server.shutdown(drainTimeout: .milliseconds(200))
    server.waitUntilStopped()
}

/// Answers `text` with 200.
func ok(_ text: String, headers: HTTPHeaders = [:]) -> Response {
    var headers = headers
    headers.add(name: "Content-Type", value: "text/plain")
    return Response(status: .ok, headers: headers, body: Array(text.utf8))
}

/// Holds a one-loop server's loop in a handler while a test queues answers
/// for it from outside, so the loop finds them all queued when it goes on.
final class LoopHold: Sendable {
    private let held = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)

    /// The holding route's handler: holds the loop until ``release()``, then answers "released".
    func holdLoop(_ responder: Responder) {
        held.signal()
        released.wait()
        responder.respond(ok("released"))
    }

    /// Sends `request` (routed to ``holdLoop(_:)``) on a new connection and
    /// returns once the loop is held, with the connection its answer comes on.
    func hold(port: Int, request: String = "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n") throws -> TestClient {
        let client = try TestClient(port: port)
        client.send(request)
        guard held.wait(timeout: .now() + 10) == .success else { throw TestClient.Failure.timeout }
        return client
    }

    /// Lets the loop go on. Call it (in a `defer` too) however the test ends.
    func release() { released.signal() }
}

/// A counter handlers can bump from any thread.
final class Counter: Sendable {
    private let storage = Atomic<Int>(0)
    func increment() { storage.add(1, ordering: .relaxed) }
    var value: Int { storage.load(ordering: .relaxed) }
}
