import ListModel
import ListWire
import SectionDiff

/// The net change of a list between two versions, described by what it touched.
///
/// `old` and `new` are the list at `from` and at `to`, condensed, in the diff
/// engine's own terms (ListWire's `CondensedListSections`): the sections and
/// items touched in between appear as themselves (`Condensed.element`), and
/// each stretch of untouched siblings between them is one run
/// (`Condensed.run(id:count:)`; a section run has no items) that appears in
/// both, in the same order. A section that holds touched items appears as
/// itself even when it is not touched. So its size is the size of the change,
/// whatever the list's, and `StagedChangeset(condensedFrom: old, to: new)`
/// stages it as it is.
///
/// Run ids are unique among the section runs, and among all item runs of the change.
public struct NetChange: Sendable, Hashable {
    /// The list changed.
    public var list: Identifier
    /// The list's epoch (the same at both ends).
    public var epoch: String
    /// The version `old` describes.
    public var from: Int64
    /// The version `new` describes.
    public var to: Int64
    /// The list at `from`, condensed.
    public var old: CondensedListSections
    /// The list at `to`, condensed.
    public var new: CondensedListSections

    /// Creates a net change.
    public init(
        list: Identifier, epoch: String, from: Int64, to: Int64, old: CondensedListSections,
        new: CondensedListSections
    ) {
        self.list = list
        self.epoch = epoch
        self.from = from
        self.to = to
        self.old = old
        self.new = new
    }

    /// The head after the change.
    public var head: ListHead { ListHead(id: list, epoch: epoch, version: to) }
}

/// What a store says about "changes since V": the net change, or why the client must reset.
public enum ChangeSince: Sendable, Hashable {
    case change(NetChange)
    /// `V` is below the kept history or above the current version: here is the current snapshot.
    case reset(ListSnapshot)
}

/// Every section and item touched between two versions, with its state at
/// each end (`nil` where it did not exist). A section that holds a touched item
/// but is not touched itself is listed too, with equal states.
struct TouchedEntities {
    struct SectionState: Hashable {
        var key: Int64
        var model: String
    }

    struct ItemState: Hashable {
        var section: Identifier
        var key: Int64
        var model: String
    }

    var sections: [Identifier: (before: SectionState?, after: SectionState?)] = [:]
    var items: [Identifier: (before: ItemState?, after: ItemState?)] = [:]
    /// Entities the span touched that existed at neither end (read by the
    /// join only, for ``Database/recordAfterImages(_:of:version:)``).
    var vanishedSections: Set<Identifier> = []
    var vanishedItems: Set<Identifier> = []
    /// Sections listed only because they hold a touched item (read by the join only).
    var holdingOnly: Set<Identifier> = []

    /// Sections that hold a touched item at either end but are not listed yet.
    var unlistedSections: Set<Identifier> {
        var result = Set<Identifier>()
        // The touched items of a big list mostly share a few sections: the
        // last one looked at is skipped without hashing it again.
        var last: Identifier?
        func look(_ section: Identifier?) {
            guard let section, section != last else { return }
            last = section
            if sections[section] == nil { result.insert(section) }
        }
        for item in items.values {
            look(item.before?.section)
            look(item.after?.section)
        }
        return result
    }

    var isEmpty: Bool { sections.isEmpty && items.isEmpty }

    /// The condensed states at both ends, with positions counted by `index`,
    /// which must describe the list at the later end.
    ///
    /// Untouched elements keep their section, key and relative order, so in a
    /// sibling group the untouched elements with a key below `p` number
    /// `index.rank(below: p)` minus the touched ones now below `p`; that count,
    /// for every touched element at either end, splits the untouched elements
    /// into the runs both ends share.
    ///
    /// Checks that `index` and the touched entities agree (every touched
    /// element's current key is in the index, no count goes below zero or past
    /// its group, every item's section at either end is listed) and throws
    /// ``IndexMismatch`` otherwise, instead of answering from a stale index.
    /// - Complexity: O(k log n) for k touched entities and n keys.
    func condense(with index: ListIndex) throws(IndexMismatch)
        -> (old: CondensedListSections, new: CondensedListSections)
    {
        // Sections.
        let sectionEntries = sections.map { (id: $0.key, before: $0.value.before, after: $0.value.after) }
        let sectionsNow = sectionEntries.compactMap(\.after?.key).sorted()
        for key in sectionsNow where !index.sections.contains(key) {
            throw IndexMismatch(
                "a touched section's key \(key) is not in the index of \(index.sections.count) section keys")
        }
        let untouchedSections = index.sections.count - sectionsNow.count
        guard untouchedSections >= 0 else {
            throw IndexMismatch("\(sectionsNow.count) touched sections, \(index.sections.count) in the index")
        }
        func untouchedSectionsBelow(_ key: Int64) throws(IndexMismatch) -> Int {
            let below = index.sections.rank(below: key) - Self.lowerBound(key, in: sectionsNow)
            guard (0...untouchedSections).contains(below) else {
                throw IndexMismatch("\(below) untouched sections below key \(key), of \(untouchedSections)")
            }
            return below
        }

        // Items, grouped by section at each end, each with its count of
        // untouched siblings below it.
        var itemsBefore: [Identifier: [Entry]] = [:]
        var itemsAfter: [Identifier: [Entry]] = [:]
        do {
            // Grouped through small slots, with the last section remembered: the
            // touched items of a big list mostly share a few sections, so this
            // hashes a section id per run of items rather than per item.
            var slots: [Identifier: Int] = [:]
            var groups: [(before: [Entry], after: [Entry])] = []
            var last: (id: Identifier, slot: Int)?
            func slot(of section: Identifier, for id: Identifier) throws(IndexMismatch) -> Int {
                if let last, last.id == section { return last.slot }
                let found: Int
                if let known = slots[section] {
                    found = known
                } else {
                    guard sections[section] != nil else {
                        throw IndexMismatch("item \(id) is in section \(section), which is not listed")
                    }
                    found = groups.count
                    slots[section] = found
                    groups.append(([], []))
                }
                last = (section, found)
                return found
            }
            for (id, item) in items {
                if let before = item.before {
                    let at = try slot(of: before.section, for: id)
                    groups[at].before.append(Entry(id: id, state: before))
                }
                if let after = item.after {
                    let at = try slot(of: after.section, for: id)
                    groups[at].after.append(Entry(id: id, state: after))
                }
            }
            for (section, slot) in slots {
                if !groups[slot].before.isEmpty { itemsBefore[section] = groups[slot].before }
                if !groups[slot].after.isEmpty { itemsAfter[section] = groups[slot].after }
            }
        }
        var itemRuns: [Identifier: Runs] = [:]
        var nextRun = 0
        for (section, state) in sections {
            // Each end's entries in key order. An element's count of untouched
            // siblings below it (the untouched keys now below its key) only grows
            // with the key, so this is also the order of the condensed section,
            // and both counts come from one sweep of the index and of `now`.
            Self.sortByKey(&itemsBefore[section])
            Self.sortByKey(&itemsAfter[section])
            let now = (itemsAfter[section] ?? []).map(\.state.key)
            let keys = index.items[section]
            if state.after == nil, let keys, keys.count > 0 {
                throw IndexMismatch("section \(section) is gone but the index holds \(keys.count) item keys in it")
            }
            let nowRanks = keys?.ranks(ofAscending: now) ?? now.map { _ in (rank: 0, present: false) }
            for (key, rank) in zip(now, nowRanks) where !rank.present {
                throw IndexMismatch("a touched item's key \(key) in section \(section) is not in the index")
            }
            let untouched = (keys?.count ?? 0) - now.count
            // A section new since the earlier end holds only touched items (inserted or moved in).
            guard untouched >= 0, state.before != nil || untouched == 0 else {
                throw IndexMismatch(
                    "the index holds \(keys?.count ?? 0) item keys in section \(section), which has \(now.count) touched "
                        + (state.before == nil ? "and is new" : "items"))
            }
            var splits: [Int] = []
            func count(_ entries: inout [Entry]?, ranks known: [(rank: Int, present: Bool)]?) throws(IndexMismatch) {
                guard var counted = entries else { return }
                let ranks = known ?? keys?.ranks(ofAscending: counted.map(\.state.key)) ?? []
                var touchedBelow = 0
                for i in counted.indices {
                    let key = counted[i].state.key
                    while touchedBelow < now.count && now[touchedBelow] < key { touchedBelow += 1 }
                    let below = (i < ranks.count ? ranks[i].rank : 0) - touchedBelow
                    guard (0...untouched).contains(below) else {
                        throw IndexMismatch(
                            "\(below) untouched items below key \(key) in section \(section), of \(untouched)")
                    }
                    counted[i].below = below
                    splits.append(below)
                }
                entries = counted
            }
            try count(&itemsBefore[section], ranks: nil)
            try count(&itemsAfter[section], ranks: nowRanks)
            let runs = Runs(total: untouched, splits: splits, firstID: nextRun)
            nextRun += runs.runs.count
            itemRuns[section] = runs
        }

        func condensedItems(of section: Identifier, _ entries: [Entry]) -> [Condensed<JSONEntry>] {
            guard let runs = itemRuns[section] else { return [] }
            // Already in (below, key) order (see above).
            return runs.merge(
                entries.map {
                    (
                        below: $0.below,
                        value: Condensed.element(JSONEntry(id: $0.id.rawValue, model: JSONText($0.state.model)))
                    )
                }
            ) {
                Condensed.run(id: $0, count: $1)
            }
        }

        typealias Section = ArraySection<Condensed<JSONEntry>, Condensed<JSONEntry>>
        func section(_ id: Identifier, _ model: String, items: [Entry]) -> Section {
            Section(
                model: .element(JSONEntry(id: id.rawValue, model: JSONText(model))),
                items: condensedItems(of: id, items))
        }

        var oldSections: [(below: Int, key: Int64, value: Section)] = []
        var newSections: [(below: Int, key: Int64, value: Section)] = []
        var sectionSplits: [Int] = []
        for entry in sectionEntries {
            if let before = entry.before {
                let below = try untouchedSectionsBelow(before.key)
                sectionSplits.append(below)
                oldSections.append(
                    (below, before.key, section(entry.id, before.model, items: itemsBefore[entry.id] ?? [])))
            }
            if let after = entry.after {
                let below = try untouchedSectionsBelow(after.key)
                sectionSplits.append(below)
                newSections.append(
                    (below, after.key, section(entry.id, after.model, items: itemsAfter[entry.id] ?? [])))
            }
        }
        let sectionRuns = Runs(total: untouchedSections, splits: sectionSplits, firstID: 0)
        func ordered(_ entries: [(below: Int, key: Int64, value: Section)]) -> CondensedListSections {
            let sorted = entries.sorted { ($0.below, $0.key) < ($1.below, $1.key) }
            return sectionRuns.merge(sorted.map { (below: $0.below, value: $0.value) }) {
                Section(model: .run(id: $0, count: $1), items: [])
            }
        }
        return (ordered(oldSections), ordered(newSections))
    }

    /// A touched item at one end, with its count of untouched siblings below
    /// it (filled in by ``condense(with:)``). A struct rather than a tuple:
    /// arrays of it are copied and sorted with specialized code, where a
    /// tuple's copies went through the runtime's generic tuple witnesses.
    struct Entry {
        var id: Identifier
        var state: ItemState
        var below = 0
    }

    /// Puts `entries` in key order: sorts (key, place) pairs, 16 bytes each,
    /// then moves each entry once, rather than moving whole entries (ids,
    /// states and models) at every step of the sort.
    private static func sortByKey(_ entries: inout [Entry]?) {
        guard let unsorted = entries, unsorted.count > 1 else { return }
        var order = unsorted.indices.map { (key: unsorted[$0].state.key, at: $0) }
        order.sort { $0.key != $1.key ? $0.key < $1.key : $0.at < $1.at }
        var sorted: [Entry] = []
        sorted.reserveCapacity(order.count)
        for place in order { sorted.append(unsorted[place.at]) }
        entries = sorted
    }

    static func lowerBound(_ key: Int64, in sorted: [Int64]) -> Int {
        var low = 0
        var high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] < key { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

/// The index of a list and the entities a change touched disagree: the index
/// is stale, or the rows are not what the history says.
struct IndexMismatch: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) { self.description = description }
}

/// The runs a sibling group's untouched elements split into: cut at every
/// count of untouched elements that precede a touched one, at either end.
struct Runs {
    /// (first untouched element, count, id), in order, none empty.
    var runs: [(start: Int, count: Int, id: Int)] = []

    init(total: Int, splits: [Int], firstID: Int) {
        var cuts = Set(splits.map { min(max($0, 0), total) })
        cuts.insert(0)
        cuts.insert(total)
        let sorted = cuts.sorted()
        var id = firstID
        for (start, end) in zip(sorted, sorted.dropFirst()) where end > start {
            runs.append((start, end - start, id))
            id += 1
        }
    }

    /// `elements` (ordered, each with its count of untouched predecessors)
    /// interleaved with the runs.
    func merge<T>(_ elements: [(below: Int, value: T)], run: (Int, Int) -> T) -> [T] {
        var result: [T] = []
        result.reserveCapacity(elements.count + runs.count)
        var next = 0
        for element in elements {
            while next < runs.count && runs[next].start < element.below {
                result.append(run(runs[next].id, runs[next].count))
                next += 1
            }
            result.append(element.value)
        }
        while next < runs.count {
            result.append(run(runs[next].id, runs[next].count))
            next += 1
        }
        return result
    }
}
