import ListModel
import ListWire
import SectionDiff

// Benchmarks of the SectionDiff engine on seeded workloads; see README.md.

/// The generic element of the workloads: a version change is an update.
struct BenchItem: Diffable, Equatable {
    var id: Int64
    var version: Int64
}

/// SplitMix64, so every run builds the same workloads.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A workload in neutral form: sections of (id, version), old and new.
struct Workload {
    var name: String
    var old: [(section: Int64, items: [(Int64, Int64)])]
    var new: [(section: Int64, items: [(Int64, Int64)])]
    /// Items the workload moved on purpose (shuffled or picked to move).
    var realMoves: Int
    var itemCount: Int { old.reduce(0) { $0 + $1.items.count } + new.reduce(0) { $0 + $1.items.count } }
}

/// Orders `keys` (a sort key per entry) and returns the entries in that order:
/// moved and inserted entries get random keys, so one sort places them all.
func placed(_ entries: [(Int64, Int64)], keys: [Double]) -> [(Int64, Int64)] {
    let order = keys.indices.sorted { keys[$0] < keys[$1] }
    return order.map { entries[$0] }
}

/// (a) DifferenceKit's workload: 100,000 items; delete 20000..<30000, insert
/// 10,000 at 30000, shuffle 0..<2000.
func workloadA() -> Workload {
    var random = SeededGenerator(state: 0xA)
    let old = (0..<Int64(100_000)).map { ($0, Int64(0)) }
    var new = old
    new.removeSubrange(20_000..<30_000)
    new.insert(contentsOf: (0..<Int64(10_000)).map { (1_000_000 + $0, Int64(0)) }, at: 30_000)
    new[0..<2_000].shuffle(using: &random)
    let displaced = (0..<2_000).filter { new[$0].0 != old[$0].0 }.count
    return Workload(name: "(a) 100k flat", old: [(0, old)], new: [(0, new)], realMoves: displaced)
}

/// (b) 100 sections × 1,000 items: 10% deleted, 10% updated, 2.5% moved within
/// their section, 2.5% to another, 10,000 inserted at random places; disjoint picks.
func workloadB() -> Workload {
    var random = SeededGenerator(state: 0xB)
    let sections = 100
    let perSection = 1_000
    let old: [(section: Int64, items: [(Int64, Int64)])] = (0..<sections).map { s in
        (Int64(s), (0..<perSection).map { (Int64(s * perSection + $0), Int64(0)) })
    }
    let total = sections * perSection
    var picks = Array(0..<total)
    picks.shuffle(using: &random)
    // 0 keep, 1 delete, 2 update, 3 move within, 4 move across
    var fate = [UInt8](repeating: 0, count: total)
    for (offset, index) in picks.prefix(total / 4).enumerated() {
        fate[index] = offset < total / 10 ? 1 : offset < total / 5 ? 2 : offset < total / 5 + total / 40 ? 3 : 4
    }
    var entries = [[(Int64, Int64)]](repeating: [], count: sections)
    var keys = [[Double]](repeating: [], count: sections)
    for s in 0..<sections {
        for i in 0..<perSection {
            let g = s * perSection + i
            switch fate[g] {
            case 1: continue
            case 2:
                entries[s].append((Int64(g), 1))
                keys[s].append(Double(i))
            case 3:
                entries[s].append((Int64(g), 0))
                keys[s].append(Double.random(in: 0..<Double(perSection), using: &random))
            case 4:
                var to = Int.random(in: 0..<sections - 1, using: &random)
                if to >= s { to += 1 }
                entries[to].append((Int64(g), 0))
                keys[to].append(Double.random(in: 0..<Double(perSection), using: &random))
            default:
                entries[s].append((Int64(g), 0))
                keys[s].append(Double(i))
            }
        }
    }
    for n in 0..<10_000 {
        let s = Int.random(in: 0..<sections, using: &random)
        entries[s].append((Int64(10_000_000 + n), 0))
        keys[s].append(Double.random(in: 0..<Double(perSection), using: &random))
    }
    let new = (0..<sections).map { (Int64($0), placed(entries[$0], keys: keys[$0])) }
    return Workload(name: "(b) 100×1000", old: old, new: new, realMoves: total / 20)
}

/// (c) n flat items: 0.25% each deleted, updated, moved, inserted; disjoint picks.
func workloadC(count: Int, seed: UInt64) -> Workload {
    var random = SeededGenerator(state: seed)
    let old = (0..<Int64(count)).map { ($0, Int64(0)) }
    let share = count / 400
    var picks = Array(0..<count)
    picks.shuffle(using: &random)
    var fate = [UInt8](repeating: 0, count: count)
    for (offset, index) in picks.prefix(3 * share).enumerated() { fate[index] = UInt8(1 + offset / share) }
    var entries: [(Int64, Int64)] = []
    var keys: [Double] = []
    entries.reserveCapacity(count)
    keys.reserveCapacity(count)
    for i in 0..<count {
        switch fate[i] {
        case 1: continue
        case 2:
            entries.append((Int64(i), 1))
            keys.append(Double(i))
        case 3:
            entries.append((Int64(i), 0))
            keys.append(Double.random(in: 0..<Double(count), using: &random))
        default:
            entries.append((Int64(i), 0))
            keys.append(Double(i))
        }
    }
    for n in 0..<share {
        entries.append((Int64(count + n), 0))
        keys.append(Double.random(in: 0..<Double(count), using: &random))
    }
    let label = count >= 1_000_000 ? "\(count / 1_000_000)M" : "\(count / 1_000)k"
    return Workload(
        name: "(c) \(label) flat", old: [(0, old)], new: [(0, placed(entries, keys: keys))], realMoves: share)
}

func genericSections(_ sections: [(section: Int64, items: [(Int64, Int64)])]) -> [ArraySection<BenchItem, BenchItem>] {
    sections.map {
        ArraySection(
            model: BenchItem(id: $0.section, version: 0), items: $0.items.map { BenchItem(id: $0.0, version: $0.1) })
    }
}

/// listd's types: 26-character string ids and JSON models, built from fresh
/// strings for old and new (as a store would decode them), never shared.
func listdSections(_ sections: [(section: Int64, items: [(Int64, Int64)])]) -> [ArraySection<JSONEntry, JSONEntry>] {
    func id(_ prefix: String, _ number: Int64) -> String {
        let digits = String(number)
        return prefix + String(repeating: "0", count: max(0, 21 - digits.count)) + digits
    }
    return sections.map { section in
        ArraySection(
            model: JSONEntry(
                id: id("sect-", section.section), model: JSONText("{\"title\":\"Section \(section.section)\"}")),
            items: section.items.map {
                JSONEntry(
                    id: id("item-", $0.0),
                    model: JSONText("{\"done\":false,\"qty\":\($0.1),\"title\":\"Item \($0.0)\"}"))
            })
    }
}

/// One measurement: the median over `runs` diffs, plus what the diff reported.
struct Result {
    var median: Duration
    var stages: Int
    var moves: Int
}

func measure<Model, Item>(runs: Int, _ old: [ArraySection<Model, Item>], _ new: [ArraySection<Model, Item>]) -> Result {
    let clock = ContinuousClock()
    var times: [Duration] = []
    var last: StagedChangeset<Model, Item>?
    for _ in 0..<runs {
        let start = clock.now
        let changeset = StagedChangeset(from: old, to: new)
        times.append(clock.now - start)
        last = changeset
    }
    times.sort()
    return Result(median: times[times.count / 2], stages: last?.stages.count ?? 0, moves: last?.itemMoveCount ?? 0)
}

func milliseconds(_ duration: Duration) -> String {
    let value = Double(duration.components.seconds) * 1e3 + Double(duration.components.attoseconds) / 1e15
    // Tenths by integer arithmetic: the benchmark links no math library.
    let tenths = Int(value * 10 + 0.5)
    return "\(tenths / 10).\(tenths % 10) ms"
}

func nanosecondsPerItem(_ duration: Duration, _ items: Int) -> String {
    let ns = Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
    let tenths = Int(ns / Double(items) * 10 + 0.5)
    return "\(tenths / 10).\(tenths % 10)"
}

let arguments = CommandLine.arguments.dropFirst()
let runs = arguments.first.flatMap { Int($0) } ?? 7
let mode = arguments.dropFirst().first
let scalingOnly = mode == "scaling"
if mode == "profile" {
    // `DiffBenchmarks RUNS profile COUNT [generic|listd]`: only the (c) shape at one
    // size and one element type, for profilers (perf, valgrind).
    let rest = Array(arguments.dropFirst(2))
    let count = rest.first.flatMap { Int($0) } ?? 1_000_000
    let workload = workloadC(count: count, seed: 0xC0 + UInt64(count))
    let result: Result
    if rest.dropFirst().first == "listd" {
        result = measure(runs: runs, listdSections(workload.old), listdSections(workload.new))
    } else {
        result = measure(runs: runs, genericSections(workload.old), genericSections(workload.new))
    }
    print(
        "\(count) items: \(nanosecondsPerItem(result.median, workload.itemCount)) ns/item, \(milliseconds(result.median))"
    )
} else {
    print("SectionDiff benchmarks: median of \(runs) runs, release build")
    print("workload        | types   | time      | stages | moves reported | real moves")
    print("----------------|---------|-----------|--------|----------------|-----------")
    for workload in scalingOnly ? [] : [workloadA(), workloadB(), workloadC(count: 1_000_000, seed: 0xC)] {
        let generic = measure(runs: runs, genericSections(workload.old), genericSections(workload.new))
        let listd = measure(runs: runs, listdSections(workload.old), listdSections(workload.new))
        for (types, result) in [("generic", generic), ("listd", listd)] {
            print(
                "\(workload.name.padding(15)) | \(types.padding(7)) | \(milliseconds(result.median).padding(9)) | "
                    + "\(String(result.stages).padding(6)) | \(String(result.moves).padding(14)) | \(workload.realMoves)"
            )
        }
    }

    print("\nScaling, workload (c) shape (ns per item, old + new items):")
    print("items     | generic ns/item | listd ns/item")
    for count in [10_000, 100_000, 1_000_000] {
        let workload = workloadC(count: count, seed: 0xC0 + UInt64(count))
        let generic = measure(runs: runs, genericSections(workload.old), genericSections(workload.new))
        let listd = measure(runs: runs, listdSections(workload.old), listdSections(workload.new))
        print(
            "\(String(count).padding(9)) | \(nanosecondsPerItem(generic.median, workload.itemCount).padding(15)) | "
                + "\(nanosecondsPerItem(listd.median, workload.itemCount))")
    }
}

extension String {
    func padding(_ width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}
