import CSystem
import Foundation
import Glibc

/// Seconds on the monotonic clock.
func monotonicSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

/// Raises the soft descriptor limit to the hard one; returns the new limit.
func raiseFileLimit() -> Int {
    var limit = rlimit()
    getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = limit.rlim_max
    setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    return Int(clamping: limit.rlim_cur)
}

/// Prints to standard error and exits: the benchmark cannot go on.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("ServiceBenchmarks: \(message)\n".utf8))
    exit(1)
}

/// One HTTP response as the benchmark needs it.
struct HTTPReply {
    var status: Int
    var head: String
    var body: [UInt8]

    var text: String { String(decoding: body, as: UTF8.self) }

    init(status: Int, head: String, body: [UInt8]) {
        self.status = status
        self.head = head
        self.body = body
    }

    /// The response in `bytes[..<end]` (`end` as `responseEnd` found it).
    init(bytes: [UInt8], end: Int) {
        let headEnd =
            bytes.withUnsafeBytes { raw in
                (0...(max(raw.count, 4) - 4)).first {
                    raw[$0] == 13 && raw[$0 + 1] == 10 && raw[$0 + 2] == 13 && raw[$0 + 3] == 10
                }
            } ?? 0
        head = String(decoding: bytes[0..<headEnd], as: UTF8.self)
        status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        body = Array(bytes[min(headEnd + 4, bytes.count)..<end])
    }

    /// The body parsed as a JSON object.
    var json: [String: Any] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            fail("expected a JSON object, got \(status): \(text.prefix(300))")
        }
        return object
    }
}

/// Finds where a complete response ends in `bytes`, if it does: the index
/// after its body. Only `Content-Length` framing, which is what listd sends
/// for everything this benchmark asks.
func responseEnd(_ bytes: UnsafeRawBufferPointer) -> Int? {
    guard bytes.count >= 4 else { return nil }
    var headEnd = -1
    for index in 0...(bytes.count - 4)
    where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
        headEnd = index
        break
    }
    guard headEnd >= 0 else { return nil }
    // Byte-wise rather than through String and Foundation: the parked figure
    // reads 10,000 answers while listd writes them on the same 2 cores, so
    // the client's own parsing must stay cheap.
    let field = Array("\r\ncontent-length:".utf8)
    var length = 0
    var index = 0
    search: while index + field.count <= headEnd {
        for offset in 0..<field.count where asciiLowercased(bytes[index + offset]) != field[offset] {
            index += 1
            continue search
        }
        var digit = index + field.count
        while digit < headEnd, bytes[digit] == UInt8(ascii: " ") { digit += 1 }
        while digit < headEnd, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[digit]) {
            length = length * 10 + Int(bytes[digit] - UInt8(ascii: "0"))
            digit += 1
        }
        break
    }
    let end = headEnd + 4 + length
    return bytes.count >= end ? end : nil
}

private func asciiLowercased(_ byte: UInt8) -> UInt8 {
    (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
}

/// A blocking keep-alive HTTP/1.1 connection to 127.0.0.1.
final class HTTPConnection {
    let fd: Int32
    private var buffer: [UInt8] = []
    /// The last request sent, named in errors.
    private var lastRequest = ""

    init(port: Int) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { fail("socket: errno \(errno)") }
        var noDelay: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if result != 0 { fail("connect to 127.0.0.1:\(port): errno \(errno) (is listd running?)") }
    }

    deinit { close(fd) }

    /// Sends a request without waiting for its answer.
    /// Sends a request written out in full (the event-stream benchmark's GETs).
    func sendRaw(_ text: String) {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { fail("send: errno \(errno)") }
            sent += count
        }
    }

    /// `Authorization: Bearer $LISTD_TOKEN` when the variable is set, for a listd that needs a token.
    static let authorization: String = {
        guard let token = ProcessInfo.processInfo.environment["LISTD_TOKEN"], !token.isEmpty else { return "" }
        return "Authorization: Bearer \(token)\r\n"
    }()

    func send(_ method: String, _ path: String, body: String? = nil) {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n"
        text += Self.authorization
        if let body {
            text += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        } else {
            text += "\r\n"
        }
        lastRequest = "\(method) \(path)"
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { fail("send: errno \(errno)") }
            sent += count
        }
    }

    /// Reads one whole response.
    func receive() -> HTTPReply {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            if let end = buffer.withUnsafeBytes(responseEnd) {
                let reply = HTTPReply(bytes: buffer, end: end)
                buffer.removeFirst(end)
                return reply
            }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 {
                fail("connection closed while reading the answer to \(lastRequest) (recv: \(count), errno \(errno))")
            }
            buffer += chunk[0..<count]
        }
    }

    /// Sends a request and reads its answer.
    func request(_ method: String, _ path: String, body: String? = nil) -> HTTPReply {
        send(method, path, body: body)
        return receive()
    }
}

/// A process's resident set in KiB, from /proc/PID/status (VmRSS).
func residentKiB(pid: Int) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else {
        fail("cannot read /proc/\(pid)/status")
    }
    for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        if let value = Int(line.split(separator: " ").dropFirst().first ?? "") { return value }
    }
    fail("no VmRSS in /proc/\(pid)/status")
}

/// The current load average line, reported next to every figure.
func loadAverage() -> String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?
        .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
}

/// Creates a list from `json` and returns its id and version.
func createList(_ connection: HTTPConnection, json: String) -> (id: String, version: Int) {
    let reply = connection.request("POST", "/lists", body: json)
    guard reply.status == 201 else { fail("POST /lists answered \(reply.status): \(reply.text.prefix(300))") }
    let object = reply.json
    guard let id = object["id"] as? String, let version = object["version"] as? Int else {
        fail("POST /lists answer has no id or version: \(reply.text.prefix(300))")
    }
    return (id, version)
}

/// The value of a gauge in listd's /metrics text.
func metric(_ connection: HTTPConnection, _ name: String) -> Double {
    let reply = connection.request("GET", "/metrics")
    for line in reply.text.split(separator: "\n") where line.hasPrefix(name + " ") {
        return Double(line.split(separator: " ").last ?? "") ?? -1
    }
    return -1
}
