/// Gapped integer position keys, so an insert or a move writes one row.
///
/// Siblings are ordered by an `Int64` key. New keys go halfway between their
/// neighbours; only when two neighbours are adjacent integers does the section
/// get renumbered (``spread(count:)``), which a run of 32 inserts at the same
/// spot needs at the earliest.
enum PositionKeys {
    /// The distance between keys after renumbering or when appending.
    static let gap: Int64 = 1 << 32
    /// Keys stay within `-limit...limit`, so arithmetic never overflows.
    static let limit: Int64 = 1 << 62

    /// A key strictly between `lower` and `upper` (either may be absent: the
    /// start or the end of the section), or `nil` when none fits.
    static func between(_ lower: Int64?, _ upper: Int64?) -> Int64? {
        switch (lower, upper) {
        case (nil, nil):
            return gap
        case (let lower?, nil):
            if lower <= limit - gap { return lower + gap }
            return midpoint(lower, limit)
        case (nil, let upper?):
            if upper >= -limit + gap { return upper - gap }
            return midpoint(-limit, upper)
        case (let lower?, let upper?):
            return midpoint(lower, upper)
        }
    }

    /// Evenly spaced keys for `count` siblings: gap, 2·gap, …
    static func spread(count: Int) -> [Int64] {
        (0..<count).map { Int64($0 + 1) * gap }
    }

    private static func midpoint(_ lower: Int64, _ upper: Int64) -> Int64? {
        guard upper > lower, upper - lower >= 2 else { return nil }
        return lower + (upper - lower) / 2
    }
}
