// ServiceBenchmarks: issue 6's service-level figures, measured against a
// listd that is already running on loopback (this tool starts nothing).
//
//   ServiceBenchmarks parked PORT PID [COUNT]      COUNT parked long-polls, one write: answer time, RSS per waiter
//   ServiceBenchmarks snapshot PORT FILE [ITEMS]   create an ITEMS-item list, save its snapshot bytes to FILE,
//                                                  print the path to give wrk
//   ServiceBenchmarks behind PORT [WRITES]         WRITES single-op writes, then time changes?since=<first>
//
// See README.md for the exact commands, including listd's, nginx's and wrk's.
import CSystem
import Foundation
import Glibc

// MARK: parked

/// Reads many connections' answers as they become readable (level-triggered
/// epoll, one recv per event), so the client is not what the figure measures.
struct AnswerCollector {
    struct Pending {
        var bytes: [UInt8] = []
        var done = false
        var end = 0
    }

    let epoll: Int32
    var pending: [Pending]
    var completedAt: [Double]

    init(fds: [Int32]) {
        epoll = epoll_create1(0)
        pending = Array(repeating: Pending(), count: fds.count)
        completedAt = Array(repeating: 0, count: fds.count)
        for (index, fd) in fds.enumerated() {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var event = epoll_event()
            event.events = EPOLLIN.rawValue
            event.data.u64 = UInt64(index)
            if epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) != 0 { fail("epoll_ctl: errno \(errno)") }
        }
    }

    /// Reads until every connection has one whole response or `timeout` seconds pass.
    mutating func collect(fds: [Int32], timeout: Double) -> Int {
        let start = monotonicSeconds()
        var complete = 0
        let events = UnsafeMutableBufferPointer<epoll_event>.allocate(capacity: 1024)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer {
            events.deallocate()
            buffer.deallocate()
        }
        while complete < fds.count, monotonicSeconds() - start < timeout {
            let count = epoll_wait(epoll, events.baseAddress, Int32(events.count), 100)
            guard count > 0 else { continue }
            for event in events[0..<Int(count)] {
                let index = Int(event.data.u64)
                let read = recv(fds[index], buffer.baseAddress, buffer.count, 0)
                guard read > 0, !pending[index].done else {
                    if read == 0 { epoll_ctl(epoll, EPOLL_CTL_DEL, fds[index], nil) }
                    continue
                }
                let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<read])
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
        }
        return complete
    }

    /// The body of connection `index`'s answer (after `collect`).
    func body(_ index: Int) -> HTTPReply {
        let bytes = pending[index].bytes
        let headEnd = bytes.withUnsafeBytes { raw in
            (0...(max(raw.count, 4) - 4)).first { raw[$0] == 13 && raw[$0 + 1] == 10 && raw[$0 + 2] == 13 && raw[$0 + 3] == 10 }
        } ?? 0
        let head = String(decoding: bytes[0..<headEnd], as: UTF8.self)
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        return HTTPReply(status: status, head: head, body: Array(bytes[min(headEnd + 4, bytes.count)..<pending[index].end]))
    }
}

func parked(port: Int, pid: Int, count: Int) {
    let limit = raiseFileLimit()
    guard count + 64 <= limit else { fail("\(count) connections need a descriptor limit above \(count + 64); it is \(limit)") }
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

    var waiters: [HTTPConnection] = []
    waiters.reserveCapacity(count)
    for _ in 0..<count {
        let waiter = HTTPConnection(port: port)
        waiter.send("GET", parkedPath)
        waiters.append(waiter)
    }
    let waitStart = monotonicSeconds()
    var parkedNow = metric(control, "listd_parked_waiters")
    while parkedNow - startWaiters < Double(count), monotonicSeconds() - waitStart < 60 {
        usleep(50_000)
        parkedNow = metric(control, "listd_parked_waiters")
    }
    usleep(500_000)
    let rssAfter = residentKiB(pid: pid)
    let load = loadAverage()

    var fds = waiters.map(\.fd)
    fds.append(writer.fd)
    var collector = AnswerCollector(fds: fds)
    if let pause = ProcessInfo.processInfo.environment["PARKED_PAUSE"].flatMap(Double.init) {
        // Time to attach a profiler to listd before the write.
        print("parked; writing in \(pause) s")
        fflush(nil)
        usleep(UInt32(pause * 1_000_000))
    }
    let start = monotonicSeconds()
    writer.send(
        "PATCH", "/lists/\(list.id)",
        body: #"{"ops":[{"op":"insertItem","section":"s","item":{"id":"wake","model":{"n":1}}}]}"#)
    let answered = collector.collect(fds: fds, timeout: 60)
    let writeAnswered = collector.completedAt[count]
    let lastWaiter = collector.completedAt[0..<count].max() ?? 0

    if let hold = ProcessInfo.processInfo.environment["PARKED_HOLD"].flatMap(Double.init) {
        // Keep the connections open so a profile of the wake-up does not include closing them.
        usleep(UInt32(hold * 1_000_000))
    }
    let write = collector.body(count)
    guard write.status == 200 else { fail("PATCH answered \(write.status): \(write.text.prefix(300))") }
    var correct = 0
    var sample = ""
    for index in 0..<count where collector.pending[index].done {
        let reply = collector.body(index)
        if reply.status == 200, (reply.json["to"] as? Int) == since + 1 { correct += 1 }
        if index == 0 { sample = reply.text }
    }
    let perWaiter = Double(rssAfter - rssBefore) * 1024 / Double(count)
    print("== parked: \(count) long-polls on one list, then one PATCH (load average: \(load))")
    print("descriptor limit (this process): \(limit)")
    print("parked waiters (listd_parked_waiters): \(Int(parkedNow - startWaiters)) of \(count)")
    print("listd VmRSS before: \(rssBefore) KiB, with \(count) parked: \(rssAfter) KiB")
    print("RSS growth per parked waiter: \(Int(perWaiter)) bytes (\(String(format: "%.2f", perWaiter / 1024)) KiB)")
    print("answers received: \(answered - 1) of \(count), correct (200, to=\(since + 1)): \(correct)")
    print("sample answer: \(sample.prefix(200))")
    print("PATCH sent -> PATCH answered: \(String(format: "%.1f", (writeAnswered - start) * 1000)) ms")
    print("PATCH sent -> all \(count) answers: \(String(format: "%.1f", (lastWaiter - start) * 1000)) ms")
    print(
        "PATCH answered -> all \(count) answers: \(String(format: "%.1f", max(0, lastWaiter - writeAnswered) * 1000)) ms"
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
            entries.append(#"{"id":"item\#(item)","model":{"title":"Item number \#(item)","qty":\#(item % 7),"done":\#(item % 3 == 0)}}"#)
        }
        sections.append(#"{"id":"section\#(section)","model":{"title":"Section \#(section)"},"items":[\#(entries.joined(separator: ","))]}"#)
    }
    let list = createList(connection, json: #"{"name":"snapshot bench","sections":[\#(sections.joined(separator: ","))]}"#)
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
        json: #"{"name":"behind bench","sections":[{"id":"a","model":{},"items":[\#(items)]},{"id":"b","model":{},"items":[]}]}"#)
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
    guard replies[0].status == 200 else { fail("GET \(path) answered \(replies[0].status): \(replies[0].text.prefix(300))") }
    let answer = replies[0].json
    let stages = (answer["stages"] as? [Any])?.count ?? -1
    print("== behind: a client \(writes) versions behind (load average: \(load))")
    print(
        "\(write) single-op PATCHes in \(String(format: "%.1f", writeSeconds)) s; versions \(first) -> \(latest)")
    print(
        "answer: status \(replies[0].status), from \(answer["from"] ?? "?") to \(answer["to"] ?? "?"), "
            + "reset: \(answer["reset"] as? Bool ?? false), \(stages) stages, \(replies[0].body.count) bytes")
    print("GET \(path): first (computed) \(String(format: "%.2f", timings[0])) ms")
    print("same again (shared/cached): \(String(format: "%.2f", timings[1])) ms, \(String(format: "%.2f", timings[2])) ms")
    if replies[1].body != replies[0].body { print("warning: the second answer differs from the first") }
}

// MARK: main

let arguments = Array(CommandLine.arguments.dropFirst())
let usage = """
    usage: ServiceBenchmarks parked PORT PID [COUNT]
           ServiceBenchmarks snapshot PORT FILE [ITEMS]
           ServiceBenchmarks behind PORT [WRITES]
           ServiceBenchmarks engine PORT PID ITEMS LIST-ID [BEHIND-WRITES]
           ServiceBenchmarks make PORT ITEMS LIST-ID
    """
func argument(_ index: Int) -> Int? { arguments.count > index ? Int(arguments[index]) : nil }
switch arguments.first {
case "parked":
    guard let port = argument(1), let pid = argument(2) else { fail(usage) }
    parked(port: port, pid: pid, count: argument(3) ?? 10_000)
case "snapshot":
    guard let port = argument(1), arguments.count > 2 else { fail(usage) }
    snapshot(port: port, file: arguments[2], items: argument(3) ?? 1_000)
case "behind":
    guard let port = argument(1) else { fail(usage) }
    behind(port: port, writes: argument(2) ?? 10_000)
case "engine":
    guard let port = argument(1), let pid = argument(2), let items = argument(3), arguments.count > 4 else { fail(usage) }
    engine(port: port, pid: pid, items: items, id: arguments[4], behindWrites: argument(5) ?? 10_000)
case "make":
    guard let port = argument(1), let items = argument(2), arguments.count > 3 else { fail(usage) }
    print(makeLargeList(HTTPConnection(port: port), items: items, id: arguments[3]))
default:
    fail(usage)
}
