import Foundation
import Synchronization

// MARK: catchup: clients catching up from far behind while a writer writes

/// The integer after `"key":` in a JSON body, found without parsing it (a
/// catch-up answer names thousands of entries; the client's own CPU must not
/// be what is measured on a two-core machine).
func integerField(_ key: String, in body: [UInt8]) -> Int? {
    let pattern = Array("\"\(key)\":".utf8)
    guard body.count > pattern.count else { return nil }
    var index = 0
    while index + pattern.count <= body.count {
        if body[index] == pattern[0], Array(body[index..<(index + pattern.count)]) == pattern {
            var value = 0
            var at = index + pattern.count
            var digits = 0
            while at < body.count, body[at] >= 48, body[at] <= 57 {
                value = value * 10 + Int(body[at] - 48)
                at += 1
                digits += 1
            }
            return digits > 0 ? value : nil
        }
        index += 1
    }
    return nil
}

/// `catchup PORT LIST-ID CLIENTS SECONDS [MIN-BEHIND MAX-BEHIND]`: CLIENTS
/// threads, each on its own connection, ask in a loop for
/// `GET /lists/{id}/changes?since=V&timeout=0` with V a random MIN…MAX versions
/// below the list's version (the `to` of its previous answer), for SECONDS.
/// Prints the answers per second, their latency (p50, p99, max), their sizes,
/// and how many were resets (a reset means V fell outside the kept history).
func catchUp(port: Int, list: String, clients: Int, seconds: Double, minBehind: Int, maxBehind: Int) {
    let head = HTTPConnection(port: port).request("GET", "/lists/\(list)/changes?since=0&timeout=0")
    guard let start = integerField("to", in: head.body) ?? integerField("version", in: head.body) else {
        fail("no version for list \(list): \(head.status) \(head.text.prefix(200))")
    }
    struct Tally: Sendable {
        var latencies: [Double] = []
        var resets = 0
        var bytes = 0
    }
    let tally = Mutex(Tally())
    let group = DispatchGroup()
    let deadline = monotonicSeconds() + seconds
    for client in 0..<clients {
        group.enter()
        Thread.detachNewThread {
            var generator = SystemRandomNumberGenerator()
            _ = client
            let connection = HTTPConnection(port: port)
            var version = start
            var mine = Tally()
            while monotonicSeconds() < deadline {
                let since = max(1, version - Int.random(in: minBehind...maxBehind, using: &generator))
                let started = monotonicSeconds()
                let reply = connection.request("GET", "/lists/\(list)/changes?since=\(since)&timeout=0")
                mine.latencies.append((monotonicSeconds() - started) * 1000)
                guard reply.status == 200 else {
                    fail("catch-up from v\(since): \(reply.status) \(reply.text.prefix(200))")
                }
                mine.bytes += reply.body.count
                if reply.body.count < 4096, reply.text.contains("\"reset\":true") { mine.resets += 1 }
                version = max(version, integerField("to", in: reply.body) ?? version)
            }
            tally.withLock {
                $0.latencies += mine.latencies
                $0.resets += mine.resets
                $0.bytes += mine.bytes
            }
            group.leave()
        }
    }
    group.wait()
    let result = tally.withLock { $0 }
    let count = result.latencies.count
    let sorted = result.latencies.sorted()
    print(
        "catch-ups: \(clients) clients, \(count) answers in \(Int(seconds)) s (\(String(format: "%.0f", Double(count) / seconds))/s), "
            + "\(minBehind)-\(maxBehind) versions behind; latency p50 \(ms(percentile(sorted, 0.5))) ms, "
            + "p99 \(ms(percentile(sorted, 0.99))) ms, max \(ms(sorted.last ?? 0)) ms; "
            + "mean size \(count > 0 ? result.bytes / count : 0) bytes; resets \(result.resets)")
}
