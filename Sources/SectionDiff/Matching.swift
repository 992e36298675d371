/// Which old section and item each new one is (by identity), and which matched
/// ones changed content: the only part of the diff that reads the elements.
///
/// Everything is integer indices so that the planning that follows is not
/// generic. Items are numbered globally (section by section, in order): an
/// *old item number* or *new item number* names one item of one state.
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

    /// Matches `new` against `old`, in four phases:
    ///
    /// 1. sections, by identity (``matchSections(old:new:)``);
    /// 2. global item numbers in each state (``itemStarts(of:)``);
    /// 3. every old item into an identity table, marking later duplicates
    ///    (``OldItemIndex/storeInOrder()`` or ``OldItemIndex/storeByRegion()``);
    /// 4. every new item to its old item, by prediction or through the table
    ///    (``OldItemIndex/matchNewItems(_:newStart:newMatch:newSectionOf:itemChanged:)``).
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
        let sections = Self.matchSections(old: old, new: new)
        oldSectionMatch = sections.oldSectionMatch
        newSectionMatch = sections.newSectionMatch
        sectionChanged = sections.sectionChanged

        let oldStart = Self.itemStarts(of: old)
        let newStart = Self.itemStarts(of: new)
        let oldTotal = oldStart[old.count]
        let newTotal = newStart[new.count]
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
                let index = OldItemIndex(
                    sections: old, start: oldStart, sectionOf: oldSectionOf, match: oldMatch, table: table)
                if table.regionCount == 1 {
                    index.storeInOrder()
                } else {
                    index.storeByRegion()
                }
                newMatch.withUnsafeMutableBufferPointer { newMatch in
                    newSectionOf.withUnsafeMutableBufferPointer { newSectionOf in
                        itemChanged.withUnsafeMutableBufferPointer { itemChanged in
                            index.matchNewItems(
                                new, newStart: newStart, newMatch: newMatch, newSectionOf: newSectionOf,
                                itemChanged: itemChanged)
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

    /// The section half of a ``Matching``.
    @usableFromInline
    struct SectionMatches {
        @usableFromInline var oldSectionMatch: [Int32]
        @usableFromInline var newSectionMatch: [Int32]
        @usableFromInline var sectionChanged: [Bool]

        @inlinable
        init(oldSectionMatch: [Int32], newSectionMatch: [Int32], sectionChanged: [Bool]) {
            self.oldSectionMatch = oldSectionMatch
            self.newSectionMatch = newSectionMatch
            self.sectionChanged = sectionChanged
        }
    }

    /// Phase 1: pairs each new section with the old section of the same identity,
    /// the first occurrence with the first, and notes whether its model changed.
    ///
    /// Sections are few next to items, so they get a plain table of their own.
    @inlinable
    static func matchSections<Model, Item>(
        old: [ArraySection<Model, Item>], new: [ArraySection<Model, Item>]
    ) -> SectionMatches {
        var matches = SectionMatches(
            oldSectionMatch: Array(repeating: -1, count: old.count),
            newSectionMatch: Array(repeating: -1, count: new.count),
            sectionChanged: Array(repeating: false, count: new.count))
        let table = IdentityTable(count: old.count)
        defer { table.deallocate() }
        for oldSection in old.indices {
            let model = old[oldSection].model
            let found = table.insert(mixed: IdentityTable.mix(model.identityHash), index: Int32(oldSection)) {
                old[Int($0)].model.id == model.id
            }
            _ = found  // A later duplicate stays unmatched: it is deleted.
        }
        for newSection in new.indices {
            let model = new[newSection].model
            let oldSection = table.find(mixed: IdentityTable.mix(model.identityHash)) {
                old[Int($0)].model.id == model.id
            }
            if oldSection >= 0 && matches.oldSectionMatch[Int(oldSection)] < 0 {
                matches.oldSectionMatch[Int(oldSection)] = Int32(newSection)
                matches.newSectionMatch[newSection] = oldSection
                matches.sectionChanged[newSection] = !old[Int(oldSection)].model.hasSameContent(as: model)
            }
        }
        return matches
    }

    /// Phase 2: the global number of each section's first item, and one more
    /// entry for the total, so that section `s` holds items `start[s]..<start[s + 1]`.
    @inlinable
    static func itemStarts<Model, Item>(of sections: [ArraySection<Model, Item>]) -> [Int] {
        var start = [Int]()
        start.reserveCapacity(sections.count + 1)
        var total = 0
        for section in sections {
            start.append(total)
            total += section.items.count
        }
        start.append(total)
        return start
    }
}

/// The old items by global number, and the identity table that finds them:
/// phases 3 and 4 of ``Matching/init(old:new:)``.
///
/// It writes through buffers that the initializer owns for its duration:
/// ``sectionOf`` (old item → old section) and ``match`` (old item → new item,
/// -1 while unmatched, -2 for a later duplicate, which is never matched).
@usableFromInline
struct OldItemIndex<Model: Diffable, Item: Diffable> {
    @usableFromInline let sections: [ArraySection<Model, Item>]
    /// ``Matching/oldStart``.
    @usableFromInline let start: [Int]
    @usableFromInline let sectionOf: UnsafeMutableBufferPointer<Int32>
    @usableFromInline let match: UnsafeMutableBufferPointer<Int32>
    @usableFromInline let table: IdentityTable

    @inlinable
    init(
        sections: [ArraySection<Model, Item>], start: [Int], sectionOf: UnsafeMutableBufferPointer<Int32>,
        match: UnsafeMutableBufferPointer<Int32>, table: IdentityTable
    ) {
        self.sections = sections
        self.start = start
        self.sectionOf = sectionOf
        self.match = match
        self.table = table
    }

    /// The old item numbered `oldItem` (once ``sectionOf`` holds its section).
    @inlinable @inline(__always)
    func item(_ oldItem: Int) -> Item {
        let oldSection = Int(sectionOf[oldItem])
        return sections[oldSection].items[oldItem - start[oldSection]]
    }

    /// Stores one old item in the table; a later duplicate is marked -2 instead.
    /// Equal identities reach the table in number order in both fills below, so
    /// the first occurrence is the one stored.
    @inlinable @inline(__always)
    func store(_ mixed: UInt64, _ oldItem: Int) {
        let earlier = table.insert(mixed: mixed, index: Int32(oldItem)) { other in
            item(Int(other)).hasSameIdentity(as: item(oldItem))
        }
        if earlier >= 0 { match[oldItem] = -2 }
    }

    /// Phase 3, small table (one region, which fits in the cache): numbers the
    /// old items and stores them in order.
    @inlinable
    func storeInOrder() {
        for oldSection in sections.indices {
            let base = start[oldSection]
            sections[oldSection].items.withUnsafeBufferPointer { items in
                for i in items.indices { sectionOf[base + i] = Int32(oldSection) }
                for i in items.indices { store(IdentityTable.mix(items[i].identityHash), base + i) }
            }
        }
    }

    /// Phase 3, large table: numbers the old items and stores them region by region.
    ///
    /// Filled in random order, a table larger than the cache costs a memory
    /// access per item. So first append each (hash, number) to the buffer of
    /// its region (sequential writes into a few streams), then fill the table
    /// one region at a time, which stays in cache. A region's buffer has room
    /// for a comfortable margin over its expected share; the rare overflow is
    /// kept aside and stored last, which keeps equal identities in number order
    /// (they share a region, and once a buffer is full it stays full).
    @inlinable
    func storeByRegion() {
        let oldTotal = sectionOf.count
        let regions = table.regionCount
        let room = oldTotal / regions + oldTotal / (regions * 8) + 64
        let buffered = UnsafeMutablePointer<UInt64>.allocate(capacity: regions * room)
        let fill = UnsafeMutablePointer<Int>.allocate(capacity: regions)
        fill.initialize(repeating: 0, count: regions)
        defer {
            buffered.deallocate()
            fill.deallocate()
        }
        var overflow: [Int32] = []
        for oldSection in sections.indices {
            let base = start[oldSection]
            sections[oldSection].items.withUnsafeBufferPointer { items in
                for i in items.indices {
                    sectionOf[base + i] = Int32(oldSection)
                    let mixed = IdentityTable.mix(items[i].identityHash)
                    let region = table.region(mixed)
                    let filled = fill[region]
                    if filled < room {
                        buffered[region * room + filled] = table.entry(mixed: mixed, index: Int32(base + i))
                        fill[region] = filled + 1
                    } else {
                        overflow.append(Int32(base + i))
                    }
                }
            }
        }
        table.zeroRegion(0)
        for region in 0..<regions {
            if region + 1 < regions { table.zeroRegion(region + 1) }
            for slot in (region * room)..<(region * room + fill[region]) {
                let entry = buffered[slot]
                let oldItem = Int(IdentityTable.index(ofEntry: entry))
                let earlier = table.insert(entry: entry, region: region) { other in
                    item(Int(other)).hasSameIdentity(as: item(oldItem))
                }
                if earlier >= 0 { match[oldItem] = -2 }
            }
        }
        for oldItem in overflow {
            store(IdentityTable.mix(item(Int(oldItem)).identityHash), Int(oldItem))
        }
    }

    /// Phase 4: pairs each new item with the unmatched old item of the same
    /// identity, if any, and notes whether its content changed.
    ///
    /// Most items follow the item that followed their predecessor before: try
    /// that one (`predicted`) without hashing, then the one after it (an old
    /// item was deleted), then the place the order left at its last jump
    /// (`resume`: the item before this one moved here from elsewhere). Only
    /// unmatched first occurrences qualify, so duplicates pair exactly as
    /// through the table; the table is read only when all three miss.
    @inlinable
    func matchNewItems(
        _ new: [ArraySection<Model, Item>], newStart: [Int], newMatch: UnsafeMutableBufferPointer<Int32>,
        newSectionOf: UnsafeMutableBufferPointer<Int32>, itemChanged: UnsafeMutableBufferPointer<Bool>
    ) {
        let oldTotal = sectionOf.count
        var predicted = 0
        var resume = 0
        for newSection in new.indices {
            let base = newStart[newSection]
            new[newSection].items.withUnsafeBufferPointer { items in
                for j in items.indices {
                    let newItem = base + j
                    newSectionOf[newItem] = Int32(newSection)
                    @inline(__always) func isFree(_ oldItem: Int) -> Bool {
                        oldItem < oldTotal && match[oldItem] == -1 && item(oldItem).hasSameIdentity(as: items[j])
                    }
                    var oldItem: Int32 = -1
                    if isFree(predicted) {
                        oldItem = Int32(predicted)
                    } else if isFree(predicted + 1) {
                        oldItem = Int32(predicted + 1)
                    } else if resume != predicted && isFree(resume) {
                        oldItem = Int32(resume)
                    }
                    if oldItem < 0 {
                        oldItem = table.find(mixed: IdentityTable.mix(items[j].identityHash)) { other in
                            item(Int(other)).hasSameIdentity(as: items[j])
                        }
                    }
                    if oldItem >= 0 && match[Int(oldItem)] == -1 {
                        match[Int(oldItem)] = Int32(newItem)
                        newMatch[newItem] = oldItem
                        itemChanged[newItem] = !item(Int(oldItem)).hasSameContent(as: items[j])
                        if Int(oldItem) != predicted { resume = predicted }
                        predicted = Int(oldItem) + 1
                    }
                }
            }
        }
    }
}
