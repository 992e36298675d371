/// Gapped integer position keys, so an insert or a move writes one row.
///
/// Siblings are ordered by an `Int64` key. New keys go halfway between their
/// neighbours; only when two neighbours are adjacent integers does the section
/// get renumbered (``spread(count:)``), which with the default gap of 2^32 a
/// run of 32 inserts at the same spot needs at the earliest.
struct PositionKeys {
    /// The distance between keys after renumbering or when appending.
    let gap: Int64
    /// Keys stay within `-limit...limit`, so arithmetic never overflows.
    static let limit: Int64 = 1 << 62

    /// Keys spaced `gap` apart, clamped to 2...2^40.
    init(gap: Int64) {
        self.gap = min(max(gap, 2), 1 << 40)
    }

    /// A key strictly between `lower` and `upper` (either may be absent: the
    /// start or the end of the section), or `nil` when none fits.
    func between(_ lower: Int64?, _ upper: Int64?) -> Int64? {
        switch (lower, upper) {
        case (nil, nil):
            return gap
        case (let lower?, nil):
            if lower <= Self.limit - gap { return lower + gap }
            return midpoint(lower, Self.limit)
        case (nil, let upper?):
            if upper >= -Self.limit + gap { return upper - gap }
            return midpoint(-Self.limit, upper)
        case (let lower?, let upper?):
            return midpoint(lower, upper)
        }
    }

    /// Evenly spaced keys for `count` siblings: gap, 2·gap, … (closer for a
    /// group so large that the gap would leave the key range).
    func spread(count: Int) -> [Int64] {
        let step = max(1, min(gap, Self.limit / Int64(count + 1)))
        return (0..<count).map { Int64($0 + 1) * step }
    }

    private func midpoint(_ lower: Int64, _ upper: Int64) -> Int64? {
        guard upper > lower, upper - lower >= 2 else { return nil }
        return lower + (upper - lower) / 2
    }
}
