import CSystem
import Foundation
import Glibc
import HTTP
import HTTPClient
import Synchronization

/// A loopback HTTP server that plays a script per accepted connection, to
/// drive the client through what a real server does only by chance (closing
/// an idle connection, or closing it as a request arrives).
final class ScriptedServer: Sendable {
    enum Step: Sendable {
        /// Read one request and answer 200 with keep-alive.
        case answer
        /// Read one request and answer 200 with `Connection: close`, then close.
        case answerAndClose
        /// Read one request, then close without answering.
        case readThenClose
        /// Close the connection.
        case close
        /// Read one request and answer 200 with a body of this many bytes (keep-alive).
        case answerWithBody(Int)
        /// Read one request and answer with its first `Int` bytes, then close.
        case answerPartlyThenClose(Int)
        /// Read one request, counting its body without keeping it, and answer 200 with the count.
        case countBody
        /// Read nothing until ``openGate()`` (or ``stop()``, or 120 s), so the client's send finds the socket full.
        case waitForGate
    }

    let port: Int
    private let listener: Int32
    private let state = Mutex(State())
    /// Signalled when the accepting thread has returned: only then may the
    /// listener's descriptor be closed (closed earlier, its number could be
    /// reused by another test's socket, which this thread would then accept on).
    private let finished = DispatchSemaphore(value: 0)
    private let gate = DispatchSemaphore(value: 0)

    private struct State {
        var requests: [String] = []
        var closed = 0
        /// Accepted connections not closed yet (shut down by ``stop()``).
        var open: Set<Int32> = []
    }

    /// The methods of the requests read, in order.
    var requests: [String] { state.withLock { $0.requests } }

    /// The loopback address it listens on.
    let host: String

    /// A server on `host` (another loopback address than 127.0.0.1 keeps it
    /// away from clients of other tests that still try a port that was theirs
    /// and is now this server's).
    init(_ script: [[Step]], host: String = "127.0.0.1") throws {
        self.host = host
        // Close-on-exec, the listener and every accepted connection: tests in the
        // same process start listd children, and a child that inherited a
        // connection keeps it open after this server closes it, so the client
        // under test never saw the close it waited for (a 10 s timeout instead,
        // in full-suite runs only).
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(host)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0, listen(fd, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let box = StateBox()
        let finished = finished
        let thread = Thread { [box] in
            defer { finished.signal() }
            for steps in script {
                let connection = csystem_accept4(fd, nil, nil, Int32(SOCK_CLOEXEC.rawValue))
                guard connection >= 0 else { return }
                box.server?.state.withLock { _ = $0.open.insert(connection) }
                box.server?.play(steps, on: connection)
            }
        }
        box.server = self
        thread.start()
    }

    /// Stops accepting (a blocked accept returns), waits for the accepting
    /// thread, then closes the listener.
    func stop() {
        gate.signal()
        shutdown(listener, Int32(SHUT_RDWR))
        // A script still reading a connection sees its end, closes it, and moves on.
        state.withLock { for connection in $0.open { shutdown(connection, Int32(SHUT_RDWR)) } }
        _ = finished.wait(timeout: .now() + 10)
        close(listener)
    }

    func request(_ method: HTTPMethod, body: String? = nil, headers: HTTPHeaders = [:]) -> HTTPClientCall.Request {
        HTTPClientCall.Request(
            method: method, host: host, port: port, target: "/", headers: headers, body: body.map { Array($0.utf8) },
            timeout: .seconds(5))
    }

    /// Lets a connection waiting at ``Step/waitForGate`` go on.
    func openGate() { gate.signal() }

    /// Waits until `count` connections were closed by the script.
    func waitForClosedConnections(_ count: Int) -> Bool {
        for _ in 0..<1000 {
            if state.withLock({ $0.closed }) >= count { return true }
            usleep(5_000)
        }
        return false
    }

    private func play(_ steps: [Step], on connection: Int32) {
        var pending: [UInt8] = []
        for step in steps {
            switch step {
            case .answerWithBody(let size):
                guard let method = readRequest(connection, &pending) else { break }
                state.withLock { $0.requests.append(method) }
                sendAll(connection, Array("HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\n\r\n".utf8))
                sendAll(connection, [UInt8](repeating: UInt8(ascii: "x"), count: size))
                continue
            case .answerPartlyThenClose(let count):
                guard let method = readRequest(connection, &pending) else { break }
                state.withLock { $0.requests.append(method) }
                sendAll(connection, Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc".utf8.prefix(count)))
            case .countBody:
                guard let (method, count) = countRequest(connection, &pending) else { break }
                state.withLock { $0.requests.append(method) }
                let text = String(count)
                sendAll(connection, Array("HTTP/1.1 200 OK\r\nContent-Length: \(text.utf8.count)\r\n\r\n\(text)".utf8))
                continue
            case .answer, .answerAndClose, .readThenClose:
                guard let method = readRequest(connection, &pending) else { break }
                state.withLock { $0.requests.append(method) }
                if case .readThenClose = step { break }
                let close = if case .answerAndClose = step { "Connection: close\r\n" } else { "" }
                let reply = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\(close)\r\nok".utf8)
                _ = reply.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if case .answerAndClose = step { break }
                continue
            case .waitForGate:
                _ = gate.wait(timeout: .now() + 120)
                continue
            case .close:
                break
            }
            break
        }
        state.withLock {
            $0.open.remove(connection)
            $0.closed += 1
        }
        Glibc.close(connection)
    }

    private func sendAll(_ fd: Int32, _ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return }
            sent += count
        }
    }

    /// Reads one request's head, then counts its Content-Length body as it passes
    /// without keeping it; its method and the body's length, or nil at end of stream.
    private func countRequest(_ fd: Int32, _ pending: inout [UInt8]) -> (String, Int)? {
        let end = Array("\r\n\r\n".utf8)
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while pending.firstRange(of: end) == nil {
            let count = read(fd, &chunk, chunk.count)
            guard count > 0 else { return nil }
            pending += chunk[..<count]
        }
        guard let range = pending.firstRange(of: end) else { return nil }
        let head = String(decoding: pending[..<range.lowerBound], as: UTF8.self)
        let length =
            head.split(separator: "\r\n").compactMap { line -> Int? in
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                return Int(parts[1].trimmingCharacters(in: .whitespaces))
            }.first ?? 0
        var received = pending.count - range.upperBound
        pending.removeAll()
        while received < length {
            let count = read(fd, &chunk, min(chunk.count, length - received))
            guard count > 0 else { return nil }
            received += count
        }
        return (head.split(separator: " ").first.map(String.init) ?? "", received)
    }

    /// Reads one request (head and Content-Length body); its method, or nil at end of stream.
    private func readRequest(_ fd: Int32, _ pending: inout [UInt8]) -> String? {
        let end = Array("\r\n\r\n".utf8)
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let range = pending.firstRange(of: end) {
                let head = String(decoding: pending[..<range.lowerBound], as: UTF8.self)
                let length =
                    head.split(separator: "\r\n").compactMap { line -> Int? in
                        let parts = line.split(separator: ":", maxSplits: 1)
                        guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                        return Int(parts[1].trimmingCharacters(in: .whitespaces))
                    }.first ?? 0
                if pending.count - range.upperBound >= length {
                    pending.removeSubrange(..<(range.upperBound + length))
                    return head.split(separator: " ").first.map(String.init)
                }
            }
            let count = read(fd, &chunk, chunk.count)
            guard count > 0 else { return nil }
            pending += chunk[..<count]
        }
    }
}

/// Lets the accept thread reach the server once it is fully initialised.
private final class StateBox: @unchecked Sendable {
    // Written once before the thread starts, read only by that thread after.
    var server: ScriptedServer?
}
