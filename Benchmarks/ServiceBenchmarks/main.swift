// ServiceBenchmarks: issue 6's service-level figures, measured against a
// listd that is already running on loopback (this tool starts nothing).
//
//   ServiceBenchmarks parked PORT PID [COUNT]      COUNT parked long-polls, one write: answer time, RSS per waiter
//   ServiceBenchmarks snapshot PORT FILE [ITEMS]   create an ITEMS-item list, save its snapshot bytes to FILE,
//                                                  print the path to give wrk
//   ServiceBenchmarks behind PORT [WRITES]         WRITES single-op writes, then time changes?since=<first>
//   ServiceBenchmarks streams PORT PID [COUNT]     COUNT server-sent-event streams on one list, one write:
//                                                  time to each stream's event, RSS per stream
//   ServiceBenchmarks followers PORT PID [COUNT]   parked, then streams, in one run against one listd
//   ServiceBenchmarks cluster PORT_A PORT_B [COUNT] two instances on one PostgreSQL: COUNT long-polls spread
//                                                  over both, one write on A: time until all are answered
//   ServiceBenchmarks crosswake PORT_A PORT_B [SECONDS] 100 writes/s on A, one follower long-polling B:
//                                                  write sent -> follower answered, p50/p99
//   ServiceBenchmarks views PORT LIST VIEWS SECONDS [QUERY]  VIEWS long-poll followers, one per view
//                                                  (QUERY with {k}: default where=owner:u{k}&order=rank)
//   ServiceBenchmarks nchan-parked PORT PID [COUNT] `parked` against nginx + nchan (nchan.conf; PID: nginx's master)
//   ServiceBenchmarks nchan-sse PORT PID [COUNT]    `streams` against nginx + nchan (EventSource subscribers)
//   ServiceBenchmarks floor-server PORT             the least a long-poll server can do (Floor.swift), until killed
//   ServiceBenchmarks floor-parked PORT PID [COUNT] `parked` against floor-server: the fan-out's floor here
//   ServiceBenchmarks floor-sse PORT PID [COUNT]    `streams` against floor-server
//
// See README.md for the exact commands, including listd's, nginx's and wrk's;
// fanout.sh runs listd and nginx + nchan side by side.
import CSystem
import Foundation
import Glibc
import Synchronization

// MARK: parked

/// Many non-blocking sockets behind one epoll, read as they become readable.
struct Readiness {
    let epoll: Int32

    init(fds: [Int32]) {
        epoll = epoll_create1(0)
        for (index, fd) in fds.enumerated() { add(fd, index: index) }
    }

    /// Watches one more (non-blocking from now on) socket, known in `read` as `index`.
    func add(_ fd: Int32, index: Int) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = UInt64(index)
        if epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) != 0 { fail("epoll_ctl: errno \(errno)") }
    }

    /// Hands each read (connection index, bytes) to `received` until `done()` or
    /// `timeout` seconds pass; a connection the peer closed leaves the epoll.
    func read(
        _ fds: [Int32], bufferSize: Int, timeout: Double, until done: () -> Bool,
        _ received: (Int, UnsafeRawBufferPointer) -> Void
    ) {
        let start = monotonicSeconds()
        let events = UnsafeMutableBufferPointer<epoll_event>.allocate(capacity: 1024)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 16)
        defer {
            events.deallocate()
            buffer.deallocate()
        }
        while !done(), monotonicSeconds() - start < timeout {
            let count = epoll_wait(epoll, events.baseAddress, Int32(events.count), 100)
            guard count > 0 else { continue }
            for event in events[0..<Int(count)] {
                let index = Int(event.data.u64)
                let read = recv(fds[index], buffer.baseAddress, buffer.count, 0)
                guard read > 0 else {
                    if read == 0 { epoll_ctl(epoll, EPOLL_CTL_DEL, fds[index], nil) }
                    continue
                }
                received(index, UnsafeRawBufferPointer(rebasing: buffer[0..<read]))
            }
        }
    }
}

/// Reads many connections' answers as they become readable (level-triggered
/// epoll, one recv per event), so the client is not what the figure measures.
struct AnswerCollector {
    struct Pending {
        var bytes: [UInt8] = []
        var done = false
        var end = 0
    }

    let readiness: Readiness
    var pending: [Pending]
    var completedAt: [Double]

    init(fds: [Int32]) {
        readiness = Readiness(fds: fds)
        pending = Array(repeating: Pending(), count: fds.count)
        completedAt = Array(repeating: 0, count: fds.count)
    }

    /// Reads until every connection has one whole response or `timeout` seconds pass.
    mutating func collect(fds: [Int32], timeout: Double) -> Int {
        var complete = 0
        let readiness = self.readiness
        readiness.read(fds, bufferSize: 1 << 20, timeout: timeout, until: { complete == fds.count }) { index, chunk in
            guard !pending[index].done else { return }
            // The usual case: the whole answer in one read, nothing kept.
            let end: Int?
            if pending[index].bytes.isEmpty, let whole = responseEnd(chunk) {
                end = whole
                pending[index].bytes = Array(chunk)
            } else {
                pending[index].bytes += chunk
                end = pending[index].bytes.withUnsafeBytes(responseEnd)
            }
            if let end {
                pending[index].done = true
                pending[index].end = end
                completedAt[index] = monotonicSeconds()
                complete += 1
            }
        }
        return complete
    }

    /// The body of connection `index`'s answer (after `collect`).
    func body(_ index: Int) -> HTTPReply { HTTPReply(bytes: pending[index].bytes, end: pending[index].end) }
}

func parked(port: Int, pid: Int, count: Int) {
    let limit = requireDescriptors(for: count)
    let control = HTTPConnection(port: port)
    let list = createList(control, json: #"{"name":"parked bench","sections":[{"id":"s","model":{},"items":[]}]}"#)
    let writer = HTTPConnection(port: port)
    let path = "/lists/\(list.id)/changes?since=\(list.version)&timeout=300"
    // A few rounds first, so the server's tables and the hub's answer path exist.
    for round in 0..<3 {
        let warm = HTTPConnection(port: port)
        warm.send("GET", path)
        usleep(20_000)
        let write = writer.request(
            "PATCH", "/lists/\(list.id)",
            body: #"{"ops":[{"op":"insertItem","section":"s","item":{"id":"warm\#(round)","model":{}}}]}"#)
        guard write.status == 200 else { fail("warm-up PATCH answered \(write.status): \(write.text.prefix(300))") }
        _ = warm.receive()
    }
    let since = list.version + 3
    let parkedPath = "/lists/\(list.id)/changes?since=\(since)&timeout=300"
    let startWaiters = metric(control, "listd_parked_waiters")
    usleep(200_000)
    let rssBefore = residentKiB(pid: pid)

    let waiters = openConnections(
        port: port, count: count,
        request: "GET \(parkedPath) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n")
    let parkedNow = waitForGauge(Double(count), timeout: 60) {
        metric(control, "listd_parked_waiters") - startWaiters
    }
    usleep(500_000)
    let rssAfter = residentKiB(pid: pid)
    let load = loadAverage()

    let (collector, timing, answered) = timedLongPollWrite(
        waiters: waiters, writer: writer, "PATCH", "/lists/\(list.id)",
        body: #"{"ops":[{"op":"insertItem","section":"s","item":{"id":"wake","model":{"n":1}}}]}"#)
    let write = collector.body(count)
    guard write.status == 200 else { fail("PATCH answered \(write.status): \(write.text.prefix(300))") }
    var correct = 0
    var sample = ""
    for index in 0..<count where collector.pending[index].done {
        let reply = collector.body(index)
        if reply.status == 200, (reply.json["to"] as? Int) == since + 1 { correct += 1 }
        if index == 0 { sample = reply.text.trimmingCharacters(in: .whitespacesAndNewlines) }
    }
    let perWaiter = Double(rssAfter - rssBefore) * 1024 / Double(count)
    print("== parked: \(count) long-polls on one list, then one PATCH (load average: \(load))")
    print("descriptor limit (this process): \(limit)")
    print("parked waiters (listd_parked_waiters): \(Int(parkedNow)) of \(count)")
    print("listd VmRSS before: \(rssBefore) KiB, with \(count) parked: \(rssAfter) KiB")
    print("RSS growth per parked waiter: \(Int(perWaiter)) bytes (\(String(format: "%.2f", perWaiter / 1024)) KiB)")
    print("answers received: \(answered) of \(count), correct (200, to=\(since + 1)): \(correct)")
    print("sample answer (\(collector.body(0).body.count) bytes): \(sample.prefix(200))")
    timing.report(write: "PATCH", count: count, noun: "answers")
}

// MARK: streams

/// Reads many event streams as they become readable, marking the moment
/// each one's bytes first contain a pattern.
///
/// Searched with `memmem` in the bytes just read (and kept only when a read
/// ends without the pattern), so the client stays cheap: it shares the two
/// cores with the listd it measures.
struct StreamCollector {
    let readiness: Readiness
    /// Bytes of a stream whose pattern has not shown up yet (usually empty).
    var partial: [[UInt8]]
    var seenAt: [Double]
    /// Whether the bytes that held the pattern also held `expected`.
    var matched: [Bool]
    /// The connection read beside the streams as one HTTP response (the write's), if any.
    private var answerIndex: Int?
    private var answerBytes: [UInt8] = []
    private var answerEnd = 0
    /// When that response was whole (0 until then).
    private(set) var answeredAt = 0.0

    init(fds: [Int32]) {
        readiness = Readiness(fds: fds)
        partial = Array(repeating: [], count: fds.count)
        seenAt = Array(repeating: 0, count: fds.count)
        matched = Array(repeating: false, count: fds.count)
    }

    /// From now on `collect` also reads `fd`'s next HTTP response (the write's):
    /// give it as the last of `collect`'s `fds`.
    mutating func watchAnswer(_ fd: Int32) {
        answerIndex = partial.count
        readiness.add(fd, index: partial.count)
        answerBytes = []
        answeredAt = 0
    }

    /// The watched connection's response, once whole.
    var answer: HTTPReply? { answeredAt > 0 ? HTTPReply(bytes: answerBytes, end: answerEnd) : nil }

    /// Whether `needle` occurs in `haystack` (memchr for its first byte, then memcmp).
    private static func contains(_ haystack: UnsafeRawBufferPointer, _ needle: [UInt8]) -> Bool {
        guard let first = needle.first else { return true }
        guard let base = haystack.baseAddress, haystack.count >= needle.count else { return false }
        return needle.withUnsafeBytes { pattern -> Bool in
            guard let patternBase = pattern.baseAddress else { return false }
            var offset = 0
            while offset + needle.count <= haystack.count {
                guard let hit = memchr(base + offset, Int32(first), haystack.count - needle.count + 1 - offset) else {
                    return false
                }
                let position = base.distance(to: UnsafeRawPointer(hit))
                if memcmp(base + position, patternBase, needle.count) == 0 { return true }
                offset = position + 1
            }
            return false
        }
    }

    /// Reads until every stream's bytes hold `pattern` (and the watched
    /// answer, if any, is whole) or `timeout` passes; returns how many streams do.
    mutating func collect(fds: [Int32], until pattern: [UInt8], expected: [UInt8] = [], timeout: Double) -> Int {
        var seen = 0
        var found = [Bool](repeating: false, count: fds.count)
        for index in partial.indices {
            partial[index] = []
            seenAt[index] = 0
            matched[index] = false
        }
        let readiness = self.readiness
        let answerIndex = self.answerIndex
        let streamCount = answerIndex == nil ? fds.count : fds.count - 1
        var answered = answerIndex == nil
        readiness.read(fds, bufferSize: 1 << 16, timeout: timeout, until: { seen == streamCount && answered }) {
            index, chunk in
            if index == answerIndex {
                answerBytes += chunk
                if !answered, let end = answerBytes.withUnsafeBytes(responseEnd) {
                    answerEnd = end
                    answeredAt = monotonicSeconds()
                    answered = true
                }
                return
            }
            guard !found[index] else { return }
            var hit = Self.contains(chunk, pattern)
            var good = hit && Self.contains(chunk, expected)
            if !hit {
                // The pattern may span reads: keep the bytes and look at all of them.
                partial[index] += chunk
                hit = partial[index].withUnsafeBytes { Self.contains($0, pattern) }
                good = hit && partial[index].withUnsafeBytes { Self.contains($0, expected) }
            }
            if hit {
                found[index] = true
                seenAt[index] = monotonicSeconds()
                matched[index] = good
                partial[index] = []
                seen += 1
            }
        }
        return seen
    }
}

func streams(port: Int, pid: Int, count: Int) {
    let limit = requireDescriptors(for: count)
    let control = HTTPConnection(port: port)
    let list = createList(control, json: #"{"name":"streams bench","sections":[{"id":"s","model":{},"items":[]}]}"#)
    let writer = HTTPConnection(port: port)
    // Warm-up: one stream, one write, so the hub's paths exist.
    let warm = HTTPConnection(port: port)
    warm.sendRaw(
        "GET /lists/\(list.id)/events?since=\(list.version) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"
    )
    var warmCollector = StreamCollector(fds: [warm.fd])
    _ = warmCollector.collect(fds: [warm.fd], until: Array("listd event stream".utf8), timeout: 10)
    let warmWrite = writer.request(
        "PATCH", "/lists/\(list.id)",
        body: #"{"ops":[{"op":"insertItem","section":"s","item":{"id":"warm","model":{}}}]}"#)
    guard warmWrite.status == 200, let since = warmWrite.json["to"] as? Int else {
        fail("warm-up PATCH answered \(warmWrite.status)")
    }
    guard warmCollector.collect(fds: [warm.fd], until: Array("event: change".utf8), timeout: 10) == 1 else {
        fail("the warm-up stream got no event")
    }
    let baseStreams = metric(control, "listd_event_streams")
    usleep(200_000)
    let rssBefore = residentKiB(pid: pid)

    let connections = openConnections(
        port: port, count: count,
        request:
            "GET /lists/\(list.id)/events?since=\(since) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"
    )
    var collector = StreamCollector(fds: connections.map(\.fd))
    let opened = collector.collect(fds: connections.map(\.fd), until: Array("listd event stream".utf8), timeout: 120)
    guard opened == count else { fail("only \(opened) of \(count) streams opened") }
    let open = waitForGauge(Double(count), timeout: 30) { metric(control, "listd_event_streams") - baseStreams }
    usleep(500_000)
    let rssAfter = residentKiB(pid: pid)
    let load = loadAverage()
    let (timing, write, seen) = timedStreamWrite(
        &collector, streams: connections, writer: writer, "PATCH", "/lists/\(list.id)",
        body: #"{"ops":[{"op":"insertItem","section":"s","item":{"id":"wake","model":{"n":1}}}]}"#,
        until: Array("event: change".utf8), expected: Array(":\(since + 1)\nevent: change".utf8))
    guard write.status == 200 else { fail("PATCH answered \(write.status): \(write.text.prefix(300))") }
    let correct = collector.matched[0..<count].filter { $0 }.count
    let perStream = Double(rssAfter - rssBefore) * 1024 / Double(count)
    print("== streams: \(count) server-sent-event streams on one list, then one PATCH (load average: \(load))")
    print("descriptor limit (this process): \(limit)")
    print("open streams (listd_event_streams): \(Int(open)) of \(count)")
    print("listd VmRSS before: \(rssBefore) KiB, with \(count) streams: \(rssAfter) KiB")
    print("RSS growth per stream: \(Int(perStream)) bytes (\(String(format: "%.2f", perStream / 1024)) KiB)")
    print("events received: \(seen) of \(count), correct (id ends :\(since + 1)): \(correct)")
    reportStreamLatencies(write: "PATCH", start: timing.start, seenAt: collector.seenAt[0..<count], count: count)
    timing.report(write: "PATCH", count: count, noun: "events")
}

// MARK: cluster

/// `count` long-polls spread evenly over two listd instances sharing one
/// PostgreSQL database, then one PATCH on the first: the time until every
/// follower on either instance has its answer (B's come through NOTIFY).
func cluster(portA: Int, portB: Int, count: Int) {
    _ = requireDescriptors(for: count)
    let controlA = HTTPConnection(port: portA)
    let controlB = HTTPConnection(port: portB)
    let list = createList(controlA, json: #"{"name":"cluster bench","sections":[{"id":"s","model":{},"items":[]}]}"#)
    let writer = HTTPConnection(port: portA)
    // Warm both instances' answer paths (a waiter on B woken by a write on A).
    for round in 0..<3 {
        let warm = HTTPConnection(port: portB)
        warm.send("GET", "/lists/\(list.id)/changes?since=\(list.version + round)&timeout=300")
        usleep(50_000)
        let write = writer.request(
            "PATCH", "/lists/\(list.id)",
            body: #"{"ops":[{"op":"insertItem","section":"s","item":{"id":"warm\#(round)","model":{}}}]}"#)
        guard write.status == 200 else { fail("warm-up PATCH answered \(write.status): \(write.text.prefix(300))") }
        _ = warm.receive()
    }
    let since = list.version + 3
    let parkedPath = "/lists/\(list.id)/changes?since=\(since)&timeout=300"
    let startA = metric(controlA, "listd_parked_waiters")
    let startB = metric(controlB, "listd_parked_waiters")
    var waiters: [HTTPConnection] = []
    waiters.reserveCapacity(count)
    for index in 0..<count {
        let waiter = HTTPConnection(port: index % 2 == 0 ? portA : portB)
        waiter.send("GET", parkedPath)
        waiters.append(waiter)
    }
    let waitStart = monotonicSeconds()
    var parked = 0.0
    while parked < Double(count), monotonicSeconds() - waitStart < 60 {
        usleep(50_000)
        parked = metric(controlA, "listd_parked_waiters") - startA + metric(controlB, "listd_parked_waiters") - startB
    }
    usleep(500_000)
    let load = loadAverage()
    var fds = waiters.map(\.fd)
    fds.append(writer.fd)
    var collector = AnswerCollector(fds: fds)
    let start = monotonicSeconds()
    writer.send(
        "PATCH", "/lists/\(list.id)",
        body: #"{"ops":[{"op":"insertItem","section":"s","item":{"id":"wake","model":{"n":1}}}]}"#)
    let answered = collector.collect(fds: fds, timeout: 60)
    let writeAnswered = collector.completedAt[count]
    guard collector.body(count).status == 200 else { fail("PATCH answered \(collector.body(count).status)") }
    var correct = 0
    for index in 0..<count where collector.pending[index].done {
        let reply = collector.body(index)
        if reply.status == 200, (reply.json["to"] as? Int) == since + 1 { correct += 1 }
    }
    let onA = stride(from: 0, to: count, by: 2).map { collector.completedAt[$0] }.max() ?? 0
    let onB = stride(from: 1, to: count, by: 2).map { collector.completedAt[$0] }.max() ?? 0
    func ms(_ seconds: Double) -> String { String(format: "%.1f", max(0, seconds) * 1000) }
    print(
        "== cluster: \(count) long-polls over 2 instances (\(portA), \(portB)), one PATCH on \(portA) (load average: \(load))"
    )
    print("parked waiters (listd_parked_waiters, both): \(Int(parked)) of \(count)")
    print("answers received: \(answered - 1) of \(count), correct (200, to=\(since + 1)): \(correct)")
    print("PATCH sent -> PATCH answered: \(ms(writeAnswered - start)) ms")
    print("PATCH sent -> all \(count / 2 + count % 2) answers on A: \(ms(onA - start)) ms")
    print("PATCH sent -> all \(count / 2) answers on B (woken by NOTIFY): \(ms(onB - start)) ms")
    print("PATCH sent -> all \(count) answers: \(ms(max(onA, onB) - start)) ms")
}

/// 100 single-op writes per second on instance A for `seconds`, and one
/// follower long-polling instance B: for every version, the time from its
/// PATCH being sent to the follower's answer that includes it.
func crosswake(portA: Int, portB: Int, seconds: Double) {
    let control = HTTPConnection(port: portA)
    let list = createList(control, json: #"{"name":"crosswake bench","sections":[{"id":"s","model":{},"items":[]}]}"#)
    let sent = Mutex<[Int: Double]>([:])
    let received = Mutex<[Int: Double]>([:])
    let done = Atomic<Bool>(false)
    let follower = Thread {
        let connection = HTTPConnection(port: portB)
        var since = list.version
        while !done.load(ordering: .acquiring) {
            connection.send("GET", "/lists/\(list.id)/changes?since=\(since)&timeout=2")
            let reply = connection.receive()
            let now = monotonicSeconds()
            guard reply.status == 200, let to = reply.json["to"] as? Int else { fail("follower: \(reply.status)") }
            if to > since {
                received.withLock { for version in (since + 1)...to { $0[version] = now } }
                since = to
            }
        }
    }
    follower.start()
    usleep(300_000)
    let load = loadAverage()
    let writer = HTTPConnection(port: portA)
    let start = monotonicSeconds()
    var count = 0
    while monotonicSeconds() - start < seconds {
        let due = start + Double(count) * 0.01
        let wait = due - monotonicSeconds()
        if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
        let at = monotonicSeconds()
        let reply = writer.request(
            "PATCH", "/lists/\(list.id)",
            body: #"{"ops":[{"op":"insertItem","section":"s","item":{"id":"w\#(count)","model":{}}}]}"#)
        guard reply.status == 200, let version = reply.json["to"] as? Int else { fail("PATCH: \(reply.status)") }
        sent.withLock { $0[version] = at }
        count += 1
    }
    let last = sent.withLock { $0.keys.max() ?? 0 }
    let deadline = monotonicSeconds() + 10
    while received.withLock({ $0[last] == nil }), monotonicSeconds() < deadline { usleep(10_000) }
    done.store(true, ordering: .releasing)
    let sentTimes = sent.withLock { $0 }
    let receivedTimes = received.withLock { $0 }
    var latencies = sentTimes.compactMap { version, at in receivedTimes[version].map { ($0 - at) * 1000 } }.sorted()
    let missing = sentTimes.count - latencies.count
    if latencies.isEmpty { latencies = [0] }
    func percentile(_ p: Double) -> String {
        String(format: "%.1f", latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))])
    }
    let elapsed = monotonicSeconds() - start
    print("== crosswake: writes on \(portA), one follower on \(portB) (load average: \(load))")
    print(
        "writes: \(sentTimes.count) in \(String(format: "%.1f", elapsed)) s (\(String(format: "%.0f", Double(sentTimes.count) / min(elapsed, seconds))) /s); follower missed \(missing)"
    )
    print(
        "write sent -> follower on the other instance answered: p50 \(percentile(0.5)) ms, p99 \(percentile(0.99)) ms, max \(percentile(1))"
    )
}

// MARK: snapshot

func snapshot(port: Int, file: String, items: Int) {
    let connection = HTTPConnection(port: port)
    let sectionCount = 10
    var sections: [String] = []
    for section in 0..<sectionCount {
        var entries: [String] = []
        for item in stride(from: section, to: items, by: sectionCount) {
            entries.append(
                #"{"id":"item\#(item)","model":{"title":"Item number \#(item)","qty":\#(item % 7),"done":\#(item % 3 == 0)}}"#
            )
        }
        sections.append(
            #"{"id":"section\#(section)","model":{"title":"Section \#(section)"},"items":[\#(entries.joined(separator: ","))]}"#
        )
    }
    let list = createList(
        connection, json: #"{"name":"snapshot bench","sections":[\#(sections.joined(separator: ","))]}"#)
    let reply = connection.request("GET", "/lists/\(list.id)")
    guard reply.status == 200 else { fail("GET /lists/\(list.id) answered \(reply.status)") }
    let counted = (reply.json["sections"] as? [[String: Any]])?.reduce(0) { $0 + (($1["items"] as? [Any])?.count ?? 0) }
    guard counted == items else { fail("the snapshot has \(counted ?? -1) items, expected \(items)") }
    guard FileManager.default.createFile(atPath: file, contents: Data(reply.body)) else { fail("cannot write \(file)") }
    FileHandle.standardError.write(
        Data("snapshot of \(items) items: \(reply.body.count) bytes, saved to \(file)\n".utf8))
    print("/lists/\(list.id)")
}

// MARK: behind

func behind(port: Int, writes: Int) {
    let connection = HTTPConnection(port: port)
    // 1,000 items, of which the writes touch 50: the net change stays much
    // smaller than the snapshot, so the answer is stages, not a reset (listd
    // answers with the snapshot when the stages would be larger).
    let itemCount = 1_000
    let touched = 50
    let items = (0..<itemCount).map { #"{"id":"i\#($0)","model":{"n":0}}"# }.joined(separator: ",")
    let list = createList(
        connection,
        json:
            #"{"name":"behind bench","sections":[{"id":"a","model":{},"items":[\#(items)]},{"id":"b","model":{},"items":[]}]}"#
    )
    // The version a list is created at is not one the store can rebuild
    // later (asking changes?since=<creation version> gets a reset), so the
    // client's version is the one after a first write.
    let warm = connection.request(
        "PATCH", "/lists/\(list.id)", body: #"{"ops":[{"op":"updateSection","id":"a","model":{"t":1}}]}"#)
    guard warm.status == 200, let first = warm.json["to"] as? Int else {
        fail("first PATCH answered \(warm.status): \(warm.text.prefix(300))")
    }
    let writeStart = monotonicSeconds()
    var extra = 0
    var version = first
    var write = 0
    // Until the list is exactly `writes` versions past `first` (a write that
    // changes nothing, such as a move to where the item is, does not count).
    while version < first + writes {
        // Mostly updates, some moves across sections, some inserts and later deletes:
        // the net answer collapses them.
        let op: String
        switch write % 10 {
        case 3:
            op = #"{"op":"moveItem","id":"i\#(write % touched)","section":"\#(write % 20 < 10 ? "b" : "a")","to":0}"#
        case 7:
            op = #"{"op":"insertItem","section":"b","item":{"id":"x\#(extra)","model":{"w":\#(write)}}}"#
            extra += 1
        case 9 where extra > 1:
            op = #"{"op":"deleteItem","id":"x\#(extra - 2)"}"#
        default:
            op = #"{"op":"updateItem","id":"i\#(write % touched)","model":{"n":\#(write)}}"#
        }
        let reply = connection.request("PATCH", "/lists/\(list.id)", body: #"{"ops":[\#(op)]}"#)
        guard reply.status == 200, let next = reply.json["to"] as? Int else {
            fail("write \(write) (\(op)) answered \(reply.status): \(reply.text.prefix(300))")
        }
        version = next
        write += 1
        if write % 2000 == 0 {
            FileHandle.standardError.write(Data("\(write) writes...\n".utf8))
        }
    }
    let writeSeconds = monotonicSeconds() - writeStart
    let latest = connection.request("GET", "/lists/\(list.id)").json["version"] as? Int ?? -1

    let reader = HTTPConnection(port: port)
    let path = "/lists/\(list.id)/changes?since=\(first)"
    var timings: [Double] = []
    var replies: [HTTPReply] = []
    // The first answer is computed from the history; the next ones find it shared or cached.
    for _ in 0..<3 {
        let start = monotonicSeconds()
        let reply = reader.request("GET", path)
        timings.append((monotonicSeconds() - start) * 1000)
        replies.append(reply)
    }
    let load = loadAverage()
    guard replies[0].status == 200 else {
        fail("GET \(path) answered \(replies[0].status): \(replies[0].text.prefix(300))")
    }
    let answer = replies[0].json
    let stages = (answer["stages"] as? [Any])?.count ?? -1
    print("== behind: a client \(writes) versions behind (load average: \(load))")
    print(
        "\(write) single-op PATCHes in \(String(format: "%.1f", writeSeconds)) s; versions \(first) -> \(latest)")
    print(
        "answer: status \(replies[0].status), from \(answer["from"] ?? "?") to \(answer["to"] ?? "?"), "
            + "reset: \(answer["reset"] as? Bool ?? false), \(stages) stages, \(replies[0].body.count) bytes")
    print("GET \(path): first (computed) \(String(format: "%.2f", timings[0])) ms")
    print(
        "same again (shared/cached): \(String(format: "%.2f", timings[1])) ms, \(String(format: "%.2f", timings[2])) ms"
    )
    if replies[1].body != replies[0].body { print("warning: the second answer differs from the first") }
}

// MARK: main

let arguments = Array(CommandLine.arguments.dropFirst())
let usage = """
    usage: ServiceBenchmarks parked PORT PID [COUNT]
           ServiceBenchmarks views PORT LIST VIEWS SECONDS [QUERY]
           ServiceBenchmarks snapshot PORT FILE [ITEMS]
           ServiceBenchmarks behind PORT [WRITES]
           ServiceBenchmarks streams PORT PID [COUNT]
           ServiceBenchmarks followers PORT PID [COUNT]
           ServiceBenchmarks cluster PORT_A PORT_B [COUNT]
           ServiceBenchmarks crosswake PORT_A PORT_B [SECONDS]
           ServiceBenchmarks nchan-parked PORT PID [COUNT]
           ServiceBenchmarks nchan-sse PORT PID [COUNT]
           ServiceBenchmarks floor-server PORT
           ServiceBenchmarks floor-parked PORT PID [COUNT]
           ServiceBenchmarks floor-sse PORT PID [COUNT]
           ServiceBenchmarks engine PORT PID ITEMS LIST-ID [BEHIND-WRITES]
           ServiceBenchmarks make PORT ITEMS LIST-ID [query]
           ServiceBenchmarks query PORT ITEMS LIST-ID
           ServiceBenchmarks catchup PORT LIST-ID CLIENTS SECONDS [MIN-BEHIND MAX-BEHIND]
           ServiceBenchmarks sse-hold PORT LIST-ID COUNT SECONDS
           ServiceBenchmarks unauth-flood PORT PID COUNT MIB SECONDS
    """
func argument(_ index: Int) -> Int? { arguments.count > index ? Int(arguments[index]) : nil }
switch arguments.first {
case "parked":
    guard let port = argument(1), let pid = argument(2) else { fail(usage) }
    parked(port: port, pid: pid, count: argument(3) ?? 10_000)
case "streams":
    guard let port = argument(1), let pid = argument(2) else { fail(usage) }
    streams(port: port, pid: pid, count: argument(3) ?? 10_000)
case "followers":
    // The long-poll figure and the event-stream figure from one run, side by side.
    guard let port = argument(1), let pid = argument(2) else { fail(usage) }
    parked(port: port, pid: pid, count: argument(3) ?? 10_000)
    usleep(1_000_000)
    streams(port: port, pid: pid, count: argument(3) ?? 10_000)
case "nchan-parked":
    guard let port = argument(1), let pid = argument(2) else { fail(usage) }
    nchanParked(port: port, pid: pid, count: argument(3) ?? 10_000)
case "nchan-sse":
    guard let port = argument(1), let pid = argument(2) else { fail(usage) }
    nchanStreams(port: port, pid: pid, count: argument(3) ?? 10_000)
case "floor-server":
    guard let port = argument(1) else { fail(usage) }
    floorServer(port: port)
case "floor-parked":
    guard let port = argument(1), argument(2) != nil else { fail(usage) }
    floorParked(port: port, count: argument(3) ?? 10_000)
case "floor-sse":
    guard let port = argument(1), argument(2) != nil else { fail(usage) }
    floorStreams(port: port, count: argument(3) ?? 10_000)
case "snapshot":
    guard let port = argument(1), arguments.count > 2 else { fail(usage) }
    snapshot(port: port, file: arguments[2], items: argument(3) ?? 1_000)
case "behind":
    guard let port = argument(1) else { fail(usage) }
    behind(port: port, writes: argument(2) ?? 10_000)
case "cluster":
    guard let portA = argument(1), let portB = argument(2) else { fail(usage) }
    cluster(portA: portA, portB: portB, count: argument(3) ?? 10_000)
case "crosswake":
    guard let portA = argument(1), let portB = argument(2) else { fail(usage) }
    crosswake(portA: portA, portB: portB, seconds: arguments.count > 3 ? Double(arguments[3]) ?? 10 : 10)
case "engine":
    guard let port = argument(1), let pid = argument(2), let items = argument(3), arguments.count > 4 else {
        fail(usage)
    }
    engine(port: port, pid: pid, items: items, id: arguments[4], behindWrites: argument(5) ?? 10_000)
case "make":
    guard let port = argument(1), let items = argument(2), arguments.count > 3 else { fail(usage) }
    if arguments.count > 4 && arguments[4] == "query" {
        print(makeLargeList(HTTPConnection(port: port), items: items, id: arguments[3], model: queryModel))
    } else {
        print(makeLargeList(HTTPConnection(port: port), items: items, id: arguments[3]))
    }
case "query":
    guard let port = argument(1), let items = argument(2), arguments.count > 3 else { fail(usage) }
    queryBenchmark(port: port, items: items, id: arguments[3])
case "views":
    guard let port = argument(1), arguments.count > 2, let views = argument(3), let seconds = argument(4) else {
        fail(usage)
    }
    viewFollowers(
        port: port, list: arguments[2], views: views, seconds: Double(seconds),
        query: arguments.count > 5 ? arguments[5] : "where=owner:u{k}&order=rank")
case "catchup":
    guard let port = argument(1), arguments.count > 2, let clients = argument(3), let seconds = argument(4) else {
        fail(usage)
    }
    catchUp(
        port: port, list: arguments[2], clients: clients, seconds: Double(seconds), minBehind: argument(5) ?? 1_000,
        maxBehind: argument(6) ?? 8_000)
case "sse-hold":
    guard let port = argument(1), arguments.count > 2, let count = argument(3), let seconds = argument(4) else {
        fail(usage)
    }
    sseHold(port: port, list: arguments[2], count: count, seconds: Double(seconds))
case "unauth-flood":
    guard let port = argument(1), let pid = argument(2), let count = argument(3), let mebibytes = argument(4),
        let seconds = argument(5)
    else { fail(usage) }
    unauthenticatedFlood(port: port, pid: pid, count: count, mebibytes: mebibytes, seconds: Double(seconds))
default:
    fail(usage)
}
