import CSystem
import Foundation
import Glibc
import Synchronization

// MARK: floor

// The fan-out figures' floor on this machine: what the kernel and the client
// cost when a server does nothing but send. `floor-server` is the least a
// long-poll or event-stream server can do: two threads (as many as listd's
// event loops on 2 cores), each with its own epoll and half the connections
// (handed out in turn by an accepting thread), reading each subscriber's
// request and keeping the connection; `POST /go` is answered at once, and
// then each thread sends one fixed answer (long-polls) or one event chunk
// (streams on `/es`), the size of listd's, to each connection it keeps: one
// `send` each, no parsing beyond the request's first line, no allocation
// per answer, no timers. `floor-parked` and `floor-sse` measure it exactly
// as `parked` and `streams` measure listd and `nchan-parked` and `nchan-sse`
// nginx + nchan (the same client code), so fanout.sh prints the floor beside
// both: how much of each figure is the kernel's and the client's, whatever
// the server does.

/// The answer `floor-server` sends every subscriber: listd's long-poll answer
/// to `parked`'s write, head and body, as listd sends it (bytes for bytes in
/// size; the list id and epoch are nchan's message's).
let floorAnswer: [UInt8] = {
    let body = nchanMessage + "\n"
    let head =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n"
        + "Date: Sun, 29 Nov 2026 01:00:00 GMT\r\nServer: listd\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
    return Array((head + body).utf8)
}()

/// The subscribers the floor server's threads keep, together.
private final class FloorCount: Sendable {
    let value = Atomic<Int>(0)
}

/// What `floor-server` sends an event-stream subscriber when it subscribes
/// (a head as listd's, and a comment, so the client knows it is open) and
/// then on `/go` (one chunk: an event the size of listd's change event).
let floorStreamHead: [UInt8] = Array(
    ("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
        + "Date: Sun, 29 Nov 2026 01:00:00 GMT\r\nServer: listd\r\nTransfer-Encoding: chunked\r\n\r\n"
        + "5\r\n: hi\n\r\n").utf8)
let floorEventData = "data: \(nchanMessage)\n"
let floorEvent: [UInt8] = {
    let event = "id: 01m8cmetg9dreac08x5djp9dp7:5\nevent: change\n\(floorEventData)\n"
    return Array((String(event.utf8.count, radix: 16) + "\r\n" + event + "\r\n").utf8)
}()

/// Runs the floor server on `port` until killed: this thread accepts and
/// hands connections to the two sending threads in turn (as listd's
/// acceptor spreads them over its loops), so each sends to half.
func floorServer(port: Int) -> Never {
    _ = raiseFileLimit()
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard listener >= 0 else { fail("socket: errno \(errno)") }
    var one: Int32 = 1
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard bound == 0, listen(listener, 4096) == 0 else { fail("bind/listen on 127.0.0.1:\(port): errno \(errno)") }
    let kept = FloorCount()
    let threads = 2
    let epolls = (0..<threads).map { _ in epoll_create1(0) }
    let wakes = (0..<threads).map { _ in eventfd(0, Int32(EFD_NONBLOCK)) }
    for index in 0..<threads {
        floorWatch(epolls[index], wakes[index])
        let (epoll, wake, all) = (epolls[index], wakes[index], wakes)
        Thread { floorLoop(epoll: epoll, wake: wake, allWakes: all, kept: kept) }.start()
    }
    print("floor-server on 127.0.0.1:\(port), \(threads) threads")
    fflush(nil)
    var next = 0
    while true {
        let connection = accept(listener, nil, nil)
        guard connection >= 0 else { continue }
        _ = fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) | O_NONBLOCK)
        setsockopt(connection, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        floorWatch(epolls[next], connection)
        next = (next + 1) % threads
    }
}

/// Adds `fd` to `epoll`, readable.
private func floorWatch(_ epoll: Int32, _ fd: Int32) {
    var event = epoll_event()
    event.events = EPOLLIN.rawValue
    event.data.fd = fd
    epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event)
}

/// One sending thread of the floor server: reads requests, keeps
/// subscribers (long-polls, and streams on `/es`), answers `/go` and
/// `/count`, and on its eventfd sends `floorAnswer` to every long-poll it
/// keeps and `floorEvent` to every stream.
private func floorLoop(epoll: Int32, wake: Int32, allWakes: [Int32], kept: FloorCount) {
    var subscribers: [Int32] = []
    var streams: [Int32] = []
    let events = UnsafeMutableBufferPointer<epoll_event>.allocate(capacity: 1024)
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    func reply(_ fd: Int32, _ text: String) {
        let bytes = Array("HTTP/1.1 200 OK\r\nContent-Length: \(text.utf8.count)\r\n\r\n\(text)".utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }
    while true {
        let count = epoll_wait(epoll, events.baseAddress, Int32(events.count), -1)
        guard count > 0 else { continue }
        for event in events[0..<Int(count)] {
            let fd = event.data.fd
            if fd == wake {
                var value: UInt64 = 0
                _ = read(wake, &value, 8)
                floorAnswer.withUnsafeBytes { answer in
                    for subscriber in subscribers {
                        _ = send(subscriber, answer.baseAddress, answer.count, Int32(MSG_NOSIGNAL))
                    }
                }
                floorEvent.withUnsafeBytes { event in
                    for stream in streams {
                        _ = send(stream, event.baseAddress, event.count, Int32(MSG_NOSIGNAL))
                    }
                }
                kept.value.subtract(subscribers.count, ordering: .relaxed)
                subscribers.removeAll(keepingCapacity: true)
                continue
            }
            let read = recv(fd, buffer.baseAddress, buffer.count, 0)
            guard read > 0 else {
                if read == 0 {
                    // Gone: no longer kept (a linear search, only when a figure's client leaves).
                    if let index = streams.firstIndex(of: fd) {
                        streams.remove(at: index)
                        kept.value.subtract(1, ordering: .relaxed)
                    } else if let index = subscribers.firstIndex(of: fd) {
                        subscribers.remove(at: index)
                        kept.value.subtract(1, ordering: .relaxed)
                    }
                    epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nil)
                    close(fd)
                }
                continue
            }
            // One request a read (the client writes each whole); its first line decides.
            let request = UnsafeRawBufferPointer(rebasing: buffer[0..<read])
            if request.starts(with: "POST /go".utf8) {
                reply(fd, "ok")
                for other in allWakes {
                    var one: UInt64 = 1
                    _ = write(other, &one, 8)
                }
            } else if request.starts(with: "GET /count".utf8) {
                reply(fd, "\(kept.value.load(ordering: .relaxed))")
            } else if request.starts(with: "GET /es".utf8) {
                // Streams stay open and counted: a figure opens them on a fresh server.
                _ = floorStreamHead.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                streams.append(fd)
                kept.value.add(1, ordering: .relaxed)
            } else {
                subscribers.append(fd)
                kept.value.add(1, ordering: .relaxed)
            }
        }
    }
}

/// `parked` against `floor-server`: `count` subscribers, counted by the
/// server, then `POST /go`; the same timing and checks as `nchan-parked`.
func floorParked(port: Int, count: Int) {
    let limit = requireDescriptors(for: count)
    let control = HTTPConnection(port: port)
    func kept() -> Double { Double(control.request("GET", "/count").text) ?? -1 }
    let subscribers = openConnections(
        port: port, count: count, request: "GET /sub HTTP/1.1\r\nHost: b\r\n\r\n")
    let counted = waitForGauge(Double(count), timeout: 60, kept)
    guard counted == Double(count) else { fail("the floor server keeps \(Int(counted)) of \(count) subscribers") }
    let writer = HTTPConnection(port: port)
    let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.trimmingCharacters(in: .newlines) ?? "?"
    let (collector, timing, answered) = timedLongPollWrite(
        waiters: subscribers, writer: writer, "POST", "/go", body: "")
    var correct = 0
    for index in 0..<count where collector.pending[index].done {
        if collector.pending[index].bytes == floorAnswer { correct += 1 }
    }
    print("== floor-parked: \(count) long-polls on the floor server, then POST /go (load average: \(load))")
    print("descriptor limit (this process): \(limit)")
    print("answers received: \(answered) of \(count), correct (the \(floorAnswer.count) bytes): \(correct)")
    timing.report(write: "go", count: count, noun: "answers")
}

/// `streams` against `floor-server`: `count` event streams, counted by the
/// server, then `POST /go`; the same timing and checks as `nchan-sse`.
func floorStreams(port: Int, count: Int) {
    let limit = requireDescriptors(for: count)
    let control = HTTPConnection(port: port)
    let subscribers = openConnections(port: port, count: count, request: "GET /es HTTP/1.1\r\nHost: b\r\n\r\n")
    var collector = StreamCollector(fds: subscribers.map(\.fd))
    let opened = collector.collect(fds: subscribers.map(\.fd), until: Array(": hi\n".utf8), timeout: 120)
    guard opened == count else { fail("only \(opened) of \(count) streams opened") }
    let counted = waitForGauge(Double(count), timeout: 60) { Double(control.request("GET", "/count").text) ?? -1 }
    guard counted == Double(count) else { fail("the floor server keeps \(Int(counted)) of \(count) streams") }
    let writer = HTTPConnection(port: port)
    let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.trimmingCharacters(in: .newlines) ?? "?"
    let (timing, _, seen) = timedStreamWrite(
        &collector, streams: subscribers, writer: writer, "POST", "/go", body: "",
        until: Array(floorEventData.utf8), expected: [])
    let correct = collector.matched[0..<count].filter { $0 }.count
    print("== floor-sse: \(count) event streams on the floor server, then POST /go (load average: \(load))")
    print("descriptor limit (this process): \(limit)")
    print("events received: \(seen) of \(count), correct (the event's data line): \(correct)")
    reportStreamLatencies(write: "go", start: timing.start, seenAt: collector.seenAt[0..<count], count: count)
    timing.report(write: "go", count: count, noun: "events")
}
