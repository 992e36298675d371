import ListdTestSupport
import Testing

@testable import ListStore

/// ``RankedKeys`` against a sorted array: random inserts and removals (with
/// duplicates and keys at the extremes), and after each, rank and key-at-rank
/// probes, including across block splits and merges.
@Suite struct RankedKeysTests {
    static let seeds: [UInt64] = longTests ? Array(1...200) : Array(1...16)

    @Test(arguments: seeds)
    func matchesASortedArray(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        let steps = longTests ? 50_000 : 4_000
        let spread: Int64 = seed % 2 == 0 ? 50 : 1 << 40
        let initial = (0..<Int.random(in: 0..<2_000, using: &rng)).map { _ in
            Int64.random(in: -spread...spread, using: &rng)
        }
        .sorted()
        var model = initial
        var keys = RankedKeys(sorted: initial)
        func probe(_ key: Int64) -> Int {
            var low = 0
            var high = model.count
            while low < high {
                let middle = (low + high) / 2
                if model[middle] < key { low = middle + 1 } else { high = middle }
            }
            return low
        }
        for step in 0..<steps {
            let key: Int64 =
                switch Int.random(in: 0..<10, using: &rng) {
                case 0: .min
                case 1: .max
                default: Int64.random(in: -spread...spread, using: &rng)
                }
            if Bool.random(using: &rng) || model.isEmpty {
                keys.insert(key)
                model.insert(key, at: probe(key))
            } else {
                let existing = Bool.random(using: &rng) ? model[Int.random(in: 0..<model.count, using: &rng)] : key
                let found = model.indices.contains(probe(existing)) && model[probe(existing)] == existing
                #expect(keys.remove(existing) == found, "seed \(seed) step \(step)")
                if found { model.remove(at: probe(existing)) }
            }
            #expect(keys.count == model.count, "seed \(seed) step \(step)")
            let other = Int64.random(in: -spread...spread, using: &rng)
            #expect(keys.rank(below: other) == probe(other), "seed \(seed) step \(step): rank of \(other)")
            #expect(keys.rank(below: key) == probe(key), "seed \(seed) step \(step): rank of \(key)")
            if !model.isEmpty {
                let index = Int.random(in: 0..<model.count, using: &rng)
                #expect(keys.key(at: index) == model[index], "seed \(seed) step \(step): key at \(index)")
            }
            #expect(keys.key(at: model.count) == nil && keys.key(at: -1) == nil)
            if step % 50 == 0 {
                // The one-sweep form agrees with asking key by key, for keys present,
                // absent, repeated and at the extremes.
                var asked = (0..<Int.random(in: 0..<300, using: &rng)).map { _ in
                    Bool.random(using: &rng) && !model.isEmpty
                        ? model[Int.random(in: 0..<model.count, using: &rng)]
                        : Int64.random(in: -spread...spread, using: &rng)
                }
                asked += [.min, .max]
                asked.sort()
                let swept = keys.ranks(ofAscending: asked)
                #expect(swept.count == asked.count)
                for (key, answer) in zip(asked, swept) {
                    #expect(answer.rank == probe(key), "seed \(seed) step \(step): swept rank of \(key)")
                    #expect(answer.present == keys.contains(key), "seed \(seed) step \(step): swept \(key)")
                }
            }
        }
    }
}
