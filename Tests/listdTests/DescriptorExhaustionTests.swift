import Foundation
import Glibc
import ListdTestSupport
import Testing

/// listd in a child process with a low `RLIMIT_NOFILE`, run out of descriptors for real.
@Suite struct DescriptorExhaustionTests {
    /// With the default `--max-connections` (the descriptor limit less a reserve of 64), the
    /// connection past it is answered 503 with `Retry-After`; the open ones keep being
    /// served; once some close, new ones are served again.
    @Test func overTheLimitDerivedFromRLIMITNOFILEIs503AndAcceptsAgain() async throws {
        let listd = try await LimitedListd(descriptors: 160)
        defer { listd.stop() }
        let limit = try #require(Int(listd.maxConnections))
        #expect(limit == 160 - 64)

        var open: [RawConnection] = []
        for _ in 0..<limit {
            let connection = try RawConnection(port: listd.port)
            #expect(try await connection.get("/healthz").status == 200)
            open.append(connection)
        }
        let over = try RawConnection(port: listd.port)
        let refused = try await over.get("/healthz")
        #expect(refused.status == 503, "\(refused.text)")
        let retryAfter = try #require(refused.header("retry-after").flatMap { Int($0) })
        #expect(retryAfter >= 1)
        #expect(refused.text.contains("service-unavailable"))
        #expect(await over.closedByPeer())

        // The open connections are still served, every one of them.
        for connection in open { #expect(try await connection.get("/healthz").status == 200) }

        // Descriptors free up: a new connection is served.
        open.removeLast(10)
        #expect(await eventually(10) { (try? await RawConnection(port: listd.port).get("/healthz").status) == 200 })
        #expect(listd.isRunning)
    }

    /// `--max-connections` above what the descriptors allow is lowered to what they
    /// allow, and the log says so: listd must never run out of descriptors, because a
    /// Swift process with none free is aborted by libdispatch (its worker-pool monitor
    /// opens /proc/<tid>/stat once a second while work is queued). This test used to
    /// exhaust the descriptors on purpose and crashed listd about once in twenty runs
    /// on a busy machine.
    @Test func maxConnectionsAboveTheDescriptorLimitIsLoweredNotFatal() async throws {
        let listd = try await LimitedListd(descriptors: 96, arguments: ["--max-connections", "10000"])
        defer { listd.stop() }
        do {
            try await overTheLoweredLimit(listd)
        } catch {
            throw TestFailure("\(error)\n--- listd's log:\n\(listd.log.suffix(6000))")
        }
    }

    private func overTheLoweredLimit(_ listd: LimitedListd) async throws {
        #expect(listd.maxConnections == "\(96 - 64)")
        #expect(listd.log.contains("fewer connections than asked"), "\(listd.log)")
        #expect(listd.log.contains("asked=10000"))
        let limit = 96 - 64
        var open: [RawConnection] = []
        for _ in 0..<limit {
            let connection = try RawConnection(port: listd.port)
            #expect(try await connection.get("/healthz").status == 200)
            open.append(connection)
        }
        // Past the limit: 503, and past a quarter of the reserve more, closed at once.
        var refused = 0
        var over: [RawConnection] = []
        for _ in 0..<40 {
            let connection = try RawConnection(port: listd.port)
            try connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            over.append(connection)
        }
        for connection in over {
            // A connection closed without a word is the designed answer past the 503s.
            do {
                let reply = try await connection.reply(timeout: .seconds(10))
                #expect(reply?.status == 503, "no answer in 10 s, or not 503")
                if reply?.status == 503 { refused += 1 }
            } catch {
                continue
            }
        }
        #expect(refused >= 1)
        over.removeAll()
        // The open connections are still served, every one of them, and listd never ran out.
        for connection in open { #expect(try await connection.get("/healthz").status == 200) }
        #expect(!listd.log.contains("accept paused"), "\(listd.log)")
        #expect(listd.isRunning)

        // Descriptors free up: a new connection is served.
        open.removeLast(10)
        #expect(await eventually(10) { (try? await RawConnection(port: listd.port).get("/healthz").status) == 200 })
        #expect(listd.isRunning)
    }
}

/// `listd serve` started through `sh -c 'ulimit -n N; exec listd …'`.
final class LimitedListd: Sendable {
    let process: ChildProcess
    let output: OutputLog
    let port: Int
    let maxConnections: String
    let directory: URL

    init(descriptors: Int, arguments: [String] = []) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("listd-nofile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let pipe = try closeOnExecPipe()
        output = OutputLog(FileHandle(fileDescriptor: pipe.read, closeOnDealloc: true))
        defer { close(pipe.write) }
        process = try ChildProcess(
            executable: URL(fileURLWithPath: "/bin/sh"),
            arguments: [
                "-c", "ulimit -n \(descriptors) && exec \"$0\" \"$@\"", try ListdBinary.url.path, "serve", "--port",
                "0",
            ]
                + [
                    "--db", directory.appendingPathComponent("listd.sqlite").path, "--migrations",
                    ListdProcess.migrations.path,
                ]
                // An hour of keep-alive: the connections this test holds open sit idle
                // for over a minute at the start of a full run, and must not close under it.
                + ["--event-loops", "1", "--keep-alive-timeout", "1h"] + arguments,
            environment: ChildProcess.environmentWithoutListd, directory: directory, stderr: pipe.write)
        guard
            let port = await output.firstCapture(of: #"address=http://127\.0\.0\.1:(\d+)"#, timeout: .seconds(30))
                .flatMap({ Int($0) }),
            let limit = await output.firstCapture(of: #"maxConnections=(\d+)"#, timeout: .seconds(5))
        else {
            process.terminate()
            process.waitUntilExit()
            throw TestFailure("listd did not start:\n\(output.text)")
        }
        self.port = port
        self.maxConnections = limit
    }

    var log: String { output.text }
    var isRunning: Bool { process.isRunning }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A loopback TCP connection read without blocking a thread.
final class RawConnection: @unchecked Sendable {
    // Used by one test task at a time; @unchecked only because the fd and buffer are mutable.
    private var fd: Int32
    private var received: [UInt8] = []
    /// "local -> peer" ports at connect, to tell in a failure whether the
    /// descriptor still is this connection.
    private var ends = ""

    struct Reply {
        var status: Int
        var headers: [(String, String)]
        var text: String
        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name }?.1 }
    }

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw TestFailure("connect: errno \(errno)")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        ends = Self.ends(of: fd)
    }

    /// The descriptor's "local port -> peer port", or what getsockname/getpeername said.
    private static func ends(of fd: Int32) -> String {
        func port(_ call: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32) -> String {
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let result = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, &length) }
            }
            return result == 0 ? "\(UInt16(bigEndian: address.sin_port))" : "errno \(errno)"
        }
        return "fd \(fd): \(port { getsockname($0, $1, $2) }) -> \(port { getpeername($0, $1, $2) })"
    }

    deinit { close() }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else { throw TestFailure("send: errno \(errno)") }
    }

    func get(_ path: String) async throws -> Reply {
        try send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        guard let reply = try await reply(timeout: .seconds(10 * testWaitScale)) else {
            throw TestFailure("no answer to GET \(path)")
        }
        return reply
    }

    /// The next whole response, or nil if none arrived within `timeout`.
    func reply(timeout: Duration) async throws -> Reply? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let reply = takeReply() { return reply }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += buffer[0..<count]
                continue
            }
            if count == 0 {
                throw TestFailure(
                    "closed before a whole answer (connected as \(ends), now \(Self.ends(of: fd))): "
                        + String(decoding: received, as: UTF8.self))
            }
            guard ContinuousClock.now < deadline else { return nil }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Whether the server closed the connection (read returns 0) within a few seconds.
    func closedByPeer() async -> Bool {
        await eventually(5) {
            var byte: UInt8 = 0
            return recv(fd, &byte, 1, 0) == 0
        }
    }

    private func takeReply() -> Reply? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard
            let end = (0...max(0, received.count - 4)).first(where: {
                Array(received[$0..<min($0 + 4, received.count)]) == separator
            })
        else { return nil }
        let head = String(decoding: received[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let parts = head[0].split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
        let headers = head.dropFirst().compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        let length = headers.first { $0.0 == "content-length" }.flatMap { Int($0.1) } ?? 0
        guard received.count >= end + 4 + length else { return nil }
        let body = Array(received[(end + 4)..<(end + 4 + length)])
        received.removeFirst(end + 4 + length)
        return Reply(status: status, headers: headers, text: String(decoding: body, as: UTF8.self))
    }
}
