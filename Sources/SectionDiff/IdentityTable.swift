/// An open-addressing hash set of element indices, keyed by the elements'
/// identities, which stay in the caller's arrays.
///
/// Storing indices instead of keys means no key is copied (no reference counting
/// for string ids) and a slot is 8 bytes: the low 32 bits hold index + 1 (0 is
/// empty), the high 32 bits a tag from the hash, so most mismatches are rejected
/// without touching the element. The load factor stays at or below one half.
@usableFromInline
struct IdentityTable {
    @usableFromInline let slots: UnsafeMutablePointer<UInt64>
    @usableFromInline let mask: Int
    @usableFromInline let shift: UInt64

    /// Room for `count` indices; call ``deallocate()`` when done.
    @inlinable
    init(count: Int) {
        var bits: UInt64 = 3
        while (1 << bits) < count * 2 { bits += 1 }
        let capacity = 1 << Int(bits)
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: 0, count: capacity)
        mask = capacity - 1
        shift = 64 - bits
    }

    @inlinable
    func deallocate() { slots.deallocate() }

    /// Fibonacci hashing spreads a weak caller-supplied hash over the table.
    @inlinable @inline(__always)
    func home(_ hash: Int) -> Int {
        Int(truncatingIfNeeded: (UInt64(bitPattern: Int64(hash)) &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    @inlinable @inline(__always)
    static func tag(_ hash: Int) -> UInt64 { UInt64(UInt32(truncatingIfNeeded: hash)) << 32 }

    /// Reads the home slot of `hash`, to bring it into the cache ahead of use.
    @inlinable @inline(__always)
    func peek(hash: Int) -> UInt64 { slots[home(hash)] }

    /// Keeps the values read by ``peek(hash:)`` from being optimised away.
    @inlinable @inline(never)
    func keepAlive(_ value: UInt64) {
        if value == 1 { slots[0] = slots[0] }
    }

    /// Stores `index` unless an element with an equal identity is stored; returns
    /// that element's index in that case, or -1 when `index` was stored.
    @inlinable @inline(__always)
    func insert(hash: Int, index: Int32, isEqual: (Int32) -> Bool) -> Int32 {
        let tag = IdentityTable.tag(hash)
        var position = home(hash)
        while true {
            let slot = slots[position]
            if slot == 0 {
                slots[position] = tag | UInt64(UInt32(bitPattern: index) &+ 1)
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
    func find(hash: Int, isEqual: (Int32) -> Bool) -> Int32 {
        let tag = IdentityTable.tag(hash)
        var position = home(hash)
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
