/// Which old section and item each new one is (by identity), and which matched
/// ones changed content: the only part of the diff that reads the elements.
///
/// Everything is integer indices so that the planning that follows is not
/// generic. Items are numbered globally (section by section, in order).
///
/// Duplicate identities are resolved deterministically: the first old occurrence
/// of an identity is matched with the first new occurrence; every later old
/// occurrence is deleted and every later new occurrence is inserted. The
/// changeset still turns the old state into the new one exactly.
@usableFromInline
struct Matching {
    /// Old section → matching new section, or -1 (deleted).
    @usableFromInline var oldSectionMatch: [Int32]
    /// New section → matching old section, or -1 (inserted).
    @usableFromInline var newSectionMatch: [Int32]
    /// New section → whether it matched and its model's content differs.
    @usableFromInline var sectionChanged: [Bool]
    /// Global number of each old section's first item; one extra entry for the total.
    @usableFromInline var oldStart: [Int]
    /// Global number of each new section's first item; one extra entry for the total.
    @usableFromInline var newStart: [Int]
    /// Old item → its old section.
    @usableFromInline var oldSectionOf: [Int32]
    /// New item → its new section.
    @usableFromInline var newSectionOf: [Int32]
    /// Old item → matching new item, or -1 (deleted).
    @usableFromInline var oldMatch: [Int32]
    /// New item → matching old item, or -1 (inserted).
    @usableFromInline var newMatch: [Int32]
    /// New item → whether it matched and its content differs.
    @usableFromInline var itemChanged: [Bool]

    /// Matches `new` against `old`.
    ///
    /// Old items are hashed once each; new items only when they do not follow
    /// the old item their predecessor's match predicts. A table larger than one
    /// cache region is filled region by region (see ``IdentityTable``), so its
    /// random writes hit the cache.
    ///
    /// - Complexity: O(n) expected for n sections and items in both states.
    @inlinable
    init<Model, Item>(old: [ArraySection<Model, Item>], new: [ArraySection<Model, Item>]) {
        precondition(old.count < Int32.max && new.count < Int32.max, "too many sections for the diff")
        oldSectionMatch = Array(repeating: -1, count: old.count)
        newSectionMatch = Array(repeating: -1, count: new.count)
        sectionChanged = Array(repeating: false, count: new.count)

        // Sections.
        let sectionTable = IdentityTable(count: old.count)
        defer { sectionTable.deallocate() }
        for s in old.indices {
            let model = old[s].model
            let found = sectionTable.insert(mixed: IdentityTable.mix(model.identityHash), index: Int32(s)) {
                old[Int($0)].model.id == model.id
            }
            _ = found  // A later duplicate stays unmatched: it is deleted.
        }
        for t in new.indices {
            let model = new[t].model
            let s = sectionTable.find(mixed: IdentityTable.mix(model.identityHash)) {
                old[Int($0)].model.id == model.id
            }
            if s >= 0 && oldSectionMatch[Int(s)] < 0 {
                oldSectionMatch[Int(s)] = Int32(t)
                newSectionMatch[t] = s
                sectionChanged[t] = !old[Int(s)].model.hasSameContent(as: model)
            }
        }

        // Items, across all sections.
        var oldStart = [Int]()
        oldStart.reserveCapacity(old.count + 1)
        var total = 0
        for section in old {
            oldStart.append(total)
            total += section.items.count
        }
        oldStart.append(total)
        let oldTotal = total
        var newStart = [Int]()
        newStart.reserveCapacity(new.count + 1)
        total = 0
        for section in new {
            newStart.append(total)
            total += section.items.count
        }
        newStart.append(total)
        let newTotal = total
        precondition(oldTotal < Int32.max && newTotal < Int32.max, "too many items for the diff")

        var oldSectionOf = [Int32](repeating: 0, count: oldTotal)
        var newSectionOf = [Int32](repeating: 0, count: newTotal)
        var oldMatch = [Int32](repeating: -1, count: oldTotal)
        var newMatch = [Int32](repeating: -1, count: newTotal)
        var itemChanged = [Bool](repeating: false, count: newTotal)

        let table = IdentityTable(count: oldTotal, zeroingByRegion: true)
        defer { table.deallocate() }
        oldSectionOf.withUnsafeMutableBufferPointer { oldSectionOf in
            oldMatch.withUnsafeMutableBufferPointer { oldMatch in
                @inline(__always) func oldItem(_ g: Int) -> Item {
                    let os = Int(oldSectionOf[g])
                    return old[os].items[g - oldStart[os]]
                }
                // Later duplicates are marked -2: never matched, so deleted. Equal
                // identities reach the table in index order in both builds below, so
                // the first occurrence is the one stored.
                @inline(__always) func store(_ mixed: UInt64, _ g: Int) {
                    let earlier = table.insert(mixed: mixed, index: Int32(g)) { other in
                        oldItem(Int(other)).id == oldItem(g).id
                    }
                    if earlier >= 0 { oldMatch[g] = -2 }
                }
                let regions = table.regionCount
                if regions == 1 {
                    // The table fits in the cache: fill it in order.
                    for s in old.indices {
                        let base = oldStart[s]
                        old[s].items.withUnsafeBufferPointer { items in
                            for i in items.indices { oldSectionOf[base + i] = Int32(s) }
                            for i in items.indices { store(IdentityTable.mix(items[i].identityHash), base + i) }
                        }
                    }
                } else {
                    // Filled in random order, a table larger than the cache costs a
                    // memory access per item. So first append each (hash, index) to
                    // the buffer of its region (sequential writes into a few streams),
                    // then fill the table one region at a time, which stays in cache.
                    // A region's buffer has room for a comfortable margin over its
                    // expected share; the rare overflow is kept aside and stored
                    // last, which keeps equal identities in index order (they share
                    // a region, and once a buffer is full it stays full).
                    let room = oldTotal / regions + oldTotal / (regions * 8) + 64
                    let buffered = UnsafeMutablePointer<UInt64>.allocate(capacity: regions * room)
                    let fill = UnsafeMutablePointer<Int>.allocate(capacity: regions)
                    fill.initialize(repeating: 0, count: regions)
                    defer {
                        buffered.deallocate()
                        fill.deallocate()
                    }
                    var overflow: [Int32] = []
                    for s in old.indices {
                        let base = oldStart[s]
                        old[s].items.withUnsafeBufferPointer { items in
                            for i in items.indices {
                                oldSectionOf[base + i] = Int32(s)
                                let mixed = IdentityTable.mix(items[i].identityHash)
                                let r = table.region(mixed)
                                let filled = fill[r]
                                if filled < room {
                                    buffered[r * room + filled] = table.entry(mixed: mixed, index: Int32(base + i))
                                    fill[r] = filled + 1
                                } else {
                                    overflow.append(Int32(base + i))
                                }
                            }
                        }
                    }
                    table.zeroRegion(0)
                    for r in 0..<regions {
                        if r + 1 < regions { table.zeroRegion(r + 1) }
                        for e in (r * room)..<(r * room + fill[r]) {
                            let entry = buffered[e]
                            let g = Int(IdentityTable.index(ofEntry: entry))
                            let earlier = table.insert(entry: entry, region: r) { other in
                                oldItem(Int(other)).id == oldItem(g).id
                            }
                            if earlier >= 0 { oldMatch[g] = -2 }
                        }
                    }
                    for g in overflow {
                        store(IdentityTable.mix(oldItem(Int(g)).identityHash), Int(g))
                    }
                }
                newMatch.withUnsafeMutableBufferPointer { newMatch in
                    newSectionOf.withUnsafeMutableBufferPointer { newSectionOf in
                        itemChanged.withUnsafeMutableBufferPointer { itemChanged in
                            // Most items follow the item that followed their
                            // predecessor before: try that one without hashing, then
                            // the one after it (an old item was deleted), then the
                            // place the order left at its last jump (the item before
                            // this one moved here from elsewhere). Only unmatched first
                            // occurrences qualify, so duplicates pair exactly as through
                            // the table; the table is read only when all three miss.
                            var predicted = 0
                            var resume = 0
                            for t in new.indices {
                                let base = newStart[t]
                                new[t].items.withUnsafeBufferPointer { items in
                                    for j in items.indices {
                                        let h = base + j
                                        newSectionOf[h] = Int32(t)
                                        @inline(__always) func isFree(_ p: Int) -> Bool {
                                            p < oldTotal && oldMatch[p] == -1 && oldItem(p).id == items[j].id
                                        }
                                        var g: Int32 = -1
                                        if isFree(predicted) {
                                            g = Int32(predicted)
                                        } else if isFree(predicted + 1) {
                                            g = Int32(predicted + 1)
                                        } else if resume != predicted && isFree(resume) {
                                            g = Int32(resume)
                                        }
                                        if g < 0 {
                                            g = table.find(mixed: IdentityTable.mix(items[j].identityHash)) {
                                                other in oldItem(Int(other)).id == items[j].id
                                            }
                                        }
                                        if g >= 0 && oldMatch[Int(g)] == -1 {
                                            oldMatch[Int(g)] = Int32(h)
                                            newMatch[h] = g
                                            let os = Int(oldSectionOf[Int(g)])
                                            itemChanged[h] = !old[os].items[Int(g) - oldStart[os]]
                                                .hasSameContent(as: items[j])
                                            if Int(g) != predicted { resume = predicted }
                                            predicted = Int(g) + 1
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        self.oldStart = oldStart
        self.newStart = newStart
        self.oldSectionOf = oldSectionOf
        self.newSectionOf = newSectionOf
        self.oldMatch = oldMatch
        self.newMatch = newMatch
        self.itemChanged = itemChanged
    }
}
