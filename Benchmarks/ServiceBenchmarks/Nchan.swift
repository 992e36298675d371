import CSystem
import Foundation
import Glibc

// MARK: nchan

// The other side of issue 21's fan-out figure: nginx with the nchan module
// (nchan.conf, started by fanout.sh), measured as `parked` and `streams`
// measure listd. nchan's locations: POST /pub/{channel} publishes;
// /sub/lp/{channel} is a long-poll subscriber, /sub/es/{channel} an
// EventSource one; /nchan_status counts the subscribers.

/// The two kinds of nchan subscriber the comparison uses.
enum NchanSubscriber {
    case longPoll
    case eventSource

    /// The subscriber's request, naming the last message it has (`Last-Event-ID`,
    /// which nchan reads for every subscriber type) so it waits for the next,
    /// as listd's `since=V` does.
    func request(channel: String, after id: String) -> String {
        switch self {
        case .longPoll:
            "GET /sub/lp/\(channel) HTTP/1.1\r\nHost: b\r\nLast-Event-ID: \(id)\r\n\r\n"
        case .eventSource:
            "GET /sub/es/\(channel) HTTP/1.1\r\nHost: b\r\nAccept: text/event-stream\r\nLast-Event-ID: \(id)\r\n\r\n"
        }
    }
}

/// What nchan publishes: listd's answer to the `parked` write (a change from
/// V to V+1 holding one inserted item), the same JSON and size (170 bytes;
/// `parked` prints its sample answer, 171 bytes with listd's closing newline).
let nchanMessage =
    #"{"list":"01m8cmetg8pmfvkza6qkty29h9","epoch":"01m8cmetg9dreac08x5djp9dp7","from":4,"to":5,"#
    + #""stages":[{"itemInserted":[{"at":[0,3],"item":{"id":"wake","model":{"n":1}}}]}]}"#

/// Publishes `message` on `channel`; returns nchan's id for it.
func nchanPublish(_ connection: HTTPConnection, channel: String, message: String) -> String {
    let reply = connection.request("POST", "/pub/\(channel)", body: message)
    guard (200...202).contains(reply.status), let id = reply.json["last_message_id"] as? String else {
        fail("POST /pub/\(channel) answered \(reply.status): \(reply.text.prefix(300))")
    }
    return id
}

/// Every subscriber nginx's workers hold, from `nchan_stub_status` (shared
/// memory, both workers). The channel info (GET on the publisher location)
/// counts per worker: with two workers, the channel's owner at times left
/// out the other worker's subscribers (98 of 200 for a whole minute).
func nchanSubscribers(_ connection: HTTPConnection) -> Double {
    let reply = connection.request("GET", "/nchan_status")
    guard reply.status == 200 else { fail("GET /nchan_status answered \(reply.status): \(reply.text.prefix(300))") }
    for line in reply.text.split(separator: "\n") where line.hasPrefix("subscribers: ") {
        if let value = Double(line.dropFirst("subscribers: ".count)) { return value }
    }
    fail("no subscribers line in /nchan_status: \(reply.text.prefix(300))")
}

/// Warms the channel as `parked` warms listd: a first message, then three
/// rounds of one subscriber of `kind` woken by a publish. Returns the last
/// message's id.
func nchanWarmUp(port: Int, publisher: HTTPConnection, channel: String, kind: NchanSubscriber) -> String {
    var last = nchanPublish(publisher, channel: channel, message: #"{"warm":0}"#)
    for round in 1...3 {
        let warm = HTTPConnection(port: port)
        warm.sendRaw(kind.request(channel: channel, after: last))
        usleep(20_000)
        last = nchanPublish(publisher, channel: channel, message: #"{"warm":\#(round)}"#)
        switch kind {
        case .longPoll:
            let reply = warm.receive()
            guard reply.status == 200, reply.text == #"{"warm":\#(round)}"# else {
                fail("warm-up long-poll answered \(reply.status): \(reply.text.prefix(300))")
            }
        case .eventSource:
            var collector = StreamCollector(fds: [warm.fd])
            guard collector.collect(fds: [warm.fd], until: Array(#"data: {"warm":\#(round)}"#.utf8), timeout: 10) == 1
            else { fail("the warm-up stream got no message") }
        }
    }
    return last
}

/// `count` subscribers of `kind` on one channel, counted by nchan before
/// the publish; returns them and the setup's figures.
private func nchanSubscribe(port: Int, pid: Int, count: Int, kind: NchanSubscriber) -> (
    publisher: HTTPConnection, channel: String, subscribers: [HTTPConnection], collector: StreamCollector?,
    subscribed: Double, rssBefore: Int, rssAfter: Int, load: String
) {
    let control = HTTPConnection(port: port)
    let publisher = HTTPConnection(port: port)
    let channel = "bench\(getpid())"
    let last = nchanWarmUp(port: port, publisher: publisher, channel: channel, kind: kind)
    usleep(200_000)
    let base = nchanSubscribers(control)
    let rssBefore = treeResidentKiB(pid: pid)
    let subscribers = openConnections(port: port, count: count, request: kind.request(channel: channel, after: last))
    var collector: StreamCollector?
    if kind == .eventSource {
        // nchan opens an EventSource stream with the comment ": hi".
        var streams = StreamCollector(fds: subscribers.map(\.fd))
        let opened = streams.collect(fds: subscribers.map(\.fd), until: Array(": hi\n".utf8), timeout: 120)
        guard opened == count else { fail("only \(opened) of \(count) streams opened") }
        collector = streams
    }
    let subscribed = waitForGauge(Double(count), timeout: 60) { nchanSubscribers(control) - base }
    usleep(500_000)
    return (publisher, channel, subscribers, collector, subscribed, rssBefore, treeResidentKiB(pid: pid), loadAverage())
}

/// `parked` for nchan: `count` long-poll subscribers, one publish.
func nchanParked(port: Int, pid: Int, count: Int) {
    let limit = requireDescriptors(for: count)
    let setup = nchanSubscribe(port: port, pid: pid, count: count, kind: .longPoll)
    let message = nchanMessage
    let (collector, timing, answered) = timedLongPollWrite(
        waiters: setup.subscribers, writer: setup.publisher, "POST", "/pub/\(setup.channel)", body: message)
    let publish = collector.body(count)
    guard (200...202).contains(publish.status) else {
        fail("publish answered \(publish.status): \(publish.text.prefix(300))")
    }
    let expected = Array(message.utf8)
    var correct = 0
    for index in 0..<count where collector.pending[index].done {
        let reply = collector.body(index)
        if reply.status == 200, reply.body == expected { correct += 1 }
    }
    let perSubscriber = Double(setup.rssAfter - setup.rssBefore) * 1024 / Double(count)
    print("== nchan-parked: \(count) long-polls on one channel, then one publish (load average: \(setup.load))")
    print("descriptor limit (this process): \(limit)")
    print("parked subscribers (nchan_stub_status): \(Int(setup.subscribed)) of \(count)")
    print("nginx VmRSS (master + workers) before: \(setup.rssBefore) KiB, with \(count) parked: \(setup.rssAfter) KiB")
    print(
        "RSS growth per parked subscriber: \(Int(perSubscriber)) bytes (\(String(format: "%.2f", perSubscriber / 1024)) KiB)"
    )
    print("answers received: \(answered) of \(count), correct (200, the published \(expected.count) bytes): \(correct)")
    print("publish answer: \(publish.status) \(publish.text.prefix(200))")
    timing.report(write: "publish", count: count, noun: "answers")
}

/// `streams` for nchan: `count` EventSource subscribers, one publish.
func nchanStreams(port: Int, pid: Int, count: Int) {
    let limit = requireDescriptors(for: count)
    let setup = nchanSubscribe(port: port, pid: pid, count: count, kind: .eventSource)
    guard var collector = setup.collector else { fail("no stream collector") }
    let message = nchanMessage
    // The whole message as one event's data line: seeing it is the check.
    let (timing, publish, seen) = timedStreamWrite(
        &collector, streams: setup.subscribers, writer: setup.publisher, "POST", "/pub/\(setup.channel)",
        body: message, until: Array("data: \(message)\n".utf8), expected: [])
    guard (200...202).contains(publish.status) else {
        fail("publish answered \(publish.status): \(publish.text.prefix(300))")
    }
    let correct = collector.matched[0..<count].filter { $0 }.count
    let perStream = Double(setup.rssAfter - setup.rssBefore) * 1024 / Double(count)
    print("== nchan-sse: \(count) EventSource streams on one channel, then one publish (load average: \(setup.load))")
    print("descriptor limit (this process): \(limit)")
    print("open streams (nchan_stub_status): \(Int(setup.subscribed)) of \(count)")
    print("nginx VmRSS (master + workers) before: \(setup.rssBefore) KiB, with \(count) streams: \(setup.rssAfter) KiB")
    print("RSS growth per stream: \(Int(perStream)) bytes (\(String(format: "%.2f", perStream / 1024)) KiB)")
    print("events received: \(seen) of \(count), correct (data: the published \(message.utf8.count) bytes): \(correct)")
    print("publish answer: \(publish.status) \(publish.text.prefix(200))")
    reportStreamLatencies(write: "publish", start: timing.start, seenAt: collector.seenAt[0..<count], count: count)
    timing.report(write: "publish", count: count, noun: "events")
}
