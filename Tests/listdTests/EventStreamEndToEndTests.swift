import Foundation
import Glibc
import JSON
import ListdTestSupport
import Synchronization
import Testing

/// A raw loopback connection that reads a server-sent-event stream on its own
/// thread (so no test blocks Swift's cooperative pool) into a buffer.
final class EventStreamReader: Sendable {
    struct Event: Sendable, Equatable {
        var id: String
        var event: String
        var data: String
    }

    private struct State {
        var bytes: [UInt8] = []
        var closed = false
        var paused: Bool
    }

    private let fd: Int32
    private let state: Mutex<State>

    /// Connects and sends a GET for `target`; `receiveBuffer` shrinks the
    /// socket's buffer, and `paused` starts without reading (a slow reader).
    init(
        port: Int, target: String, method: String = "GET", body: String = "", headers: [String: String] = [:],
        receiveBuffer: Int32? = nil, paused: Bool = false
    ) throws {
        let fd = try Self.connect(port: port, receiveBuffer: receiveBuffer)
        self.fd = fd
        state = Mutex(State(paused: paused))
        var request = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        if !body.isEmpty { request += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
        request += "\r\n" + body
        let bytes = Array(request.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        Thread.detachNewThread { [self] in readLoop() }
    }

    deinit { Glibc.close(fd) }

    /// A socket connected to `port` on 127.0.0.1 (its receive buffer set to `receiveBuffer`, when given).
    static func connect(port: Int, receiveBuffer: Int32? = nil) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, 4) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            Glibc.close(fd)
            throw ServerFailure(description: "cannot connect: errno \(errno)")
        }
        return fd
    }

    private func readLoop() {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            if state.withLock({ $0.paused }) {
                usleep(5_000)
                continue
            }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 50) >= 0 else { break }
            if poller.revents == 0 { continue }
            let count = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            state.withLock { $0.bytes.append(contentsOf: buffer[0..<count]) }
        }
        state.withLock { $0.closed = true }
    }

    /// Starts reading (after `paused: true`).
    func resume() { state.withLock { $0.paused = false } }

    /// Closes the connection (the client goes away).
    func close() { shutdown(fd, Int32(SHUT_RDWR)) }

    var isClosed: Bool { state.withLock { $0.closed } }
    var text: String { String(decoding: state.withLock { $0.bytes }, as: UTF8.self) }

    /// The response head's status code.
    var status: Int? {
        let text = self.text
        guard text.hasPrefix("HTTP/1.1 "), text.count >= 12 else { return nil }
        return Int(text.dropFirst(9).prefix(3))
    }

    /// The body with the chunked framing removed.
    var body: String {
        let bytes = state.withLock { $0.bytes }
        guard let headEnd = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { return "" }
        var rest = bytes[headEnd.upperBound...]
        var body: [UInt8] = []
        while let lineEnd = rest.firstRange(of: Array("\r\n".utf8)) {
            guard let size = Int(String(decoding: rest[rest.startIndex..<lineEnd.lowerBound], as: UTF8.self), radix: 16)
            else { break }
            let start = lineEnd.upperBound
            guard size > 0, rest.distance(from: start, to: rest.endIndex) >= size + 2 else { break }
            body.append(contentsOf: rest[start..<rest.index(start, offsetBy: size)])
            rest = rest[rest.index(start, offsetBy: size + 2)...]
        }
        return String(decoding: body, as: UTF8.self)
    }

    /// The complete events received so far.
    var events: [Event] {
        body.components(separatedBy: "\n\n").compactMap { block -> Event? in
            var event = Event(id: "", event: "", data: "")
            for line in block.split(separator: "\n") {
                if line.hasPrefix("id: ") { event.id = String(line.dropFirst(4)) }
                if line.hasPrefix("event: ") { event.event = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { event.data = String(line.dropFirst(6)) }
            }
            return event.event.isEmpty ? nil : event
        }
    }

    /// Comment lines (heartbeats and notices) received so far.
    var comments: Int { body.components(separatedBy: "\n").filter { $0.hasPrefix(":") }.count }
}

/// Many raw loopback event streams read by one thread (`EventStreamReader`
/// spends a thread on each), each stream's bytes kept apart.
final class EventStreamBank: Sendable {
    private let fds: [Int32]
    private let received: Mutex<[[UInt8]]>
    private let stopped = Atomic<Bool>(false)

    /// Opens `targets.count` streams, each a GET of its target.
    init(port: Int, targets: [String]) throws {
        var fds: [Int32] = []
        for target in targets {
            let fd: Int32
            do {
                fd = try EventStreamReader.connect(port: port)
            } catch {
                for fd in fds { Glibc.close(fd) }
                throw error
            }
            let request = Array("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".utf8)
            _ = request.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            fds.append(fd)
        }
        self.fds = fds
        received = Mutex(Array(repeating: [], count: fds.count))
        Thread.detachNewThread { [self] in readLoop() }
    }

    deinit {
        for fd in fds { Glibc.close(fd) }
    }

    private func readLoop() {
        var polled = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        var open = Array(repeating: true, count: fds.count)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while !stopped.load(ordering: .relaxed) {
            guard poll(&polled, nfds_t(polled.count), 50) >= 0 else { return }
            for index in polled.indices where open[index] && polled[index].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { Glibc.recv(fds[index], $0.baseAddress, $0.count, 0) }
                guard count > 0 else {
                    open[index] = false
                    polled[index].fd = -1
                    continue
                }
                received.withLock { $0[index].append(contentsOf: buffer[0..<count]) }
            }
        }
    }

    /// Stops reading (before the bank goes).
    func stop() { stopped.store(true, ordering: .relaxed) }

    /// Each stream's events so far, as `event: ` names in order.
    var eventNames: [[String]] {
        received.withLock { $0 }.map { bytes in
            String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap { line in
                line.hasPrefix("event: ") ? String(line.dropFirst(7)).trimmingCharacters(in: .whitespaces) : nil
            }
        }
    }

    /// Whether every stream has sent its prelude (its `retry:` line).
    var allOpen: Bool { received.withLock { $0 }.allSatisfy { String(decoding: $0, as: UTF8.self).contains("retry:") } }
}

/// Server-sent events of the real binary: events per answer, resuming with
/// `Last-Event-ID`, many lists on one stream, heartbeats, shutdown, the
/// connection limit, a slow reader; and CORS.
@Suite(.serialized) struct EventStreamEndToEndTests {
    func makeList(_ server: ListdServer, _ id: String = "l", extraItems: Int = 0) async throws {
        let items = [["id": "a"], ["id": "b"]] + (0..<extraItems).map { ["id": "x\($0)"] }
        let reply = try await server.request(
            "POST", "/lists", body: ["id": id, "sections": [["id": "s", "items": items]]])
        #expect(reply.status == 201)
    }

    func patch(_ server: ListdServer, _ ops: [[String: Any]], list: String = "l") async throws {
        let reply = try await server.request("PATCH", "/lists/\(list)", body: ["ops": ops])
        #expect(reply.status == 200, "\(reply.text)")
    }

    @Test func eachWriteIsAnEventAndLastEventIDResumesWithoutAReset() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        try await makeList(server, extraItems: 10)
        let stream = try EventStreamReader(port: server.port, target: "/lists/l/events?since=1")
        #expect(await eventually { stream.body.contains("retry: 1000") })
        #expect(stream.text.contains("Content-Type: text/event-stream"))
        try await patch(server, [["op": "moveItem", "id": "b", "to": 0]])
        #expect(await eventually { stream.events.count == 1 })
        let first = try #require(stream.events.first)
        #expect(first.event == "change")
        let answer = try JSONValue(parsing: Array(first.data.utf8))
        #expect(answer["from"]?.intValue == 1 && answer["to"]?.intValue == 2)
        let epoch = try #require(answer["epoch"]?.stringValue)
        #expect(first.id == "l:\(epoch):2")
        stream.close()

        // Two writes while away; resuming names version 2, so the answer is 2 → 4, not a reset.
        try await patch(server, [["op": "updateItem", "id": "a", "model": ["n": 1]]])
        try await patch(server, [["op": "deleteItem", "id": "b"]])
        let resumed = try EventStreamReader(
            port: server.port, target: "/lists/l/events", headers: ["Last-Event-ID": first.id])
        #expect(await eventually { resumed.events.count == 1 })
        let next = try #require(resumed.events.first)
        #expect(next.event == "change" && next.id == "l:\(epoch):4")
        let resumedAnswer = try JSONValue(parsing: Array(next.data.utf8))
        #expect(resumedAnswer["from"]?.intValue == 2 && resumedAnswer["reset"] == nil)

        // A stale epoch resumes with a reset carrying the snapshot.
        let stale = try EventStreamReader(
            port: server.port, target: "/lists/l/events", headers: ["Last-Event-ID": "l:other-epoch:4"])
        #expect(await eventually { stale.events.first?.event == "reset" })
        #expect(stale.events.first?.data.contains("\"snapshot\"") == true)

        // Deleting the list is an event too.
        _ = try await server.request("DELETE", "/lists/l")
        #expect(await eventually { resumed.events.last?.event == "deleted" })
        #expect(resumed.events.last?.data == #"{"list":"l","deleted":true}"#)
    }

    @Test func maxChangesTurnsALargeChangeIntoAResetPerStream() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        try await makeList(server, extraItems: 10)
        let capped = try EventStreamReader(port: server.port, target: "/lists/l/events?since=now&maxChanges=1")
        let plain = try EventStreamReader(port: server.port, target: "/lists/l/events?since=now")
        let many = try EventStreamReader(port: server.port, target: "/events?lists=l:now&maxChanges=1")
        for stream in [capped, plain, many] { #expect(await eventually { stream.body.contains("retry:") }) }

        // One write changing 3 items: more than 1, so the capped streams get the snapshot.
        try await patch(
            server,
            [
                ["op": "updateItem", "id": "a", "model": ["n": 1]], ["op": "updateItem", "id": "b", "model": ["n": 1]],
                ["op": "updateItem", "id": "x0", "model": ["n": 1]],
            ])
        for stream in [capped, plain, many] { #expect(await eventually { stream.events.count == 1 }) }
        for stream in [capped, many] {
            let event = try #require(stream.events.first)
            #expect(event.event == "reset")
            let answer = try JSONValue(parsing: Array(event.data.utf8))
            #expect(answer["reset"]?.boolValue == true && answer["to"]?.intValue == 2)
            #expect(answer["snapshot"]?["sections"]?.arrayValue?.first?["items"]?.arrayValue?.count == 12)
        }
        let change = try #require(plain.events.first)
        #expect(change.event == "change")
        let changeAnswer = try JSONValue(parsing: Array(change.data.utf8))
        #expect(changeAnswer["reset"] == nil && changeAnswer["snapshot"] == nil)
        #expect((changeAnswer["stages"]?.arrayValue?.count ?? 0) > 0)

        // One item changed: within the limit, so a change; the capped stream goes on.
        try await patch(server, [["op": "updateItem", "id": "a", "model": ["n": 2]]])
        #expect(await eventually { capped.events.count == 2 })
        #expect(capped.events.last?.event == "change")
        let lastID = try #require(capped.events.last?.id)
        capped.close()

        // Resuming: Last-Event-ID gives the position, the query gives maxChanges, on each connection.
        try await patch(
            server,
            [["op": "updateItem", "id": "a", "model": ["n": 3]], ["op": "updateItem", "id": "b", "model": ["n": 3]]])
        let resumedCapped = try EventStreamReader(
            port: server.port, target: "/lists/l/events?maxChanges=1", headers: ["Last-Event-ID": lastID])
        let resumedPlain = try EventStreamReader(
            port: server.port, target: "/lists/l/events", headers: ["Last-Event-ID": lastID])
        #expect(await eventually { resumedCapped.events.count == 1 && resumedPlain.events.count == 1 })
        #expect(resumedCapped.events.first?.event == "reset")
        #expect(resumedCapped.events.first?.data.contains(#""from":3"#) == true)
        #expect(resumedPlain.events.first?.event == "change")

        for target in ["/lists/l/events?since=now&maxChanges=-1", "/events?lists=l:now&maxChanges=x"] {
            let bad = try await server.get(target)
            let value = target.split(separator: "=").last.map(String.init) ?? ""
            #expect(bad.status == 400, "\(target)")
            #expect(bad.header("Content-Type") == "application/problem+json", "\(target)")
            let detail = try bad.object()["detail"] as? String ?? ""
            #expect(detail.contains("maxChanges") && detail.contains("\"\(value)\""), "\(bad.text)")
        }
    }

    /// The hub answers a commit's streams in slices (so loops start sending
    /// early): with more streams than a slice, every stream still gets each
    /// write once, the capped ones (`maxChanges`) their own reset, in every slice.
    @Test func moreStreamsThanASliceEachGetEveryWriteOnce() async throws {
        let server = try await ListdServer(["--max-waits-per-caller", "0"])
        defer { server.stop() }
        try await makeList(server, extraItems: 2)
        // 600 streams: more than two of the hub's slices of 256, every third one capped.
        let targets = (0..<600).map {
            $0 % 3 == 0 ? "/lists/l/events?since=now&maxChanges=1" : "/lists/l/events?since=now"
        }
        let bank = try EventStreamBank(port: server.port, targets: targets)
        defer { bank.stop() }
        #expect(await eventually(30) { bank.allOpen })

        // Three items changed: more than 1, so the capped streams get a reset.
        try await patch(
            server,
            [
                ["op": "updateItem", "id": "a", "model": ["n": 1]], ["op": "updateItem", "id": "b", "model": ["n": 1]],
                ["op": "updateItem", "id": "x0", "model": ["n": 1]],
            ])
        #expect(await eventually(30) { bank.eventNames.allSatisfy { $0.count >= 1 } })
        // One item changed: a change for every stream.
        try await patch(server, [["op": "updateItem", "id": "a", "model": ["n": 2]]])
        #expect(await eventually(30) { bank.eventNames.allSatisfy { $0.count >= 2 } })
        let names = bank.eventNames
        for (index, events) in names.enumerated() {
            let expected = index % 3 == 0 ? ["reset", "change"] : ["change", "change"]
            #expect(events == expected, "stream \(index) (\(targets[index])) got \(events)")
        }
    }

    @Test func oneStreamFollowsManyLists() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        try await makeList(server, "a")
        try await makeList(server, "b")
        let stream = try EventStreamReader(port: server.port, target: "/events?lists=a:1,b:now")
        #expect(await eventually { stream.body.contains("retry:") })
        try await patch(server, [["op": "deleteItem", "id": "a"]], list: "b")
        try await patch(server, [["op": "deleteItem", "id": "b"]], list: "a")
        #expect(await eventually { stream.events.count == 2 })
        let lists = stream.events.compactMap { try? JSONValue(parsing: Array($0.data.utf8))["list"]?.stringValue }
        #expect(Set(lists) == ["a", "b"])
        let lastID = try #require(stream.events.last?.id)
        #expect(
            lastID.hasPrefix("a:") && lastID.hasSuffix(":2") && lastID.contains(",b:"),
            "the id names both lists: \(lastID)")

        let bad = try await server.get("/events?lists=a:1,a:2")
        #expect(bad.status == 400 && bad.text.contains("twice"))
        let missing = try await server.get("/events")
        #expect(missing.status == 400 && missing.text.contains("lists is required"))
        let head = try await server.request("HEAD", "/lists/a/events?since=now", timeout: 5)
        #expect(head.status == 200 && head.header("Content-Type") == "text/event-stream", "HEAD answers at once")
    }

    @Test func idleStreamsGetHeartbeats() async throws {
        let server = try await ListdServer(["--event-heartbeat", "200ms"])
        defer { server.stop() }
        try await makeList(server)
        let stream = try EventStreamReader(port: server.port, target: "/lists/l/events?since=now")
        let started = Date()
        // The prelude has one comment; heartbeats add one each.
        #expect(await eventually(5) { stream.comments >= 4 })
        let elapsed = Date().timeIntervalSince(started)
        // At least the three intervals; at most well under one default interval (15 s), with
        // room for a loaded run, where the reader's thread may wait seconds for a core.
        #expect(elapsed >= 0.35 && elapsed < 14, "three heartbeats at 200 ms took \(elapsed) s")
        #expect(stream.events.isEmpty)
    }

    @Test func shutdownEndsStreamsCleanly() async throws {
        let server = try await ListdServer()
        try await makeList(server)
        let streams = try (0..<3).map { _ in
            try EventStreamReader(port: server.port, target: "/lists/l/events?since=now")
        }
        for stream in streams { #expect(await eventually { stream.body.contains("retry:") }) }
        let started = Date()
        let status = server.stop()
        #expect(status == 0)
        #expect(Date().timeIntervalSince(started) < 5, "streams must not hold the drain until its deadline")
        for stream in streams {
            #expect(await eventually { stream.isClosed })
            #expect(stream.body.contains("shutting down"))
            #expect(stream.text.hasSuffix("0\r\n\r\n"), "the chunked body ends properly")
        }
    }

    @Test func streamsCountAgainstTheConnectionLimit() async throws {
        let server = try await ListdServer(["--max-connections", "2"])
        defer { server.stop() }
        // Made on a connection that closes, so that only the streams count.
        let create = try EventStreamReader(
            port: server.port, target: "/lists", method: "POST", body: #"{"id": "l"}"#, headers: ["Connection": "close"]
        )
        #expect(await eventually { create.isClosed })
        #expect(create.status == 201)
        // The server notices the closed connection a moment later: retry until admitted.
        func admittedStream() async throws -> EventStreamReader? {
            for _ in 0..<100 {
                let stream = try EventStreamReader(port: server.port, target: "/lists/l/events?since=now")
                _ = await eventually(2) { stream.status != nil }
                if stream.status == 200 { return stream }
                try await Task.sleep(for: .milliseconds(20))
            }
            return nil
        }
        let streams = [try await admittedStream(), try await admittedStream()].compactMap { $0 }
        #expect(streams.count == 2)
        let refused = try EventStreamReader(port: server.port, target: "/lists/l/events?since=now")
        #expect(await eventually { refused.status != nil })
        #expect(refused.status == 503)
        #expect(refused.text.contains("Retry-After: "))
        streams[0].close()
        let admitted = try await admittedStream() != nil
        #expect(admitted, "a closed stream frees its connection")
    }

    @Test func aSlowReaderGetsOneNetAnswerNotAQueue() async throws {
        let server = try await ListdServer(["--max-model-bytes", "400000"])
        defer { server.stop() }
        try await makeList(server)
        let slow = try EventStreamReader(
            port: server.port, target: "/lists/l/events?since=1", receiveBuffer: 4096, paused: true)
        // 40 writes of 300 KB models: far more than the socket buffers hold.
        let padding = String(repeating: "x", count: 300_000)
        for round in 0..<40 {
            try await patch(server, [["op": "updateItem", "id": "a", "model": ["n": round, "pad": padding]]])
        }
        let metrics = try await server.get("/metrics").text
        let coalesced = metrics.split(separator: "\n").first { $0.hasPrefix("listd_event_stream_coalesced_total ") }
        #expect((coalesced.flatMap { Double($0.split(separator: " ")[1]) } ?? 0) > 0, "\(coalesced ?? "no metric")")
        slow.resume()
        #expect(await eventually { slow.events.last?.id.hasSuffix(":41") == true })
        let events = slow.events
        #expect(events.count < 40, "\(events.count) events for 40 writes: the stalled ones were coalesced")
        // Replaying the events gives the last write: nothing lost, nothing twice.
        var version = 1
        for event in events {
            let answer = try JSONValue(parsing: Array(event.data.utf8), limits: JSONLimits(maxBytes: 1 << 20))
            #expect(answer["from"]?.intValue == version, "events chain from version to version")
            version = answer["to"]?.intValue ?? -1
        }
        #expect(events.last?.data.contains(#""n":39"#) == true)
    }

    @Test func corsHeadersOnlyWithTheFlag() async throws {
        let plain = try await ListdServer()
        let reply = try await plain.get("/healthz", headers: ["Origin": "http://app.test"])
        #expect(reply.header("Access-Control-Allow-Origin") == nil)
        let options = try await plain.request("OPTIONS", "/lists", headers: ["Origin": "http://app.test"])
        #expect(options.status == 405)
        plain.stop()

        let server = try await ListdServer(
            ["--cors-origin", "http://app.test"], environment: ["LISTD_WRITE_TOKEN": "w-token"])
        defer { server.stop() }
        let preflight = try await server.request(
            "OPTIONS", "/lists/l",
            headers: [
                "Origin": "http://app.test", "Access-Control-Request-Method": "PATCH",
                "Access-Control-Request-Headers": "authorization, if-match",
            ])
        #expect(preflight.status == 204, "a preflight needs no token")
        #expect(preflight.header("Access-Control-Allow-Origin") == "http://app.test")
        for name in [
            "Authorization", "If-Match", "If-None-Match", "Last-Event-ID", "Content-Type", "Idempotency-Key",
        ] {
            #expect(preflight.header("Access-Control-Allow-Headers")?.contains(name) == true, "\(name)")
        }
        #expect(preflight.header("Access-Control-Allow-Methods")?.contains("PATCH") == true)
        let answer = try await server.get(
            "/lists", headers: ["Origin": "http://app.test", "Authorization": "Bearer w-token"])
        #expect(answer.header("Access-Control-Allow-Origin") == "http://app.test")
        #expect(
            answer.header("Access-Control-Expose-Headers")
                == "ETag, Idempotent-Replayed, Location, Retry-After, listd-query-plan")
        let refused = try await server.request("OPTIONS", "/lists", headers: ["Origin": "http://evil.test"])
        #expect(refused.status == 403 && refused.text.contains("evil.test"))
        let other = try await server.get("/healthz", headers: ["Origin": "http://evil.test"])
        #expect(other.header("Access-Control-Allow-Origin") == nil)
        // Tokens are never taken from a URL.
        let inURL = try await server.get("/lists?access_token=w-token&token=w-token")
        #expect(inURL.status == 401)
    }

    @Test func theInspectorIsServedFromTheBinary() async throws {
        let server = try await ListdServer(environment: ["LISTD_WRITE_TOKEN": "w-token"])
        defer { server.stop() }
        let page = try await server.get("/ui/")
        #expect(page.status == 200, "the page itself needs no token")
        #expect(page.header("Content-Type")?.hasPrefix("text/html") == true)
        #expect(page.text.contains("inspector.js"))
        let script = try await server.get("/ui/listd.js")
        #expect(script.header("Content-Type")?.hasPrefix("text/javascript") == true)
        #expect(script.text.contains("export class ListdClient"))
        #expect(try await server.get("/ui/nothing.js").status == 404)
        #expect(try await server.get("/lists").status == 401, "the data still needs a token")
    }
}
