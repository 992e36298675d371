// FollowBenchmarks: many followers on one list while a writer writes at a
// steady rate. Reports whether every follower ends at the server's final
// snapshot and the delay from a write's answer to each follower's update.
//
//     .build/release/FollowBenchmarks --url http://127.0.0.1:8080 [--followers 100] [--rate 50] [--seconds 30]
//         [--transport socket|urlsession|raw]
//
// See README.md beside this file.

import Foundation
import HTTP
import HTTPClient
import JSON
import ListClient
import ListClientNetworking
import ReactiveCore
import SectionDiff
import Synchronization

/// How the followers talk to listd.
enum FollowerTransport: String, CaseIterable {
    /// ListClient with `SocketTransport` (the default on Linux for http://).
    case socket
    /// ListClient with `URLSessionTransport` (the default on Apple platforms).
    case urlsession
    /// No ListClient: long-polls over HTTPClientCall reading only `to`, the baseline.
    case raw
}

struct Settings {
    var url = URL(string: "http://127.0.0.1:8080")!
    var followers = 100
    var rate = 50.0
    var seconds = 30.0
    var list = "follow-bench"
    var token = ProcessInfo.processInfo.environment["LISTD_TOKEN"]
    var transport = FollowerTransport.socket

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
            case "--transport":
                guard let chosen = FollowerTransport(rawValue: value) else {
                    print("--transport takes socket, urlsession or raw, not \(value)")
                    exit(2)
                }
                transport = chosen
            default:
                print("unknown flag \(flag); flags: --url --followers --rate --seconds --list --transport")
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
    private let lastVersion = Mutex<Int64?>(nil)
    private let resets = Atomic<Int>(0)
    private let failure = Mutex<String?>(nil)

    func record(_ update: FollowUpdate) {
        let now = ContinuousClock.now
        if case .reset = update { resets.add(1, ordering: .relaxed) }
        guard let state = update.state else { return }
        entries.withLock { $0.append(Entry(version: state.version, at: now)) }
        last.withLock { $0 = state }
        lastVersion.withLock { $0 = state.version }
    }

    /// A raw follower's answer: its version only, no sections.
    func record(version: Int64) {
        let now = ContinuousClock.now
        entries.withLock { $0.append(Entry(version: version, at: now)) }
        lastVersion.withLock { $0 = version }
    }

    func fail(_ error: any Error) { failure.withLock { $0 = "\(error)" } }

    var log: [Entry] { entries.withLock { $0 } }
    var state: ListState? { last.withLock { $0 } }
    var version: Int64? { lastVersion.withLock { $0 } }
    var resetCount: Int { resets.load(ordering: .relaxed) }
    var error: String? { failure.withLock { $0 } }
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

func milliseconds(_ duration: Duration) -> Double { duration / .milliseconds(1) }

/// The baseline follower: no ListClient, no diffing; a thread that long-polls
/// `GET /lists/ID/changes?since=V` over HTTPClientCall on one keep-alive
/// connection and reads `to` from each answer's JSON.
final class RawFollower: Sendable {
    let log: FollowerLog
    private let pool = ConnectionPool()
    private let current = Mutex<HTTPClientCall?>(nil)
    private let stopped = Atomic<Bool>(false)

    init(log: FollowerLog) { self.log = log }

    func start(_ url: URL, list: String, token: String?) {
        Thread.detachNewThread { [self] in run(url, list: list, token: token) }
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        current.withLock { $0 }?.cancel()
    }

    private func run(_ url: URL, list: String, token: String?) {
        guard let host = url.host else { return log.fail(RawFailure("no host in \(url)")) }
        let port = url.port ?? 80
        var headers: HTTPHeaders = ["Accept": "application/json"]
        if let token { headers.add(name: "Authorization", value: "Bearer \(token)") }
        var target = "/lists/\(list)"
        var timeout = Duration.seconds(10)
        while !stopped.load(ordering: .relaxed) {
            let call = HTTPClientCall(pool: pool)
            current.withLock { $0 = call }
            do {
                let response = try call.perform(
                    .init(method: .get, host: host, port: port, target: target, headers: headers, timeout: timeout))
                guard response.status.code == 200 else {
                    throw RawFailure("GET \(target): HTTP \(response.status.code)")
                }
                let json = try JSONValue(parsing: response.body)
                guard let version = (json["to"] ?? json["version"])?.int64Value else {
                    throw RawFailure("GET \(target): no version in the answer")
                }
                if version != log.version { log.record(version: version) }
                target = "/lists/\(list)/changes?since=\(version)&timeout=30"
                timeout = .seconds(45)
            } catch {
                if !stopped.load(ordering: .relaxed) { log.fail(error) }
                return
            }
        }
    }
}

struct RawFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

let settings = Settings(CommandLine.arguments)
// The writer is the same in every mode (ListClient's default transport: sockets
// for http:// on Linux), so the modes differ only in their followers.
let writer = ListClient(baseURL: settings.url, token: settings.token)
print("followers: \(settings.followers) over \(settings.transport.rawValue); writer: \(type(of: writer.transport))")

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
_ = try await writer.createList(id: settings.list, name: "bench", sections: initial)

let logs = (0..<settings.followers).map { _ in FollowerLog() }
// One client (and transport: URLSession or connection pool) per follower, as 100
// apps would have: on Linux one URLSession queues requests beyond the connections
// it opens, and a parked long-poll holds its connection for up to the poll timeout.
func followerTransport() -> any HTTPTransport {
    switch settings.transport {
    case .socket, .raw: SocketTransport()
    case .urlsession: URLSessionTransport()
    }
}
var subscriptions: [any Disposable] = []
var rawFollowers: [RawFollower] = []
if settings.transport == .raw {
    rawFollowers = logs.map { RawFollower(log: $0) }
    for follower in rawFollowers { follower.start(settings.url, list: settings.list, token: settings.token) }
} else {
    subscriptions = logs.map { log in
        ListClient(baseURL: settings.url, token: settings.token, transport: followerTransport())
            .follow(list: settings.list).subscribe { event in
                switch event {
                case .next(let update): log.record(update)
                case .error(let error): log.fail(error)
                case .completed: break
                }
            }
    }
}
let readyDeadline = ContinuousClock.now + .seconds(30)
while logs.contains(where: { $0.version == nil }) && ContinuousClock.now < readyDeadline {
    try await Task.sleep(for: .milliseconds(20))
}
let ready = logs.filter { $0.version != nil }.count
print("followers ready: \(ready)/\(settings.followers)")

// Writes at a steady rate, each on schedule in its own task (a slow answer must
// not lower the rate): insert a new item, update or move one of the initial items
// (never deleted, so concurrent writes cannot conflict), or delete an item this
// writer inserted earlier and saw answered.
final class WriteLog: Sendable {
    struct Write: Sendable {
        var version: Int64
        var sent: ContinuousClock.Instant
        var answered: ContinuousClock.Instant
    }
    private let writes = Mutex<[Write]>([])
    private let inserted = Mutex<[String]>([])
    private let failures = Mutex<[String]>([])

    func record(_ write: Write) { writes.withLock { $0.append(write) } }
    func inserted(_ id: String) { inserted.withLock { $0.append(id) } }
    func takeInserted() -> String? { inserted.withLock { $0.isEmpty ? nil : $0.removeFirst() } }
    func fail(_ error: any Error) { failures.withLock { $0.append("\(error)") } }

    var all: [Write] { writes.withLock { $0 } }
    var errors: [String] { failures.withLock { $0 } }
}

let initialItems = initial.flatMap { section in section.items.map(\.id) }
let sectionIDs = initial.map(\.model.id)
let writes = WriteLog()
let interval = Duration.nanoseconds(Int64(1e9 / settings.rate))
let started = ContinuousClock.now
await withTaskGroup(of: Void.self) { group in
    var counter = 0
    var next = started
    while ContinuousClock.now - started < .milliseconds(Int64(settings.seconds * 1000)) {
        counter += 1
        let number = counter
        var rng = SystemRandomNumberGenerator()
        let item = initialItems[Int.random(in: 0..<initialItems.count, using: &rng)]
        let section = sectionIDs[Int.random(in: 0..<sectionIDs.count, using: &rng)]
        group.addTask {
            var ops: [ListOperation]
            var insertedID: String?
            switch number % 4 {
            case 0:
                insertedID = "n\(number)"
                ops = [
                    .insertItem(
                        section: Identifier(section)!,
                        item: NewItem(
                            id: Identifier("n\(number)")!, model: ["qty": .number(JSONNumber(Int64(number)))]),
                        at: 0)
                ]
            case 1:
                if let id = writes.takeInserted() { ops = [.deleteItem(id: Identifier(id)!)] } else { fallthrough }
            case 2: ops = [.moveItem(id: Identifier(item)!, section: Identifier(section)!, to: 0)]
            default: ops = [.updateItem(id: Identifier(item)!, model: ["qty": .number(JSONNumber(Int64(number)))])]
            }
            let sent = ContinuousClock.now
            do {
                let answer = try await writer.patchList(settings.list, ops)
                writes.record(.init(version: answer.to, sent: sent, answered: ContinuousClock.now))
                if let insertedID { writes.inserted(insertedID) }
            } catch {
                writes.fail(error)
            }
        }
        next += interval
        try? await Task.sleep(until: next)
    }
}
let elapsed = ContinuousClock.now - started
let final = try await writer.list(settings.list)
let settleDeadline = ContinuousClock.now + .seconds(30)
while logs.contains(where: { $0.version != final.version }) && ContinuousClock.now < settleDeadline {
    try await Task.sleep(for: .milliseconds(20))
}
subscriptions.forEach { $0.dispose() }
rawFollowers.forEach { $0.stop() }

// Delay of each (write, follower): from the write's answer (and from its
// request) to the follower's first update at or past that version. A follower may
// see a change before the writer reads its answer; such delays count as 0.
let answered = Dictionary(writes.all.map { ($0.version, $0) }) { first, _ in first }
var delays: [Double] = []
var delaysFromRequest: [Double] = []
var missing = 0
for log in logs {
    let entries = log.log
    var index = 0
    for (version, write) in answered.sorted(by: { $0.key < $1.key }) {
        while index < entries.count && entries[index].version < version { index += 1 }
        guard index < entries.count else {
            missing += 1
            continue
        }
        delays.append(max(0, milliseconds(entries[index].at - write.answered)))
        delaysFromRequest.append(milliseconds(entries[index].at - write.sent))
    }
}
delaysFromRequest.sort()
let writeLatencies = writes.all.map { milliseconds($0.answered - $0.sent) }.sorted()
delays.sort()
let behind = logs.compactMap(\.version).filter { $0 != final.version }
if !behind.isEmpty {
    print(
        "followers behind the final version \(final.version): \(behind.count), at versions \(behind.sorted().prefix(10))…"
    )
}
// A raw follower holds no sections: it matches when it reached the final version.
let matching = logs.filter {
    $0.version == final.version && (settings.transport == .raw || $0.state?.sections == final.sections)
}.count
let errors = logs.compactMap(\.error)
print(
    """
    writes: \(answered.count) in \(String(format: "%.1f", elapsed / .seconds(1))) s \
    (\(String(format: "%.1f", Double(answered.count) / (elapsed / .seconds(1)))) per second), final version \(final.version)
    write answer latency ms: p50 \(String(format: "%.2f", percentile(writeLatencies, 0.5))) \
    p99 \(String(format: "%.2f", percentile(writeLatencies, 0.99)))
    followers at the final snapshot: \(matching)/\(settings.followers)
    resets seen: \(logs.map(\.resetCount).reduce(0, +)); follower errors: \(errors.count)\(errors.first.map { " (\($0))" } ?? ""); \
    write errors: \(writes.errors.count)\(writes.errors.first.map { " (\($0))" } ?? "")
    delay from write answer to follower update, ms (\(delays.count) samples, \(missing) missing): \
    p50 \(String(format: "%.2f", percentile(delays, 0.5))) p90 \(String(format: "%.2f", percentile(delays, 0.9))) \
    p99 \(String(format: "%.2f", percentile(delays, 0.99))) max \(String(format: "%.2f", delays.last ?? .nan))
    delay from write request to follower update, ms: p50 \(String(format: "%.2f", percentile(delaysFromRequest, 0.5))) \
    p90 \(String(format: "%.2f", percentile(delaysFromRequest, 0.9))) p99 \(String(format: "%.2f", percentile(delaysFromRequest, 0.99)))
    """)
try await writer.deleteList(settings.list)
exit(matching == settings.followers && missing == 0 && writes.errors.isEmpty ? 0 : 1)
