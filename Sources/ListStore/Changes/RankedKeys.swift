/// A sorted multiset of position keys with order statistics: how many keys
/// are below a value, and the key at a rank.
///
/// Keys live in sorted blocks of at most ``blockCapacity``, with the running
/// count of keys before each block, so a rank is two binary searches and an
/// insert or removal moves at most one block's keys plus the block counts.
///
/// - Complexity: `rank(below:)` and `key(at:)` are O(log n); `insert` and
///   `remove` are O(log n + B + n/B) for block size B (256), a few hundred
///   machine words even at a million keys.
struct RankedKeys: Sendable {
    static let blockCapacity = 256

    private var blocks: [[Int64]] = []
    /// Keys in all blocks before each block.
    private var before: [Int] = []
    private(set) var count = 0

    init() {}

    /// Keys given in ascending order.
    init<S: Sequence>(sorted keys: S) where S.Element == Int64 {
        var block: [Int64] = []
        block.reserveCapacity(Self.blockCapacity)
        for key in keys {
            block.append(key)
            if block.count == Self.blockCapacity / 2 {
                blocks.append(block)
                block = []
                block.reserveCapacity(Self.blockCapacity)
            }
        }
        if !block.isEmpty { blocks.append(block) }
        recount(from: 0)
    }

    /// Approximate heap bytes held.
    var byteCount: Int { count * 8 + blocks.count * 48 + before.count * 8 + 64 }

    /// How many keys are less than `key`.
    func rank(below key: Int64) -> Int {
        let b = blockIndex(for: key)
        guard b < blocks.count else { return count }
        return before[b] + Self.lowerBound(key, in: blocks[b])
    }

    /// Whether `key` is among the keys. - Complexity: O(log n).
    func contains(_ key: Int64) -> Bool {
        let b = blockIndex(for: key)
        guard b < blocks.count else { return false }
        let at = Self.lowerBound(key, in: blocks[b])
        return at < blocks[b].count && blocks[b][at] == key
    }

    /// For keys given in ascending order, how many keys are less than each
    /// and whether it is among them: ``rank(below:)`` and ``contains(_:)`` for
    /// all of them in one sweep of the blocks.
    /// - Complexity: O(m log B + b) for m keys asked, block size B and b
    ///   blocks, against O(m log n) asked one at a time; and the blocks are
    ///   read in order, so a catch-up's thousands of keys cost a few cache
    ///   misses each rather than a binary search's worth.
    func ranks(ofAscending keys: [Int64]) -> [(rank: Int, present: Bool)] {
        var result: [(rank: Int, present: Bool)] = []
        result.reserveCapacity(keys.count)
        var b = 0
        for key in keys {
            while b < blocks.count, let last = blocks[b].last, last < key { b += 1 }
            guard b < blocks.count else {
                result.append((count, false))
                continue
            }
            let at = Self.lowerBound(key, in: blocks[b])
            result.append((before[b] + at, at < blocks[b].count && blocks[b][at] == key))
        }
        return result
    }

    /// The key at rank `index` (0-based), `nil` outside `0..<count`.
    func key(at index: Int) -> Int64? {
        guard index >= 0, index < count else { return nil }
        var low = 0
        var high = blocks.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if before[middle] <= index { low = middle } else { high = middle - 1 }
        }
        return blocks[low][index - before[low]]
    }

    mutating func insert(_ key: Int64) {
        if blocks.isEmpty {
            blocks = [[key]]
            before = [0]
            count = 1
            return
        }
        let b = min(blockIndex(for: key), blocks.count - 1)
        let at = Self.lowerBound(key, in: blocks[b])
        blocks[b].insert(key, at: at)
        count += 1
        if blocks[b].count > Self.blockCapacity {
            let tail = Array(blocks[b][(Self.blockCapacity / 2)...])
            blocks[b].removeLast(tail.count)
            blocks.insert(tail, at: b + 1)
            before.insert(0, at: b + 1)
        }
        recount(from: b + 1)
    }

    /// Removes one copy of `key`. - Returns: whether it was there.
    @discardableResult
    mutating func remove(_ key: Int64) -> Bool {
        let b = blockIndex(for: key)
        guard b < blocks.count else { return false }
        let at = Self.lowerBound(key, in: blocks[b])
        guard at < blocks[b].count, blocks[b][at] == key else { return false }
        blocks[b].remove(at: at)
        count -= 1
        if blocks[b].isEmpty {
            blocks.remove(at: b)
            before.remove(at: b)
            recount(from: b)
        } else {
            recount(from: b + 1)
        }
        return true
    }

    /// The first block whose last key is at least `key` (`blocks.count` when none).
    private func blockIndex(for key: Int64) -> Int {
        var low = 0
        var high = blocks.count
        while low < high {
            let middle = (low + high) / 2
            if let last = blocks[middle].last, last < key { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private mutating func recount(from start: Int) {
        if before.count != blocks.count { before = [Int](repeating: 0, count: blocks.count) }
        var total = start == 0 ? 0 : before[start - 1] + blocks[start - 1].count
        for b in start..<blocks.count {
            before[b] = total
            total += blocks[b].count
        }
        count = total
    }

    private static func lowerBound(_ key: Int64, in block: [Int64]) -> Int {
        var low = 0
        var high = block.count
        while low < high {
            let middle = (low + high) / 2
            if block[middle] < key { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
