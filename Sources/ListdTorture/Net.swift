import Foundation
import Glibc
import HTTP
import HTTPClient
import JSON
import POSIXIO
import TortureCore

/// One HTTP answer.
struct Reply {
    var status: Int
    var headers: HTTPHeaders
    var body: [UInt8]

    var json: JSONValue? { try? JSONValue(parsing: body, limits: .unbounded) }

    /// The list version of the answer: its ETag's (`"<epoch>-<version>"`), else the body's `version`.
    var version: Int64? {
        if let tag = headers["ETag"], let dash = tag.lastIndex(of: "-") {
            return Int64(tag[tag.index(after: dash)...].filter { $0 != "\"" })
        }
        return json?["version"]?.int64Value
    }

    var text: String { String(decoding: body.prefix(300), as: UTF8.self) }
}

/// Why a request got no answer, and whether it may have reached the server.
struct NoAnswer: Error, CustomStringConvertible {
    var error: SystemError
    /// False when the connection was never made (the request cannot have been applied).
    var maybeSent: Bool { FailedCall.mayHaveReachedServer(error.call) }
    var description: String { "\(error)" }
}

/// Where an instance is reached: 127.0.0.1, or its address in the harness's network namespaces.
struct Endpoint: Sendable, Hashable, CustomStringConvertible {
    var host: String
    var port: Int
    var description: String { "\(host):\(port)" }
}

/// Blocking HTTP calls from the harness's worker threads (one request at a time per thread).
final class Net: Sendable {
    private let pool = ConnectionPool(maxIdlePerEndpoint: 64)

    func send(
        _ method: HTTPMethod, at endpoint: Endpoint, _ target: String, headers: [(String, String)] = [],
        body: String? = nil,
        timeout: Duration = .seconds(15)
    ) -> Result<Reply, NoAnswer> {
        var fields = HTTPHeaders(headers)
        if body != nil { fields.add(name: "Content-Type", value: "application/json") }
        let request = HTTPClientCall.Request(
            method: method, host: endpoint.host, port: endpoint.port, target: target, headers: fields,
            body: body.map { Array($0.utf8) }, timeout: timeout)
        do {
            let response = try HTTPClientCall(pool: pool).perform(request)
            return .success(Reply(status: response.status.code, headers: response.headers, body: response.body))
        } catch {
            return .failure(NoAnswer(error: error))
        }
    }
}

/// A server-sent-event stream read on the calling thread from a raw socket.
final class EventStream {
    struct Event {
        var id: String
        var event: String
        var data: String
    }

    private let fd: Int32
    private var raw: [UInt8] = []
    private var headDone = false
    private var body: [UInt8] = []
    private(set) var status = 0
    private(set) var closed = false
    /// The start of the body of an answer that was not a stream.
    private(set) var refusal = ""
    /// Bytes received so far (events, comments, the head).
    private(set) var bytesReceived = 0
    /// When the last bytes arrived (or the stream was opened).
    private(set) var lastReceived = ContinuousClock.now

    init?(at endpoint: Endpoint, target: String, lastEventID: String?) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(endpoint.port)).bigEndian
        address.sin_addr.s_addr = inet_addr(endpoint.host)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            Glibc.close(fd)
            return nil
        }
        self.fd = fd
        var request = "GET \(target) HTTP/1.1\r\nHost: \(endpoint.host)\r\nAccept: text/event-stream\r\n"
        if let lastEventID { request += "Last-Event-ID: \(lastEventID)\r\n" }
        request += "\r\n"
        let bytes = Array(request.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    deinit { Glibc.close(fd) }

    /// Reads what arrives within `milliseconds` and returns the complete events so far.
    func poll(milliseconds: Int32) -> [Event] {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        if Glibc.poll(&poller, 1, milliseconds) > 0 {
            var buffer = [UInt8](repeating: 0, count: 256 * 1024)
            let count = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 {
                closed = true
            } else {
                raw.append(contentsOf: buffer[0..<count])
                bytesReceived += count
                lastReceived = .now
            }
        }
        if !headDone {
            guard let end = raw.firstRange(of: Array("\r\n\r\n".utf8)) else { return [] }
            let head = String(decoding: raw[..<end.lowerBound], as: UTF8.self)
            status = Int(head.dropFirst(9).prefix(3)) ?? 0
            raw.removeSubrange(..<end.upperBound)
            headDone = true
            // Any other answer (a 503 from an instance stopping, say) is whole, not a stream, and
            // listd keeps the connection open for the next request: waiting for events on it
            // would wait for ever. Its body says why.
            if status != 200 {
                closed = true
                refusal = String(decoding: raw.prefix(300), as: UTF8.self)
                return []
            }
        }
        // Chunked framing.
        while let lineEnd = raw.firstRange(of: Array("\r\n".utf8)) {
            guard let size = Int(String(decoding: raw[..<lineEnd.lowerBound], as: UTF8.self), radix: 16) else {
                closed = true
                break
            }
            if size == 0 {
                closed = true
                raw.removeAll()
                break
            }
            guard raw.count - lineEnd.upperBound >= size + 2 else { break }
            body.append(contentsOf: raw[lineEnd.upperBound..<(lineEnd.upperBound + size)])
            raw.removeSubrange(..<(lineEnd.upperBound + size + 2))
        }
        var events: [Event] = []
        while let end = body.firstRange(of: Array("\n\n".utf8)) {
            let block = String(decoding: body[..<end.lowerBound], as: UTF8.self)
            body.removeSubrange(..<end.upperBound)
            var event = Event(id: "", event: "", data: "")
            for line in block.split(separator: "\n") {
                if line.hasPrefix("id:") { event.id = line.dropFirst(3).trimmingCharacters(in: .whitespaces) }
                if line.hasPrefix("event:") { event.event = line.dropFirst(6).trimmingCharacters(in: .whitespaces) }
                if line.hasPrefix("data:") { event.data += line.dropFirst(5).trimmingCharacters(in: .whitespaces) }
            }
            if !event.event.isEmpty { events.append(event) }
        }
        return events
    }

    func close() { shutdown(fd, Int32(SHUT_RDWR)) }
}

/// Prints a line at once (standard output is a pipe under CI, and a run lasts hours).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

extension JSONLimits {
    /// The harness reads whole lists and answers, whatever their size.
    static let unbounded = JSONLimits(maxDepth: 1_024, maxBytes: 1 << 30)
}
