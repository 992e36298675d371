// Issue 24's "must show" for optimistic apply: the time from a local write to
// its pending state in a followed 10,000-item list, and the stages emitted for
// the confirmations of writes the server applied as sent (the goal: none).
// See README.md.
//
// Usage: swift build -c release --product OptimisticBenchmarks --product listd
//        .build/release/OptimisticBenchmarks [writes] [seed]
import Foundation
import JSON
import ListClient
import ListClientNetworking
import ListdTestSupport
import SectionDiff
import Synchronization

let arguments = CommandLine.arguments.dropFirst().compactMap { UInt64($0) }
let writes = Int(arguments.first ?? 1_000)
let seed = arguments.dropFirst().first ?? 24
var random = SeededGenerator(seed: seed)
let sectionCount = 10
let perSection = 1_000

func percentile(_ values: [Duration], _ fraction: Double) -> Duration {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * fraction))]
}

func micros(_ duration: Duration) -> String { String(format: "%.1f µs", duration / .microseconds(1)) }

/// A random item operation over `state`; `inserted` are the items this run added (deleted again later).
func operation(
    over state: ListState, number: Int, inserted: inout [String], random: inout SeededGenerator
) -> ListOperation {
    let section = state.sections[Int.random(in: 0..<state.sections.count, using: &random)]
    let item = section.items.isEmpty ? nil : section.items[Int.random(in: 0..<section.items.count, using: &random)]
    switch Int.random(in: 0..<4, using: &random) {
    case 0:
        let id = "new\(number)"
        inserted.append(id)
        return .insertItem(
            section: Identifier(section.model.id) ?? "s0", id: Identifier(id) ?? "x", model: ["n": 1],
            at: Int.random(in: 0...section.items.count, using: &random))
    case 1 where !inserted.isEmpty:
        return .deleteItem(id: Identifier(inserted.removeFirst()) ?? "x")
    case 2 where item != nil:
        return .moveItem(
            id: Identifier(item?.id ?? "") ?? "x", to: Int.random(in: 0..<section.items.count, using: &random))
    default:
        return .updateItem(
            id: Identifier(item?.id ?? "i0_0") ?? "x", model: ["n": .number(JSONNumber(Int64(number)))])
    }
}

// MARK: The pure model: a write to what shows, no locks, no tasks.

var sections: ListSections = []
for s in 0..<sectionCount {
    let items = (0..<perSection).map { i in JSONEntry(id: "i\(s)_\(i)", model: JSONText("{\"n\":\(i)}")) }
    sections.append(ArraySection(model: JSONEntry(id: "s\(s)", model: JSONText("{}")), items: items))
}
var model = OptimisticList(list: "l")
_ = model.receive(.snapshot(ListState(id: "l", name: "", epoch: "e", version: 1, sections: sections)))
var modelTimes: [Duration] = []
var modelInserted: [String] = []
let clock = ContinuousClock()
for number in 0..<writes {
    guard let state = model.shown else { break }
    let op = operation(over: state, number: number, inserted: &modelInserted, random: &random)
    let start = clock.now
    let update = try model.write([op], key: "k\(number)")
    modelTimes.append(clock.now - start)
    // The server applies it as sent: its answer, then its echo, leave the state as it is.
    guard case .changes(let change)? = update.update, let confirmed = model.confirmed, var next = model.shown else {
        _ = model.failed(key: "k\(number)", error: ListClientError(kind: .problem, status: 404, detail: "refused"))
        continue
    }
    next.version = confirmed.version + 1
    _ = model.applied(key: "k\(number)", version: next.version)
    let echo = model.receive(
        .changes(
            ListChange(
                from: confirmed.version, before: confirmed.sections, stages: change.stages, state: next,
                answer: change.answer)))
    if echo?.update != nil {
        print("the echo of write \(number) showed something")
        exit(1)
    }
}

// MARK: The pure model through a view: every write evaluates the view of the whole list.

let viewQuery = "order=-n&limit=100"
var viewModel = OptimisticList(list: "l", view: try ViewSpec(parsing: viewQuery))
_ = viewModel.receive(.snapshot(ListState(id: "l", name: "", epoch: "e", version: 1, sections: sections)))
var viewTimes: [Duration] = []
var viewInserted: [String] = []
for number in 0..<min(writes, 200) {
    guard let state = viewModel.confirmed else { break }
    let op = operation(over: state, number: number, inserted: &viewInserted, random: &random)
    let start = clock.now
    _ = try viewModel.write([op], key: "v\(number)")
    viewTimes.append(clock.now - start)
    _ = viewModel.failed(key: "v\(number)", error: ListClientError(kind: .problem, status: 409, detail: "undone"))
}

// MARK: The follow: a real listd, an OptimisticFollow over its socket transport.

let server = try await ListdProcess()
let client = ListClient(baseURL: server.baseURL, token: nil)
_ = try await client.createList(id: "l")
for s in 0..<sectionCount {
    let items = (0..<perSection).map { i in
        NewItem(id: Identifier("i\(s)_\(i)"), model: ["n": .number(JSONNumber(Int64(i)))])
    }
    _ = try await client.patchList("l", [.insertSection(id: Identifier("s\(s)"), model: [:], items: items)])
}
let follow = OptimisticFollow(
    client: client, list: "l", options: FollowOptions(pollTimeout: .seconds(30), minimumBackoff: .milliseconds(5)))

/// What the consumer saw: when each local update arrived, and the stages of every other update.
struct Seen: Sendable {
    var localArrival: [String: ContinuousClock.Instant] = [:]
    var otherStages = 0
    var otherUpdates = 0
    var confirmations = 0
}
final class SeenBox: Sendable {
    let state = Mutex(Seen())
}
let box = SeenBox()
let stream = follow.updates()
let reader = Task.detached {
    for await update in stream {
        let now = ContinuousClock.now
        box.state.withLock { seen in
            switch update.cause {
            case .local(let key): seen.localArrival[key] = now
            case .confirmed, .rejected, .server:
                if case .confirmed = update.cause { seen.confirmations += 1 }
                seen.otherUpdates += 1
                if case .changes(let change) = update.update { seen.otherStages += change.stages.count }
            }
        }
    }
}
while follow.state == nil { try await Task.sleep(for: .milliseconds(5)) }

var shownTimes: [Duration] = []
var deliveredTimes: [Duration] = []
var inserted: [String] = []
let started = clock.now
for number in 0..<writes {
    guard let state = follow.state else { break }
    let op = operation(over: state, number: number, inserted: &inserted, random: &random)
    let start = clock.now
    let key = try follow.apply([op])
    // `apply` returns once `state` shows the write and the update is emitted.
    let shown = clock.now
    shownTimes.append(shown - start)
    guard follow.pending.keys.contains(key) else {
        print("write \(number) is not pending once apply returned")
        exit(1)
    }
    // Wait for the consumer to hold it, and for the server's confirmation.
    while true {
        let arrival = box.state.withLock { $0.localArrival[key] }
        if let arrival {
            deliveredTimes.append(arrival - start)
            break
        }
        await Task.yield()
    }
    while !follow.pending.isEmpty { try await Task.sleep(for: .microseconds(200)) }
}
let elapsed = clock.now - started
// The consumer has taken every update in once it saw the last write confirmed.
while true {
    let last = box.state.withLock { $0 }
    if last.localArrival.count == writes { break }
    try await Task.sleep(for: .milliseconds(1))
}
try await Task.sleep(for: .milliseconds(200))
let final = box.state.withLock { $0 }
let snapshot = try await client.list("l")
let equal = follow.state?.sections == snapshot.sections
follow.stop()
reader.cancel()
server.stop()

print(
    "\(writes) single-operation writes (insert, update, move, delete) to a \(sectionCount * perSection)-item list, seed \(seed)"
)
print(
    "pure model (OptimisticList.write): median \(micros(percentile(modelTimes, 0.5))), p99 \(micros(percentile(modelTimes, 0.99)))"
)
print(
    "pure model through the view \(viewQuery), \(viewTimes.count) writes: median \(micros(percentile(viewTimes, 0.5))), p99 \(micros(percentile(viewTimes, 0.99)))"
)
print(
    "OptimisticFollow.apply to state shown: median \(micros(percentile(shownTimes, 0.5))), p99 \(micros(percentile(shownTimes, 0.99))), max \(micros(percentile(shownTimes, 1)))"
)
print(
    "apply to the update in the consumer's AsyncStream: median \(micros(percentile(deliveredTimes, 0.5))), p99 \(micros(percentile(deliveredTimes, 0.99)))"
)
print(String(format: "%.2f s for %d writes confirmed one after the other against listd", elapsed / .seconds(1), writes))
print(
    "updates after the local ones (echoes, confirmations): \(final.otherUpdates), stages in them: \(final.otherStages); confirmed by answer: \(final.confirmations)"
)
print("state equals the server's snapshot: \(equal)")
exit(final.otherStages == 0 && equal ? 0 : 1)
