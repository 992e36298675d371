/// The keys of a view's members, a sorted set with order statistics: how many
/// members come before a key (an item's position in the view), and the key at
/// a position (what sits at a window's edge).
///
/// Keys live in sorted blocks of at most ``blockCapacity``, with the running
/// count of keys before each block (the shape of the store's `RankedKeys`,
/// over byte keys): a rank is two binary searches, an insert or removal
/// moves at most one block's keys plus the block counts.
///
/// A value type, `Sendable`; sharing one between threads is its owner's
/// business (a copy shares storage until either side changes it).
///
/// - Complexity: ``rank(of:)``, ``contains(_:)`` and ``key(atRank:)`` are
///   O(log n) key comparisons; ``insert(_:)`` and ``remove(_:)`` are
///   O(log n + B + n/B) for block size B (512): a block's references moved and
///   the counts after it, a few thousand machine words at a million members.
///   A key comparison is a `memcmp` of the keys' common prefix.
public struct ViewMembers: Sendable {
    /// The most keys a block holds; a fuller block splits in two halves.
    public static let blockCapacity = 512

    private var blocks: [[ViewKey]] = []
    /// Keys in all blocks before each block.
    private var before: [Int] = []
    /// How many members there are.
    public private(set) var count = 0

    /// An empty set.
    public init() {}

    /// A set of `keys` given in ascending order without repeats (what sorting
    /// a view's matches gives), in O(n), blocks half full.
    /// - Precondition: `keys` ascend strictly.
    public init(sorted keys: some Sequence<ViewKey>) {
        var block: [ViewKey] = []
        block.reserveCapacity(Self.blockCapacity)
        for key in keys {
            precondition(block.last.map { $0 < key } ?? blocks.last?.last.map { $0 < key } ?? true, "keys ascend")
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

    /// Whether there are no members.
    public var isEmpty: Bool { count == 0 }

    /// How many members are less than `key` (bytewise): the position `key`
    /// has, or would have, in the view. `key` need not be a member (a
    /// ``ViewKey/lowerBound(group:)`` counts the items before a group).
    public func rank(of key: ViewKey) -> Int {
        let b = blockIndex(for: key)
        guard b < blocks.count else { return count }
        return before[b] + Self.lowerBound(key, in: blocks[b])
    }

    /// Whether `key` is a member.
    public func contains(_ key: ViewKey) -> Bool {
        let b = blockIndex(for: key)
        guard b < blocks.count else { return false }
        let at = Self.lowerBound(key, in: blocks[b])
        return at < blocks[b].count && blocks[b][at] == key
    }

    /// The member at `rank` (0-based, in key order); `nil` outside `0..<count`.
    public func key(atRank rank: Int) -> ViewKey? {
        guard rank >= 0, rank < count else { return nil }
        var low = 0
        var high = blocks.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if before[middle] <= rank { low = middle } else { high = middle - 1 }
        }
        return blocks[low][rank - before[low]]
    }

    /// Adds `key`. - Returns: whether it was new (a member is not added twice).
    @discardableResult
    public mutating func insert(_ key: ViewKey) -> Bool {
        if blocks.isEmpty {
            blocks = [[key]]
            before = [0]
            count = 1
            return true
        }
        let b = min(blockIndex(for: key), blocks.count - 1)
        let at = Self.lowerBound(key, in: blocks[b])
        if at < blocks[b].count, blocks[b][at] == key { return false }
        blocks[b].insert(key, at: at)
        if blocks[b].count > Self.blockCapacity {
            let tail = Array(blocks[b][(Self.blockCapacity / 2)...])
            blocks[b].removeLast(tail.count)
            blocks.insert(tail, at: b + 1)
            before.insert(0, at: b + 1)
        }
        recount(from: b + 1)
        return true
    }

    /// Removes `key`. - Returns: whether it was a member.
    @discardableResult
    public mutating func remove(_ key: ViewKey) -> Bool {
        let b = blockIndex(for: key)
        guard b < blocks.count else { return false }
        let at = Self.lowerBound(key, in: blocks[b])
        guard at < blocks[b].count, blocks[b][at] == key else { return false }
        blocks[b].remove(at: at)
        if blocks[b].isEmpty {
            blocks.remove(at: b)
            before.remove(at: b)
            recount(from: b)
        } else {
            recount(from: b + 1)
        }
        return true
    }

    /// The members in ascending order.
    public var sorted: [ViewKey] { blocks.flatMap { $0 } }

    /// The first block whose last key is at least `key` (`blocks.count` when none).
    private func blockIndex(for key: ViewKey) -> Int {
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

    private static func lowerBound(_ key: ViewKey, in block: [ViewKey]) -> Int {
        var low = 0
        var high = block.count
        while low < high {
            let middle = (low + high) / 2
            if block[middle] < key { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
