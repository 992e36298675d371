// The cost of a view's order statistics (ViewMembers over ViewKeys) at a size.
//
//   swift build -c release --product ViewBenchmarks && .build/release/ViewBenchmarks [members...]
//
// Keys are those of `order=-score` over items {"score": n} with random integer
// scores, ids `i<n>`: 8-byte-exponent numbers plus ids, about 30 bytes a key.
import JSON
import ListModel
import ListView

#if canImport(Glibc)
    import Glibc
#endif

/// Deterministic pseudo-random numbers (SplitMix64).
struct Generator {
    var state: UInt64 = 0x5EED

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// Runs `body` `count` times and prints the time per call.
func measure(_ name: String, _ count: Int, _ body: (Int) -> Void) {
    let start = now()
    for index in 0..<count { body(index) }
    let perCall = (now() - start) / Double(count) * 1e9
    print("  \(name): \(Int(perCall)) ns per call (\(count) calls)")
}

let spec: ViewSpec
do { spec = try ViewSpec(parsing: "order=-score") } catch { fatalError("\(error)") }
let sizes = CommandLine.arguments.dropFirst().compactMap { Int($0) }
var generator = Generator()
for size in sizes.isEmpty ? [100_000, 1_000_000] : sizes {
    var keys: [ViewKey] = []
    keys.reserveCapacity(size)
    for index in 0..<size {
        let model: JSONValue = ["score": .number(JSONNumber(generator.below(size * 10)))]
        keys.append(spec.key(of: model, id: Identifier("i\(index)") ?? "x", at: ListPosition(section: 0, item: 0)))
    }
    print("\(size) members, \(keys.reduce(0) { $0 + $1.bytes.count } / size) bytes a key:")
    var members = ViewMembers()
    measure("insert (random order, growing to \(size))", size) { members.insert(keys[$0]) }
    measure("rank(of:) a member", 200_000) { _ in _ = members.rank(of: keys[generator.below(size)]) }
    measure("key(atRank:)", 200_000) { _ in _ = members.key(atRank: generator.below(size)) }
    measure("remove then insert (an item moving)", 100_000) { _ in
        let key = keys[generator.below(size)]
        members.remove(key)
        members.insert(key)
    }
    let sorted = members.sorted
    measure("init(sorted:) of all", 3) { _ in _ = ViewMembers(sorted: sorted).count }
}
