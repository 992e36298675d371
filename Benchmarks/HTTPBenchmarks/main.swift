// HTTPBenchmarks: the Server module's "must show" measurements.
//
//   HTTPBenchmarks serve BODY_FILE [PORT] [LOOPS]   answer every request with BODY_FILE (for wrk)
//   HTTPBenchmarks parked-server                    park every request until GET /release
//   HTTPBenchmarks parked-client PORT [COUNT]       drive parked-server, print the figures
//
// The parked benchmark runs client and server in separate processes, since
// each needs a descriptor per connection and the limit is per process.
import CSystem
import Foundation
import Glibc
import HTTP
import Logging
import Server
import Synchronization

/// Raises the soft descriptor limit to the hard one.
func raiseFileLimit() -> Int {
    var limit = rlimit()
    getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = limit.rlim_max
    setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    return Int(clamping: limit.rlim_cur)
}

/// Resident set size of this process in bytes, from /proc/self/statm.
func residentBytes() -> Int {
    guard let bytes = readFile("/proc/self/statm") else { return -1 }
    let fields = String(decoding: bytes, as: UTF8.self).split(separator: " ")
    guard fields.count > 1, let resident = Int(fields[1]) else { return -1 }
    return resident * Int(sysconf(Int32(_SC_PAGESIZE)))
}

func readFile(_ path: String) -> [UInt8]? {
    guard let file = fopen(path, "rb") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = fread(&chunk, 1, chunk.count, file)
        if count <= 0 { break }
        bytes += chunk[0..<count]
    }
    return bytes
}

func makeLogger() -> Logger {
    var logger = Logger(label: "bench")
    logger.logLevel = .warning
    return logger
}

func monotonicSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

// MARK: serve

struct FixedBody: HTTPHandler {
    let response: Response
    func handle(_ request: Request, responder: Responder) { responder.respond(response) }
}

func serve(_ arguments: [String]) throws {
    guard arguments.count >= 1, let body = readFile(arguments[0]) else {
        print("usage: HTTPBenchmarks serve BODY_FILE [PORT] [LOOPS]")
        exit(2)
    }
    var configuration = ServerConfiguration(port: arguments.count > 1 ? Int(arguments[1]) ?? 8081 : 8081)
    if arguments.count > 2, let loops = Int(arguments[2]) { configuration.eventLoops = loops }
    _ = raiseFileLimit()
    let response = Response(status: .ok, headers: ["Content-Type": "application/json"], body: body)
    let server = HTTPServer(configuration: configuration, handler: FixedBody(response: response), logger: makeLogger())
    let port = try server.start()
    try server.installSignalHandlers()
    print("serving \(body.count) bytes on 127.0.0.1:\(port) with \(configuration.eventLoops) loops")
    server.waitUntilStopped()
}

// MARK: parked-server

/// Parks every request except /stats (answered at once) and /release, which
/// answers every parked request and then itself, once the server has written
/// them all: its body is "released COUNT HEAD_LENGTH MILLISECONDS".
final class ParkingHandler: HTTPHandler {
    private let parked = Mutex<[Responder]>([])
    let body: [UInt8] = Array(#"{"changes":[],"version":43}"#.utf8)
    let server = Mutex<HTTPServer?>(nil)

    func handle(_ request: Request, responder: Responder) {
        switch request.path {
        case "/stats":
            let stats = server.withLock { $0?.stats }
            let text =
                #"{"rss":\#(residentBytes()),"parked":\#(stats?.parkedRequests ?? -1),"open":\#(stats?.openConnections ?? -1)}"#
            responder.respond(Response(headers: ["Content-Type": "application/json"], body: Array(text.utf8)))
        case "/probe":
            // The same answer a parked request gets, so the client learns its length.
            responder.respond(Response(headers: ["Content-Type": "application/json"], body: body))
        case "/release":
            let waiting = parked.withLock { list -> [Responder] in
                defer { list = [] }
                return list
            }
            let start = monotonicSeconds()
            let response = Response(headers: ["Content-Type": "application/json"], body: body)
            for waiter in waiting { waiter.respond(response) }
            // Every parked answer has been written when only this request is
            // parked (a loop counts an answer as given just before its sendmsg).
            let server = self.server.withLock { $0 }
            let headLength = ResponseSerializer.head(
                response, requestMethod: .get, version: .http1_1, keepAlive: true,
                date: "Mon, 23 Nov 2026 03:43:50 GMT"
            ).count
            Thread.detachNewThread {
                while let server, server.stats.parkedRequests > 1, monotonicSeconds() - start < 30 {
                    usleep(250)
                }
                let elapsed = (monotonicSeconds() - start) * 1000
                let text = "released \(waiting.count) \(headLength) \(String(format: "%.1f", elapsed))"
                responder.respond(Response(body: Array(text.utf8)))
            }
        default:
            parked.withLock { $0.append(responder) }
        }
    }
}

func parkedServer() throws {
    let limit = raiseFileLimit()
    let handler = ParkingHandler()
    let configuration = ServerConfiguration(port: 0, keepAliveIdleTimeout: .seconds(600), backlog: 4096)
    let server = HTTPServer(configuration: configuration, handler: handler, logger: makeLogger())
    handler.server.withLock { $0 = server }
    let port = try server.start()
    try server.installSignalHandlers()
    print("port \(port) fdlimit \(limit)")
    fflush(nil)
    server.waitUntilStopped()
}

// MARK: parked-client

final class Client {
    let fd: Int32
    var buffer: [UInt8] = []

    init?(port: Int) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if result != 0 {
            close(fd)
            return nil
        }
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// The length of the last whole response `readResponse` returned, head included.
    var lastResponseLength = 0

    /// Reads one whole response (head and Content-Length body); returns its body.
    func readResponse() -> [UInt8]? {
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            if let end = headEnd() {
                let head = String(decoding: buffer[0..<end], as: UTF8.self).lowercased()
                var length = 0
                if let range = head.range(of: "content-length: ") {
                    length = Int(head[range.upperBound...].prefix { $0.isNumber }) ?? 0
                }
                if buffer.count >= end + 4 + length {
                    let body = Array(buffer[(end + 4)..<(end + 4 + length)])
                    lastResponseLength = end + 4 + length
                    buffer.removeFirst(end + 4 + length)
                    return body
                }
            }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return nil }
            buffer += chunk[0..<count]
        }
    }

    private func headEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for index in 0...(buffer.count - 4)
        where buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
            return index
        }
        return nil
    }
}

func stats(port: Int) -> (rss: Int, parked: Int) {
    guard let client = Client(port: port) else { return (-1, -1) }
    defer { close(client.fd) }
    client.send("GET /stats HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n")
    guard let body = client.readResponse() else { return (-1, -1) }
    let text = String(decoding: body, as: UTF8.self)
    func field(_ name: String) -> Int {
        guard let range = text.range(of: "\"\(name)\":") else { return -1 }
        return Int(text[range.upperBound...].prefix { $0.isNumber || $0 == "-" }) ?? -1
    }
    return (field("rss"), field("parked"))
}

/// Reads the answers of many parked connections as they become readable
/// (epoll), so the measuring client is not the bottleneck: a blocking read of
/// socket after socket would add 10,000 sequential wake-ups to the figure.
///
/// Every connection gets the same answer, so an answer is complete when
/// its connection has received `expectedLength` bytes (head and body).
struct AnswerCollector {
    let epoll: Int32
    var received: [Int]

    init(clients: [Client]) {
        epoll = epoll_create1(0)
        received = Array(repeating: 0, count: clients.count)
        for (index, client) in clients.enumerated() {
            _ = fcntl(client.fd, F_SETFL, fcntl(client.fd, F_GETFL) | O_NONBLOCK)
            var event = epoll_event()
            event.events = EPOLLIN.rawValue
            event.data.u64 = UInt64(index)
            epoll_ctl(epoll, EPOLL_CTL_ADD, client.fd, &event)
        }
    }

    /// Waits until every connection has `expectedLength` bytes, or `timeout` seconds pass;
    /// returns how many completed.
    mutating func collect(clients: [Client], expectedLength: Int, timeout: Double) -> Int {
        let start = monotonicSeconds()
        var complete = 0
        let events = UnsafeMutableBufferPointer<epoll_event>.allocate(capacity: 1024)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
        defer {
            events.deallocate()
            buffer.deallocate()
        }
        while complete < clients.count, monotonicSeconds() - start < timeout {
            let count = epoll_wait(epoll, events.baseAddress, 1024, 100)
            guard count > 0 else { continue }
            for event in events[0..<Int(count)] {
                let index = Int(event.data.u64)
                while true {
                    let read = recv(clients[index].fd, buffer.baseAddress, buffer.count, 0)
                    if read <= 0 { break }
                    let before = received[index]
                    received[index] += read
                    if before < expectedLength, received[index] >= expectedLength { complete += 1 }
                    // Drained (level-triggered: a later byte brings a new event).
                    if read < buffer.count { break }
                }
            }
        }
        return complete
    }
}

/// The full length (head and body) of the answer every parked request gets:
/// the server answers `/probe` the same way. The head's date has a fixed width.
func parkedAnswerLength(port: Int, body: [UInt8]) -> Int {
    guard let client = Client(port: port) else { exit(1) }
    defer { close(client.fd) }
    client.send("GET /probe HTTP/1.1\r\nHost: bench\r\n\r\n")
    guard let answer = client.readResponse(), answer == body else {
        print("probe: unexpected answer")
        exit(1)
    }
    return client.lastResponseLength
}

func parkedClient(_ arguments: [String]) {
    guard let port = arguments.first.flatMap({ Int($0) }) else {
        print("usage: HTTPBenchmarks parked-client PORT [COUNT]")
        exit(2)
    }
    let limit = raiseFileLimit()
    let count = arguments.count > 1 ? Int(arguments[1]) ?? 10_000 : 10_000
    // One request answered the same way, to learn the full answer's length.
    let probeBody = Array(#"{"changes":[],"version":43}"#.utf8)
    var clients: [Client] = []
    clients.reserveCapacity(count)
    let before = stats(port: port)
    for index in 0..<count {
        guard let client = Client(port: port) else {
            print("connect \(index) failed: errno \(errno)")
            exit(1)
        }
        client.send("GET /lists/groceries/changes?since=42 HTTP/1.1\r\nHost: bench\r\nAccept: application/json\r\n\r\n")
        clients.append(client)
    }
    var after = stats(port: port)
    let waitStart = monotonicSeconds()
    while after.parked < count, monotonicSeconds() - waitStart < 30 {
        usleep(20_000)
        after = stats(port: port)
    }
    usleep(200_000)
    after = stats(port: port)
    let growth = Double(after.rss - before.rss) / Double(count)
    var collector = AnswerCollector(clients: clients)
    if let pause = ProcessInfo.processInfo.environment["PARKED_PAUSE"].flatMap(Double.init) {
        // Time to attach a profiler to the server before the event.
        print("parked; releasing in \(pause) s")
        fflush(nil)
        usleep(UInt32(pause * 1_000_000))
    }

    guard let trigger = Client(port: port) else { exit(1) }
    // Every parked connection gets the same answer; its length tells when one is complete.
    let expectedLength = parkedAnswerLength(port: port, body: probeBody)
    let start = monotonicSeconds()
    trigger.send("GET /release HTTP/1.1\r\nHost: b\r\n\r\n")
    // The parked answers are read while the server is still writing them (on
    // the other core), not after the release answer: that one comes only once
    // the server has written them all.
    let answered = collector.collect(clients: clients, expectedLength: expectedLength, timeout: 30)
    let elapsed = monotonicSeconds() - start
    // The release answer says how long the server took to hand every answer to its socket.
    guard let releaseBody = trigger.readResponse() else { exit(1) }
    let releaseText = String(decoding: releaseBody, as: UTF8.self)
    let serverMs = releaseText.split(separator: " ").last.flatMap { Double($0) } ?? -1
    if let hold = ProcessInfo.processInfo.environment["PARKED_HOLD"].flatMap(Double.init) {
        // Keep the connections open so a profile of the event does not include closing them.
        usleep(UInt32(hold * 1_000_000))
    }
    print("fd limit (client process): \(limit)")
    print("parked: \(after.parked) of \(count)")
    print("server RSS before: \(before.rss / 1024) KiB, with \(count) parked: \(after.rss / 1024) KiB")
    print("RSS growth per parked connection: \(Int(growth)) bytes (\(String(format: "%.2f", growth / 1024)) KiB)")
    print("event -> all \(count) answers written by the server: \(String(format: "%.1f", serverMs)) ms")
    print("event -> all \(answered) full answers received: \(String(format: "%.1f", elapsed * 1000)) ms")
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "serve":
    try serve(Array(arguments.dropFirst()))
case "parked-server":
    try parkedServer()
case "parked-client":
    parkedClient(Array(arguments.dropFirst()))
default:
    print("usage: HTTPBenchmarks serve BODY_FILE [PORT] [LOOPS] | parked-server | parked-client PORT [COUNT]")
    exit(2)
}
