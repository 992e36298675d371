// Long-poll against the event stream (issue 26): how long N writes take to
// reach one follower, and each write's delay from its request to the
// follower's update, with `FollowOptions.transport` .longPoll or .eventStream.
// Run against a listd you start (see README.md).
import Foundation
import JSON
import ListClient
import ListClientNetworking
import Synchronization

struct Arguments {
    var url = URL(string: "http://127.0.0.1:8080")!
    var writes = 200
    var transport = FollowTransport.longPoll

    init() throws {
        var list = CommandLine.arguments.dropFirst()
        while let flag = list.popFirst() {
            guard let value = list.popFirst() else { throw Failure("\(flag) needs a value") }
            switch flag {
            case "--url": url = try URL(string: value).orThrow("bad --url \(value)")
            case "--writes": writes = try Int(value).flatMap { $0 > 0 ? $0 : nil }.orThrow("bad --writes \(value)")
            case "--transport":
                switch value {
                case "longpoll": transport = .longPoll
                case "sse": transport = .eventStream
                default: throw Failure("--transport is longpoll or sse, not \(value)")
                }
            default: throw Failure("unknown flag \(flag)")
            }
        }
    }
}

struct Failure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension Optional {
    func orThrow(_ message: String) throws -> Wrapped {
        guard let self else { throw Failure(message) }
        return self
    }
}

/// When the follower first held each version.
final class Arrivals: Sendable {
    private let seen = Mutex<[(version: Int64, at: ContinuousClock.Instant)]>([])
    func record(_ version: Int64) { seen.withLock { $0.append((version, .now)) } }
    var all: [(version: Int64, at: ContinuousClock.Instant)] { seen.withLock { $0 } }
    var last: Int64? { seen.withLock { $0.last?.version } }
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

let arguments = try Arguments()
let writer = ListClient(baseURL: arguments.url, token: nil)
let id = "bench-\(UInt32.random(in: 0...UInt32.max))"
_ = try await writer.createList(id: id, sections: [])
_ = try await writer.patchList(id, [.insertSection(id: "s")])
let follower = ListClient(baseURL: arguments.url, token: nil)
var options = FollowOptions()
options.transport = arguments.transport
let arrivals = Arrivals()
let subscription = follower.follow(list: id, options: options).subscribe { event in
    if case .next(let update) = event, let version = update.state?.version { arrivals.record(version) }
}
while arrivals.last == nil { try await Task.sleep(for: .milliseconds(5)) }

var sent: [(version: Int64, at: ContinuousClock.Instant)] = []
let start = ContinuousClock.now
var last: Int64 = 0
for index in 0..<arguments.writes {
    let at = ContinuousClock.now
    last = try await writer.patchList(
        id,
        [
            .insertItem(
                section: "s", id: Identifier(stringLiteral: "i\(index)"),
                model: ["n": .number(JSONNumber(Int64(index)))])
        ]
    ).to
    sent.append((last, at))
}
while (arrivals.last ?? 0) < last { try await Task.sleep(for: .milliseconds(1)) }
let total = ContinuousClock.now - start
subscription.dispose()
let seen = arrivals.all
let delays = sent.compactMap { write -> Double? in
    guard let arrival = seen.first(where: { $0.version >= write.version }) else { return nil }
    return (arrival.at - write.at) / .milliseconds(1)
}
print(
    "transport \(arguments.transport) writes \(arguments.writes): all at the follower after "
        + String(format: "%.1f ms", total / .milliseconds(1)) + ", updates \(seen.count - 1), write→update p50 "
        + String(
            format: "%.2f ms, p90 %.2f ms, p99 %.2f ms", percentile(delays, 0.5), percentile(delays, 0.9),
            percentile(delays, 0.99)))
try await writer.deleteList(id)
