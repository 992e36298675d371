// Write throughput of SQLiteStore (or PostgresStore with --store URL, an
// empty database): single-op writes from many concurrent callers (group
// commit turns them into few fsyncs or COMMITs) and large batches.
//
// Usage: StoreBenchmarks [--callers N] [--seconds S] [--normal-sync] [--store postgres://…] [--writers N]
import Foundation
import ListModel
import ListStore
import PostgresStore

/// Either store, with its counters.
protocol BenchedStore: Store {
    var counters: (writes: Int, commits: Int) { get }
    func close() async
}
extension SQLiteStore: BenchedStore {}
extension PostgresStore: BenchedStore {}

struct Options {
    var callers = 64
    var seconds = 5.0
    var fullSync = true
    var store: String?
    var writers = 2

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--callers": callers = iterator.next().flatMap(Int.init) ?? callers
            case "--seconds": seconds = iterator.next().flatMap(Double.init) ?? seconds
            case "--normal-sync": fullSync = false
            case "--store": store = iterator.next()
            case "--writers": writers = iterator.next().flatMap(Int.init) ?? writers
            default: print("ignoring unknown argument \(argument)")
            }
        }
    }
}

let options = Options(CommandLine.arguments)
let migrations = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Migrations")
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-bench-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }

let configuration = StoreConfiguration(migrationsDirectory: migrations, fullSync: options.fullSync)
let store: any BenchedStore =
    if let url = options.store {
        try await PostgresStore(url: url, configuration: configuration, writers: options.writers)
    } else {
        try await SQLiteStore(path: directory.appendingPathComponent("bench.sqlite").path, configuration: configuration)
    }
let section = Identifier("s")
let lists = (0..<16).map { Identifier("list\($0)")! }
for list in lists { _ = try await store.createList(id: list, name: "bench", sections: [NewSection(id: section)]) }

func report(_ name: String, writes: Int, ops: Int, commits: Int, elapsed: Double) {
    let line = String(
        format:
            "%@: %d writes (%d ops) in %.2f s = %.0f writes/s, %.0f ops/s, %d commits = %.0f commits (fsyncs)/s, %.1f writes/commit",
        name, writes, ops, elapsed, Double(writes) / elapsed, Double(ops) / elapsed, commits,
        Double(commits) / elapsed, Double(writes) / Double(max(1, commits)))
    print(line)
}

// 1. Single-op writes from many callers: each awaits its own acknowledgement.
do {
    let before = store.counters
    let start = Date()
    let deadline = start.addingTimeInterval(options.seconds)
    let writes = try await withThrowingTaskGroup(of: Int.self) { group in
        for caller in 0..<options.callers {
            group.addTask {
                var count = 0
                let list = lists[caller % lists.count]
                while Date() < deadline {
                    let item = Identifier("c\(caller)-\(count)")!
                    _ = try await store.apply(
                        [.insertItem(section: section, item: NewItem(id: item), at: nil)], to: list,
                        expectedVersion: nil)
                    count += 1
                }
                return count
            }
        }
        var total = 0
        for try await count in group { total += count }
        return total
    }
    let elapsed = Date().timeIntervalSince(start)
    let after = store.counters
    report(
        "single-op writes, \(options.callers) callers, synchronous=\(options.fullSync ? "FULL" : "NORMAL")",
        writes: writes, ops: writes, commits: after.commits - before.commits, elapsed: elapsed)
}

// 2. Large batches: 1,000 ops per write, one caller.
do {
    let batches = 20
    let before = store.counters
    let start = Date()
    for batch in 0..<batches {
        let ops: [ListOperation] = (0..<1_000).map { index in
            .insertItem(
                section: section, item: NewItem(id: Identifier("b\(batch)-\(index)")!), at: index % 2 == 0 ? 0 : nil)
        }
        _ = try await store.apply(ops, to: Identifier("list0"), expectedVersion: nil)
    }
    let elapsed = Date().timeIntervalSince(start)
    let after = store.counters
    report(
        "batches of 1,000 ops, 1 caller", writes: batches, ops: batches * 1_000,
        commits: after.commits - before.commits,
        elapsed: elapsed)
}
await store.close()
