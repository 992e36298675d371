import CSystem
import Foundation
import Glibc

// What every fan-out figure shares (listd's `parked` and `streams`, nchan's
// `nchan-parked` and `nchan-sse`): many subscribers opened and counted by
// the server, one write sent on a connection opened beforehand, and the time
// from that write to its own answer and to the last subscriber's.

/// Raises this process's descriptor limit to the hard one and checks that it
/// leaves room for `count` connections; returns the limit.
func requireDescriptors(for count: Int) -> Int {
    let limit = raiseFileLimit()
    guard count + 64 <= limit else {
        fail("\(count) connections need a descriptor limit above \(count + 64); it is \(limit)")
    }
    return limit
}

/// Opens `count` connections to `port`, each sending `request` (written out in full) as it opens.
func openConnections(port: Int, count: Int, request: String) -> [HTTPConnection] {
    var connections: [HTTPConnection] = []
    connections.reserveCapacity(count)
    for _ in 0..<count {
        let connection = HTTPConnection(port: port)
        connection.sendRaw(request)
        connections.append(connection)
    }
    return connections
}

/// Reads `gauge` every 50 ms until it reaches `target` or `timeout` seconds
/// pass; returns the last reading.
func waitForGauge(_ target: Double, timeout: Double, _ gauge: () -> Double) -> Double {
    let start = monotonicSeconds()
    var value = gauge()
    while value < target, monotonicSeconds() - start < timeout {
        usleep(50_000)
        value = gauge()
    }
    return value
}

/// Milliseconds with one decimal, never negative.
func milliseconds(_ seconds: Double) -> String { String(format: "%.1f", max(0, seconds) * 1000) }

/// One write's moments: sent, answered, and the last subscriber's answer (0 when none came).
struct FanOutTiming {
    var start: Double
    var writeAnswered: Double
    var last: Double

    /// The three lines fanout.sh reads, worded as `parked` has always printed them;
    /// `write` names the request ("PATCH", "publish"), `noun` what subscribers get.
    func report(write: String, count: Int, noun: String) {
        print("\(write) sent -> \(write) answered: \(milliseconds(writeAnswered - start)) ms")
        print("\(write) sent -> all \(count) \(noun): \(milliseconds(last - start)) ms")
        print("\(write) answered -> all \(count) \(noun): \(milliseconds(last - writeAnswered)) ms")
    }
}

/// Sends the write on `writer` and reads its answer beside one whole answer
/// on each of `waiters` (epoll, as they become readable). `PARKED_PAUSE=s`
/// pauses before the write and `PARKED_HOLD=s` keeps the connections open
/// after it, to profile the server. Returns the collector (the write's answer
/// is its last connection), the timing, and how many waiters were answered.
func timedLongPollWrite(
    waiters: [HTTPConnection], writer: HTTPConnection, _ method: String, _ path: String, body: String
) -> (collector: AnswerCollector, timing: FanOutTiming, answered: Int) {
    let count = waiters.count
    let fds = waiters.map(\.fd) + [writer.fd]
    var collector = AnswerCollector(fds: fds)
    if let pause = ProcessInfo.processInfo.environment["PARKED_PAUSE"].flatMap(Double.init) {
        // Time to attach a profiler to the server before the write.
        print("parked; writing in \(pause) s")
        fflush(nil)
        usleep(UInt32(pause * 1_000_000))
    }
    let start = monotonicSeconds()
    writer.send(method, path, body: body)
    let answered = collector.collect(fds: fds, timeout: 60)
    let timing = FanOutTiming(
        start: start, writeAnswered: collector.completedAt[count],
        last: collector.completedAt[0..<count].max() ?? 0)
    if let hold = ProcessInfo.processInfo.environment["PARKED_HOLD"].flatMap(Double.init) {
        // Keep the connections open so a profile of the wake-up does not include closing them.
        usleep(UInt32(hold * 1_000_000))
    }
    guard collector.pending[count].done else { fail("\(method) \(path) got no answer") }
    return (collector, timing, answered - 1)
}

/// Sends the write on `writer` and reads its answer beside `streams`, each
/// until its bytes hold `pattern` (see `StreamCollector.collect`). Returns
/// the timing, the write's answer and how many streams showed the pattern.
func timedStreamWrite(
    _ collector: inout StreamCollector, streams: [HTTPConnection], writer: HTTPConnection,
    _ method: String, _ path: String, body: String, until pattern: [UInt8], expected: [UInt8]
) -> (timing: FanOutTiming, write: HTTPReply, seen: Int) {
    collector.watchAnswer(writer.fd)
    let fds = streams.map(\.fd) + [writer.fd]
    let start = monotonicSeconds()
    writer.send(method, path, body: body)
    let seen = collector.collect(fds: fds, until: pattern, expected: expected, timeout: 60)
    guard let write = collector.answer else { fail("\(method) \(path) got no answer") }
    let timing = FanOutTiming(
        start: start, writeAnswered: collector.answeredAt,
        last: collector.seenAt[0..<streams.count].max() ?? 0)
    return (timing, write, seen)
}

/// Per-stream latency from `start`: p50, p99, max and how many under 100 ms,
/// in the line `streams` has always printed.
func reportStreamLatencies(write: String, start: Double, seenAt: ArraySlice<Double>, count: Int) {
    let latencies = seenAt.filter { $0 > 0 }.map { ($0 - start) * 1000 }.sorted()
    let under100 = latencies.filter { $0 < 100 }.count
    func percentile(_ p: Double) -> Double {
        latencies.isEmpty ? -1 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
    }
    print(
        "\(write) sent -> event: p50 \(String(format: "%.1f", percentile(0.5))) ms, p99 \(String(format: "%.1f", percentile(0.99))) ms, "
            + "max \(String(format: "%.1f", latencies.last ?? -1)) ms; under 100 ms: \(under100) of \(count)")
}

/// The resident set of a process and its children (nginx's master and
/// workers) in KiB: pages the workers share (nchan's shared memory) count
/// once per process that touched them.
func treeResidentKiB(pid: Int) -> Int {
    let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
    return children.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        .reduce(residentKiB(pid: pid)) { $0 + residentKiB(pid: $1) }
}
