// FollowBenchmarks: many followers on one list while a writer writes at a
// steady rate. Reports whether every follower ends at the server's final
// snapshot and the delay from a write's answer to each follower's update.
//
//     .build/release/FollowBenchmarks --url http://127.0.0.1:8080 [--followers 100] [--rate 50] [--seconds 30]
//
// See README.md beside this file.

import Foundation
import JSON
import ListClient
import ListClientNetworking
import ReactiveCore
import SectionDiff
import Synchronization

struct Settings {
    var url = URL(string: "http://127.0.0.1:8080")!
    var followers = 100
    var rate = 50.0
    var seconds = 30.0
    var list = "follow-bench"
    var token = ProcessInfo.processInfo.environment["LISTD_TOKEN"]

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let flag = iterator.next() {
            let value = iterator.next() ?? ""
            switch flag {
            case "--url": url = URL(string: value) ?? url
            case "--followers": followers = Int(value) ?? followers
            case "--rate": rate = Double(value) ?? rate
            case "--seconds": seconds = Double(value) ?? seconds
            case "--list": list = value
            default:
                print("unknown flag \(flag); flags: --url --followers --rate --seconds --list")
                exit(2)
            }
        }
    }
}

/// What one follower saw: the time each version reached it.
final class FollowerLog: Sendable {
    struct Entry: Sendable {
        var version: Int64
        var at: ContinuousClock.Instant
    }
    private let entries = Mutex<[Entry]>([])
    private let last = Mutex<ListState?>(nil)
    private let resets = Atomic<Int>(0)
    private let failure = Mutex<String?>(nil)

    func record(_ update: FollowUpdate) {
        let now = ContinuousClock.now
        if case .reset = update { resets.add(1, ordering: .relaxed) }
        guard let state = update.state else { return }
        entries.withLock { $0.append(Entry(version: state.version, at: now)) }
        last.withLock { $0 = state }
    }

    func fail(_ error: any Error) { failure.withLock { $0 = "\(error)" } }

    var log: [Entry] { entries.withLock { $0 } }
    var state: ListState? { last.withLock { $0 } }
    var resetCount: Int { resets.load(ordering: .relaxed) }
    var error: String? { failure.withLock { $0 } }
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

func milliseconds(_ duration: Duration) -> Double { duration / .milliseconds(1) }

let settings = Settings(CommandLine.arguments)
let writer = ListClient(baseURL: settings.url, token: settings.token)
let followerClient = ListClient(baseURL: settings.url, token: settings.token)

/// Deletes a list left by an earlier run; a missing list is fine.
func removeLeftover(_ client: ListClient, _ list: String) async throws {
    do {
        try await client.deleteList(list)
    } catch {
        if error.status != 404 { throw error }
    }
}
try await removeLeftover(writer, settings.list)
let initial: ListSections = (0..<5).map { section in
    ArraySection(
        model: JSONEntry(id: "s\(section)", model: JSONText(#"{"title":"Section \#(section)"}"#)),
        items: (0..<20).map { JSONEntry(id: "i\(section)-\($0)", model: JSONText(#"{"qty":\#($0)}"#)) })
}
var state = try await writer.createList(id: settings.list, name: "bench", sections: initial)

let logs = (0..<settings.followers).map { _ in FollowerLog() }
let subscriptions = logs.map { log in
    followerClient.follow(list: settings.list).subscribe { event in
        switch event {
        case .next(let update): log.record(update)
        case .error(let error): log.fail(error)
        case .completed: break
        }
    }
}
let readyDeadline = ContinuousClock.now + .seconds(30)
while logs.contains(where: { $0.state == nil }) && ContinuousClock.now < readyDeadline {
    try await Task.sleep(for: .milliseconds(20))
}
let ready = logs.filter { $0.state != nil }.count
print("followers ready: \(ready)/\(settings.followers)")

// Writes at a steady rate: each one updates, inserts, deletes or moves a few items.
var rng = SystemRandomNumberGenerator()
var answered: [Int64: ContinuousClock.Instant] = [:]
var writeLatencies: [Double] = []
var counter = 0
let interval = Duration.milliseconds(Int64(1000 / settings.rate))
let started = ContinuousClock.now
var next = started
while ContinuousClock.now - started < .milliseconds(Int64(settings.seconds * 1000)) {
    counter += 1
    let items = state.sections.flatMap { section in section.items.map { (section.model.id, $0.id) } }
    var ops: [ListOperation] = []
    let pick = items[Int.random(in: 0..<items.count, using: &rng)]
    switch counter % 4 {
    case 0: ops.append(.insertItem(section: pick.0, id: "n\(counter)", model: ["qty": .number(JSONNumber(Int64(counter)))], at: 0))
    case 1 where items.count > 60: ops.append(.deleteItem(id: pick.1))
    case 2: ops.append(.moveItem(id: pick.1, section: state.sections.randomElement(using: &rng)?.model.id, to: 0))
    default: ops.append(.updateItem(id: pick.1, model: ["qty": .number(JSONNumber(Int64(counter)))]))
    }
    let sent = ContinuousClock.now
    let answer = try await writer.patchList(settings.list, ops)
    let now = ContinuousClock.now
    answered[answer.to] = now
    writeLatencies.append(milliseconds(now - sent))
    if answer.isReset, let snapshot = answer.snapshot {
        state = snapshot
    } else if let stages = try? answer.applied(to: state), let last = stages.last {
        state.sections = last.sections
        state.version = answer.to
    } else {
        state = try await writer.list(settings.list)
    }
    next += interval
    if next > now { try await Task.sleep(until: next) }
}
let elapsed = ContinuousClock.now - started
let final = try await writer.list(settings.list)
let settleDeadline = ContinuousClock.now + .seconds(30)
while logs.contains(where: { $0.state?.version != final.version }) && ContinuousClock.now < settleDeadline {
    try await Task.sleep(for: .milliseconds(20))
}
subscriptions.forEach { $0.dispose() }

// Delay of each (write, follower): from the write's answer to the follower's first
// update at or past that version. A follower may see a change before the writer
// reads its answer; such delays count as 0.
var delays: [Double] = []
var missing = 0
for log in logs {
    let entries = log.log
    var index = 0
    for (version, at) in answered.sorted(by: { $0.key < $1.key }) {
        while index < entries.count && entries[index].version < version { index += 1 }
        guard index < entries.count else {
            missing += 1
            continue
        }
        delays.append(max(0, milliseconds(entries[index].at - at)))
    }
}
delays.sort()
writeLatencies.sort()
let matching = logs.filter { $0.state?.sections == final.sections && $0.state?.version == final.version }.count
let errors = logs.compactMap(\.error)
print(
    """
    writes: \(answered.count) in \(String(format: "%.1f", elapsed / .seconds(1))) s \
    (\(String(format: "%.1f", Double(answered.count) / (elapsed / .seconds(1)))) per second), final version \(final.version)
    write answer latency ms: p50 \(String(format: "%.2f", percentile(writeLatencies, 0.5))) \
    p99 \(String(format: "%.2f", percentile(writeLatencies, 0.99)))
    followers at the final snapshot: \(matching)/\(settings.followers)
    resets seen: \(logs.map(\.resetCount).reduce(0, +)); follower errors: \(errors.count)\(errors.first.map { " (\($0))" } ?? "")
    delay from write answer to follower update, ms (\(delays.count) samples, \(missing) missing): \
    p50 \(String(format: "%.2f", percentile(delays, 0.5))) p90 \(String(format: "%.2f", percentile(delays, 0.9))) \
    p99 \(String(format: "%.2f", percentile(delays, 0.99))) max \(String(format: "%.2f", delays.last ?? .nan))
    """)
try await writer.deleteList(settings.list)
exit(matching == settings.followers && missing == 0 ? 0 : 1)
