/// An open-addressing hash set of element indices, keyed by the elements'
/// identities, which stay in the caller's arrays.
///
/// Storing indices instead of keys means no key is copied (no reference counting
/// for string ids) and a slot is 8 bytes: the low 32 bits hold index + 1 (0 is
/// empty), the next 17 a tag (the hash bits just below those that pick the home
/// slot), so all but one in 131,072 mismatches are rejected without touching the
/// element. The top 15 bits stay free, so that a slot plus a slot offset in a
/// region fits one 8-byte word (see ``entry(mixed:index:)``). The load factor
/// stays at or below one half and the table is probed linearly, so a lookup
/// reads one or two adjacent slots.
///
/// Callers pass hashes already spread by ``mix(_:)``: the top bits pick the home
/// slot, so the home slots of a *region* (``regionSlots`` consecutive slots, a
/// size that stays in the core's cache) are the hashes that share their top bits.
/// ``Matching`` uses this to fill a large table region by region.
@usableFromInline
struct IdentityTable {
    @usableFromInline let slots: UnsafeMutablePointer<UInt64>
    @usableFromInline let capacity: Int
    @usableFromInline let mask: Int
    @usableFromInline let shift: UInt64
    @usableFromInline let bits: UInt64

    /// Slots per region: 16 Ki slots are 128 KiB, well inside a core's L2 cache
    /// (1 MiB here) even when other processes share it; smaller regions would
    /// mean more buffers to fill at once, larger ones measured slower.
    @usableFromInline static let regionBits: UInt64 = 14
    @usableFromInline static let regionSlots = 1 << Int(regionBits)

    /// Room for `count` indices; call ``deallocate()`` when done.
    ///
    /// With `zeroingByRegion` and more than one region, the slots are left
    /// uninitialized: the caller zeroes each region with ``zeroRegion(_:)`` just
    /// before filling it (and the next one, which probes may run into), so the
    /// region is in the cache when the random writes start, instead of having
    /// been evicted by zeroing the whole table up front.
    @inlinable
    init(count: Int, zeroingByRegion: Bool = false) {
        var bits: UInt64 = 3
        while (1 << bits) < count * 2 { bits += 1 }
        capacity = 1 << Int(bits)
        slots = .allocate(capacity: capacity)
        mask = capacity - 1
        shift = 64 - bits
        self.bits = bits
        if !zeroingByRegion || regionCount == 1 {
            slots.initialize(repeating: 0, count: capacity)
        }
    }

    /// Zeroes region `region` of a table made with `zeroingByRegion`.
    @inlinable
    func zeroRegion(_ region: Int) {
        (slots + region * IdentityTable.regionSlots).initialize(repeating: 0, count: IdentityTable.regionSlots)
    }

    @inlinable
    func deallocate() { slots.deallocate() }

    /// Fibonacci hashing spreads a weak caller-supplied hash (an integer's own
    /// value, say) over all 64 bits; the table reads the top bits for the home
    /// slot and the low 32 for the tag. Multiplying by an odd constant is a
    /// bijection, so distinct hashes stay distinct.
    @inlinable @inline(__always)
    static func mix(_ hash: Int) -> UInt64 {
        UInt64(bitPattern: Int64(hash)) &* 0x9E37_79B9_7F4A_7C15
    }

    /// The number of regions; 1 when the whole table fits in one.
    @inlinable
    var regionCount: Int { capacity > IdentityTable.regionSlots ? capacity >> Int(IdentityTable.regionBits) : 1 }

    /// The region holding the home slot of `mixed` (only when `regionCount > 1`).
    @inlinable @inline(__always)
    func region(_ mixed: UInt64) -> Int { Int(truncatingIfNeeded: mixed >> (shift + IdentityTable.regionBits)) }

    @inlinable @inline(__always)
    func home(_ mixed: UInt64) -> Int { Int(truncatingIfNeeded: mixed >> shift) }

    @inlinable @inline(__always)
    func tag(_ mixed: UInt64) -> UInt64 { ((mixed << bits) >> 47) << 32 }

    /// A slot's value with the home slot's offset in its region in the top 15
    /// bits: what the region-by-region fill buffers, 8 bytes per element.
    @inlinable @inline(__always)
    func entry(mixed: UInt64, index: Int32) -> UInt64 {
        UInt64(home(mixed) & (IdentityTable.regionSlots - 1)) << 49 | tag(mixed)
            | UInt64(UInt32(bitPattern: index) &+ 1)
    }

    /// The index an ``entry(mixed:index:)`` holds.
    @inlinable @inline(__always)
    static func index(ofEntry entry: UInt64) -> Int32 {
        Int32(bitPattern: UInt32(truncatingIfNeeded: entry) &- 1)
    }

    /// ``insert(mixed:index:isEqual:)`` for an ``entry(mixed:index:)`` of region `region`.
    @inlinable @inline(__always)
    func insert(entry: UInt64, region: Int, isEqual: (Int32) -> Bool) -> Int32 {
        insert(
            slot: entry & 0x0001_FFFF_FFFF_FFFF,
            home: region << Int(IdentityTable.regionBits) | Int(truncatingIfNeeded: entry >> 49), isEqual: isEqual)
    }

    /// Stores `index` unless an element with an equal identity is stored; returns
    /// that element's index in that case, or -1 when `index` was stored.
    @inlinable @inline(__always)
    func insert(mixed: UInt64, index: Int32, isEqual: (Int32) -> Bool) -> Int32 {
        insert(slot: tag(mixed) | UInt64(UInt32(bitPattern: index) &+ 1), home: home(mixed), isEqual: isEqual)
    }

    @inlinable @inline(__always)
    func insert(slot value: UInt64, home: Int, isEqual: (Int32) -> Bool) -> Int32 {
        let tag = value & 0xFFFF_FFFF_0000_0000
        var position = home
        while true {
            let slot = slots[position]
            if slot == 0 {
                slots[position] = value
                return -1
            }
            if slot & 0xFFFF_FFFF_0000_0000 == tag {
                let found = Int32(bitPattern: UInt32(truncatingIfNeeded: slot) &- 1)
                if isEqual(found) { return found }
            }
            position = (position &+ 1) & mask
        }
    }

    /// The index stored under an identity equal to the probe's, or -1.
    @inlinable @inline(__always)
    func find(mixed: UInt64, isEqual: (Int32) -> Bool) -> Int32 {
        let tag = tag(mixed)
        var position = home(mixed)
        while true {
            let slot = slots[position]
            if slot == 0 { return -1 }
            if slot & 0xFFFF_FFFF_0000_0000 == tag {
                let found = Int32(bitPattern: UInt32(truncatingIfNeeded: slot) &- 1)
                if isEqual(found) { return found }
            }
            position = (position &+ 1) & mask
        }
    }
}
