/// The longest strictly increasing subsequence of a sequence of distinct values,
/// computed over *blocks* so that its cost beyond reading the input depends on
/// the moved elements only, with buffers reused across calls (one call per section).
///
/// A block is a maximal run of elements that are consecutive both in the
/// sequence and in value order (no other element's value lies between two
/// neighbours of the run). The caller says where blocks continue while it
/// appends (``append(_:continuesBlock:)``), which it can decide in O(1)
/// amortized from its own data. Some longest subsequence takes every block
/// whole or not at all: a block's values form an interval that holds no other
/// element's value, and its positions an interval that holds no other
/// element's position, so anything chained before or after one element of the
/// block chains before or after all of it. The search thus runs on r blocks
/// weighted by their lengths: a Fenwick tree over the blocks' value ranks gives,
/// for each block, the best chain ending before it in O(log r).
///
/// The result is exactly the subsequence patience sorting finds (each element's
/// predecessor is the latest earlier element whose chain is one shorter, and the
/// chain ends at the latest element of greatest length): a predecessor is always
/// the last element of its block, so ties are broken towards the latest block,
/// as the tree's keys (chain length, then block number) do.
///
/// Every block boundary lies next to a moved element (one outside the result) in
/// position, or between two kept neighbours whose values enclose a moved
/// element's value, so r ≤ 3k + 1 for k moved elements.
///
/// - Complexity: O(n) to append n elements, then O(r log r) = O(k log k) in
///   ``run()``.
@usableFromInline
struct LongestIncreasingSubsequence {
    /// Value of each block's first element, in sequence order.
    @usableFromInline var blockStart: [Int32] = []
    /// Number of elements in each block.
    @usableFromInline var blockWeight: [Int32] = []
    /// Output: whether each block is in the subsequence kept in place.
    @usableFromInline var blockKept: [Bool] = []
    @usableFromInline var order: [Int32] = []
    @usableFromInline var rank: [Int32] = []
    @usableFromInline var tree: [Int64] = []
    @usableFromInline var previous: [Int32] = []

    @usableFromInline init() {}

    /// Clears the input for the next sequence, keeping capacity.
    @usableFromInline
    mutating func reset() {
        blockStart.removeAll(keepingCapacity: true)
        blockWeight.removeAll(keepingCapacity: true)
    }

    /// Appends the next element. `continuesBlock` is true only when the previous
    /// element's value is below `value` and no element of the sequence (earlier or
    /// later) has a value strictly between the two.
    @inlinable @inline(__always)
    mutating func append(_ value: Int32, continuesBlock: Bool) {
        if continuesBlock && !blockWeight.isEmpty {
            blockWeight[blockWeight.count - 1] &+= 1
        } else {
            blockStart.append(value)
            blockWeight.append(1)
        }
    }

    /// Fills ``blockKept``; returns the subsequence's length (kept elements).
    @usableFromInline
    mutating func run() -> Int {
        let count = blockStart.count
        blockKept.removeAll(keepingCapacity: true)
        blockKept.append(contentsOf: repeatElement(false, count: count))
        if count == 0 { return 0 }
        var sorted = true
        for b in 1..<count where blockStart[b] < blockStart[b - 1] {
            sorted = false
            break
        }
        if sorted {
            // Nothing moved: one increasing run (only possible with count == 1,
            // unless the caller split blocks conservatively).
            var total = 0
            for b in 0..<count {
                blockKept[b] = true
                total += Int(blockWeight[b])
            }
            return total
        }
        order.removeAll(keepingCapacity: true)
        order.append(contentsOf: 0..<Int32(count))
        blockStart.withUnsafeBufferPointer { start in
            order.sort { start[Int($0)] < start[Int($1)] }
        }
        rank.removeAll(keepingCapacity: true)
        rank.append(contentsOf: repeatElement(0, count: count))
        for (position, b) in order.enumerated() { rank[Int(b)] = Int32(position) }
        tree.removeAll(keepingCapacity: true)
        tree.append(contentsOf: repeatElement(0, count: count + 1))
        previous.removeAll(keepingCapacity: true)
        previous.append(contentsOf: repeatElement(-1, count: count))
        // Key of a block: chain length in the high bits, block number in the low
        // 32, so the maximum is the longest chain and, among equals, the latest.
        var best: Int64 = 0
        tree.withUnsafeMutableBufferPointer { tree in
            for b in 0..<count {
                let r = Int(rank[b])
                var before: Int64 = 0
                var i = r
                while i > 0 {
                    before = max(before, tree[i])
                    i &= i - 1
                }
                if before != 0 { previous[b] = Int32(truncatingIfNeeded: before & 0xFFFF_FFFF) }
                let key = ((before >> 32) + Int64(blockWeight[b])) << 32 | Int64(b)
                best = max(best, key)
                i = r + 1
                while i <= count {
                    tree[i] = max(tree[i], key)
                    i += i & -i
                }
            }
        }
        var cursor = Int32(truncatingIfNeeded: best & 0xFFFF_FFFF)
        while cursor >= 0 {
            blockKept[Int(cursor)] = true
            cursor = previous[Int(cursor)]
        }
        return Int(best >> 32)
    }

    /// Walks the elements in the order they were appended after ``run()``: call
    /// once per element with the same `cursor`; returns whether it is kept.
    @inlinable @inline(__always)
    func isNextKept(_ cursor: inout (block: Int, left: Int32)) -> Bool {
        if cursor.left == 0 {
            cursor.block += 1
            cursor.left = blockWeight[cursor.block]
        }
        cursor.left -= 1
        return blockKept[cursor.block]
    }
}
