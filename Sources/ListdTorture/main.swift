import Foundation
import JSON
import ListWire
import ListdTestSupport
import TortureCore

// listd-torture: a seeded fault harness (issue 25). See README.md, "Torture testing".

func usage() -> Never {
    say("usage: listd-torture [--minutes M] [--seed S] [--store sqlite|postgres] [--instances N]")
    exit(2)
}

var minutes = 2.0
var seed = UInt64.random(in: 0...UInt64.max)
var store = TortureStore.sqlite
var instances = 3
var arguments = CommandLine.arguments.dropFirst()
while let flag = arguments.popFirst() {
    guard let value = arguments.popFirst() else { usage() }
    switch flag {
    case "--minutes": minutes = Double(value) ?? 0
    case "--seed": seed = UInt64(value) ?? 0
    case "--store": store = TortureStore(rawValue: value) ?? .sqlite
    case "--instances": instances = Int(value) ?? 0
    default: usage()
    }
}
guard minutes > 0, instances > 0 else { usage() }
// As root: into network and mount namespaces of the harness's own (does not return).
Sandbox.enter()

let plan = TorturePlan(seed: seed, seconds: minutes * 60, store: store, instances: instances)
for line in plan.lines { say(line) }
say("replay with: ./dev torture --minutes \(minutes) --seed \(seed) --store \(store.rawValue) --instances \(instances)")

let cluster: Cluster
do {
    cluster = try await Cluster(store: store, instances: plan.instances)
} catch {
    say("could not start listd: \(error)")
    exit(1)
}
let ledger = Ledger()
let run = Run(plan: plan, ledger: ledger, cluster: cluster)

// The lists: t0…, three sections each; counter (one item n); board.
func create(_ list: String, _ body: String) -> Bool {
    guard case .success(let reply) = run.net.send(.put, at: cluster.endpoint(0), "/lists/\(list)", body: body),
        (200..<300).contains(reply.status), let state = run.snapshot(list, instance: 0, source: "setup")
    else { return false }
    ledger.created(list: list, epoch: state.epoch, version: state.version)
    return true
}
let sections = (0..<3).map { #"{"id":"s\#($0)","model":{}}"# }.joined(separator: ",")
for list in plan.lists where !create(list, #"{"sections":[\#(sections)]}"#) {
    say("could not create \(list)")
    exit(1)
}
guard create("counter", #"{"sections":[{"id":"c","model":{},"items":[{"id":"n","model":{"n":0}}]}]}"#),
    create("board", #"{"sections":[{"id":"b","model":{},"items":[]}]}"#)
else {
    say("could not create counter and board")
    exit(1)
}

for index in 0..<plan.writers {
    run.spawn {
        var writer = Writer(run: run, index: index)
        writer.loop()
    }
}
for index in 0..<plan.longPollFollowers { run.spawn { run.longPoll(index) } }
for index in 0..<plan.eventStreamFollowers { run.spawn { run.eventStream(index) } }
for index in 0..<plan.multiListFollowers { run.spawn { run.multiList(index) } }
for index in 0..<plan.readers { run.spawn { run.reader(index) } }
for (index, follower) in plan.viewFollowers.enumerated() {
    if ViewOracle(query: follower.query) == nil {
        say("view \(follower.query): the oracle cannot read it")
        exit(2)
    }
    run.spawn {
        if follower.eventStream {
            run.eventStream(index, follower: follower)
        } else {
            run.longPoll(index, follower: follower)
        }
    }
}

for (index, follower) in plan.clientFollowers.enumerated() {
    run.spawn { run.clientFollow(index, follower: follower) }
}

let nemesis = Task { await run.nemeses() }
var lastReport = 0.0
while ledger.now < plan.seconds {
    try? await Task.sleep(for: .milliseconds(200))
    if ledger.now - lastReport >= 30 {
        lastReport = ledger.now
        let counts = ledger.eventCounts
        say(
            "t+\(Int(ledger.now))s: \(counts["operations"] ?? 0) operations, \(counts["acknowledged writes"] ?? 0) "
                + "acknowledged, \(ledger.violationCount) violations")
    }
}

// The end: writers stop, faults end, followers converge on the final snapshots.
run.stopping.store(true, ordering: .relaxed)
let stoppedAt = ledger.now
await nemesis.value
while run.running.load(ordering: .relaxed) > plan.followerCount {
    try? await Task.sleep(for: .milliseconds(50))
}
var finals: [String: ListState] = [:]
for list in run.allLists {
    guard let state = run.snapshot(list, instance: 0, source: "final GET") else {
        say("could not read the final \(list)")
        exit(1)
    }
    finals[list] = state
    ledger.checkVersions(final: state)
}
run.finals.withLock { $0 = finals }
run.finishing.store(true, ordering: .relaxed)
let converging = ledger.now
while run.running.load(ordering: .relaxed) > 0 {
    if ledger.now - converging > 60 { run.abandon.store(true, ordering: .relaxed) }
    try? await Task.sleep(for: .milliseconds(50))
}

run.checkDiskRecovered(stoppedAt: stoppedAt)

// The final state against what writers were told.
FinalCheck.check(
    expected: run.expectations.withLock { $0 }, lists: plan.lists.compactMap { finals[$0] }, ledger: ledger)
let counter = run.counter.withLock { $0 }
let counted = finals["counter"]?.sections.first?.items.first.flatMap {
    Int(JSONValue.of($0.model.text)["n"]?.intValue ?? -1)
}
ledger.check(
    .ifMatchLinearizable,
    counted.map { $0 >= counter.acknowledged && $0 <= counter.acknowledged + counter.lost } ?? false,
    "counter is \(counted ?? -1) after \(counter.acknowledged) acknowledged and \(counter.lost) lost If-Match increments"
)
if let board = finals["board"] {
    let puts = run.boardPuts.withLock { $0 }
    let items = JSONValue.array(
        board.sections.flatMap(\.items).map { JSONValue.of(#"{"id":"\#($0.id)","model":\#($0.model.text)}"#) }
    )
    .canonicalText
    let last = puts.filter { $0.version != nil }.max { ($0.version ?? 0) < ($1.version ?? 0) }
    let allowed =
        (last?.version == board.version ? [last?.items] : []) + puts.filter { $0.version == nil }.map(\.items)
    ledger.check(
        .ackedWritesExactlyOnce, puts.isEmpty || allowed.contains(items),
        "board@\(board.version) is \(items.prefix(200)), not the last acknowledged PUT (v\(last?.version ?? -1)) "
            + "nor a PUT whose answer was lost")
}

let shrunk = run.shrinkViewMismatch()
cluster.shutdown()
say("")
say("seed \(seed)")
for (event, count) in ledger.eventCounts.sorted(by: { $0.key < $1.key }) { say("  \(event): \(count)") }
if ledger.violationCount > 0 {
    say("nemesis schedule:")
    for event in plan.nemeses { say("  \(event)") }
    if let first = ledger.firstViolationHistory {
        say("the history that shows the first violation (\(first.message)):")
        for line in first.lines { say("  \(line)") }
    }
    for line in shrunk { say(line) }
}
for line in ledger.summary { say(line) }
exit(ledger.violationCount == 0 ? 0 : 1)
