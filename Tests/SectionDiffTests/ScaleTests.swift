import ListdTestSupport
import Testing

@testable import SectionDiff

/// Patience sorting with a full binary search over the tails, as a reference for
/// the block-based search: returns which elements are kept.
func referencePatienceKept(_ values: [Int32]) -> [Bool] {
    var tails: [Int] = []
    var previous = [Int](repeating: -1, count: values.count)
    for index in values.indices {
        var low = 0
        var high = tails.count
        while low < high {
            let middle = (low + high) / 2
            if values[tails[middle]] < values[index] { low = middle + 1 } else { high = middle }
        }
        previous[index] = low > 0 ? tails[low - 1] : -1
        if low == tails.count { tails.append(index) } else { tails[low] = index }
    }
    var kept = [Bool](repeating: false, count: values.count)
    var cursor = tails.last ?? -1
    while cursor >= 0 {
        kept[cursor] = true
        cursor = previous[cursor]
    }
    return kept
}

/// Runs the engine's block search on `values` (distinct), telling it where blocks
/// continue from the values' ranks, and returns which elements are kept.
func blockSearchKept(_ values: [Int32], _ lis: inout LongestIncreasingSubsequence) -> (kept: [Bool], length: Int) {
    let sorted = values.sorted()
    var next: [Int32: Int32] = [:]
    for (a, b) in zip(sorted, sorted.dropFirst()) { next[a] = b }
    lis.reset()
    for index in values.indices {
        lis.append(values[index], continuesBlock: index > 0 && next[values[index - 1]] == values[index])
    }
    let length = lis.run()
    var cursor = (block: -1, left: Int32(0))
    return (values.map { _ in lis.isNextKept(&cursor) }, length)
}

/// An item whose identity hash is chosen by the test, to steer the identity table.
struct ShapedItem: Diffable, Hashable, Sendable {
    var id: Int
    var version: Int = 0
    var identityHash: Int
}

@Suite struct ScaleTests {
    /// The block search keeps exactly what patience sorting keeps, on shuffled,
    /// nearly sorted and block-shuffled sequences with gaps in their values.
    @Test func blockSearchMatchesPatienceSorting() {
        var lis = LongestIncreasingSubsequence()
        for number in 0..<3_000 {
            let seed: UInt64 = 0x1157_0000 &+ UInt64(number)
            var random = SeededGenerator(seed: seed)
            let count = Int.random(in: 0...60, using: &random)
            var values = (0..<count).map { Int32($0 * 3 + Int.random(in: 0...2, using: &random)) }
            switch number % 3 {
            case 0:
                values.shuffle(using: &random)
            case 1:
                for _ in 0..<Int.random(in: 0...3, using: &random) where values.count > 1 {
                    let moved = values.remove(at: Int.random(in: 0..<values.count, using: &random))
                    values.insert(moved, at: Int.random(in: 0...values.count, using: &random))
                }
            default:
                var blocks: [[Int32]] = []
                var rest = values[...]
                while !rest.isEmpty {
                    let length = Int.random(in: 1...8, using: &random)
                    blocks.append(Array(rest.prefix(length)))
                    rest = rest.dropFirst(length)
                }
                blocks.shuffle(using: &random)
                values = blocks.flatMap { $0 }
            }
            let expected = referencePatienceKept(values)
            let found = blockSearchKept(values, &lis)
            #expect(found.kept == expected, "seed \(seed), values \(values)")
            #expect(found.length == expected.filter { $0 }.count, "seed \(seed)")
        }
    }

    /// Large enough that the identity table is filled region by region; several
    /// sections, moves within and across them, updates, deletes and inserts.
    @Test func largeDiffFillsTheTableByRegion() throws {
        let seed: UInt64 = 0x5CA1_E000_0001
        var random = SeededGenerator(seed: seed)
        let sections = 4
        let perSection = 12_000
        let old = (0..<sections).map { s in section(s, Array((s * perSection)..<((s + 1) * perSection))) }
        #expect(IdentityTable(count: sections * perSection).regionCount > 1)
        var new = old
        var nextID = sections * perSection
        for _ in 0..<300 {
            let s = Int.random(in: 0..<sections, using: &random)
            let t = Int.random(in: 0..<sections, using: &random)
            switch Int.random(in: 0..<4, using: &random) {
            case 0:
                new[s].items.remove(at: Int.random(in: 0..<new[s].items.count, using: &random))
            case 1:
                new[s].items.insert(TestItem(id: nextID), at: Int.random(in: 0...new[s].items.count, using: &random))
                nextID += 1
            case 2:
                new[s].items[Int.random(in: 0..<new[s].items.count, using: &random)].version += 1
            default:
                let item = new[s].items.remove(at: Int.random(in: 0..<new[s].items.count, using: &random))
                new[t].items.insert(item, at: Int.random(in: 0...new[t].items.count, using: &random))
            }
        }
        let verified = try verify(old, new, seed: seed)
        #expect(verified.changeset.itemMoveCount > 0)
    }

    /// Hashes steered so that items crowd the first regions and overflow their buffers;
    /// duplicates among them must still pair first with first, and moves stay minimal.
    @Test func overflowingRegionKeepsDuplicateOrderAndMinimalMoves() throws {
        // The inverse of the table's multiplier, so a test can pick the mixed hash.
        let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15
        var inverse = multiplier
        for _ in 0..<6 { inverse = inverse &* (2 &- multiplier &* inverse) }
        #expect(inverse &* multiplier == 1)
        let count = 40_000
        func item(_ id: Int, version: Int = 0) -> ShapedItem {
            // Home slot = id (the top 17 bits of the mixed hash, for a table of 2^17).
            ShapedItem(id: id, version: version, identityHash: Int(truncatingIfNeeded: (UInt64(id) << 47) &* inverse))
        }
        let table = IdentityTable(count: count)
        #expect(table.capacity == 1 << 17 && table.regionCount == (1 << 17) / IdentityTable.regionSlots)
        // Homes 0..<count fill the first regions completely: each gets far more
        // than its buffer's room (about twice its fair share at most).
        #expect(IdentityTable.regionSlots > 2 * count / table.regionCount)
        table.deallocate()
        let seed: UInt64 = 0x0F10_0000_0001
        var random = SeededGenerator(seed: seed)
        var oldItems = (0..<count).map { item($0) }
        for _ in 0..<50 {
            oldItems[Int.random(in: 0..<count, using: &random)] = item(Int.random(in: 0..<count, using: &random))
        }
        var newItems = oldItems
        for _ in 0..<200 {
            let moved = newItems.remove(at: Int.random(in: 0..<newItems.count, using: &random))
            newItems.insert(moved, at: Int.random(in: 0...newItems.count, using: &random))
            newItems[Int.random(in: 0..<newItems.count, using: &random)].version += 1
            newItems.remove(at: Int.random(in: 0..<newItems.count, using: &random))
            newItems.insert(
                item(count + Int.random(in: 0..<1_000, using: &random)),
                at: Int.random(in: 0...newItems.count, using: &random))
        }
        typealias Section = ArraySection<ShapedItem, ShapedItem>
        let old = [Section(model: item(0), items: oldItems)]
        let new = [Section(model: item(0), items: newItems)]
        let changeset = StagedChangeset(from: old, to: new)
        #expect(try changeset.apply(to: old) == new, "seed \(seed)")

        // Reference pairing: the k-th occurrence of an identity in old pairs with
        // the k-th in new only for k = 1.
        var firstOld: [Int: Int] = [:]
        for (index, element) in oldItems.enumerated() where firstOld[element.id] == nil { firstOld[element.id] = index }
        var seen = Set<Int>()
        var survivors: [Int32] = []
        for element in newItems where seen.insert(element.id).inserted {
            if let index = firstOld[element.id] { survivors.append(Int32(index)) }
        }
        let kept = referencePatienceKept(survivors).filter { $0 }.count
        #expect(changeset.itemMoveCount == survivors.count - kept, "seed \(seed)")
    }
}
