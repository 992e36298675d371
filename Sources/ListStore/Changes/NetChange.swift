/// The net change of a list between two versions, described by what it touched.
///
/// `old` and `new` are the list at `from` and at `to`, condensed: the sections
/// and items touched in between appear as themselves, and each stretch of
/// untouched siblings between them is one run (``CondensedSection/untouched(run:count:)``,
/// ``CondensedItem/untouched(run:count:)``) that appears in both, in the same
/// order. A section that holds touched items appears as itself even when it is
/// not touched. So its size is the size of the change, whatever the list's.
public struct NetChange: Sendable, Hashable {
    public var list: Identifier
    public var epoch: String
    public var from: Int64
    public var to: Int64
    public var old: [CondensedSection]
    public var new: [CondensedSection]

    public init(
        list: Identifier, epoch: String, from: Int64, to: Int64, old: [CondensedSection], new: [CondensedSection]
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

/// A section of a condensed list (see ``NetChange``).
public enum CondensedSection: Sendable, Hashable {
    case section(id: Identifier, model: Model, items: [CondensedItem])
    /// `count` untouched sections with no touched item; `run` is unique in the change.
    case untouched(run: Int, count: Int)
}

/// An item of a condensed section (see ``NetChange``).
public enum CondensedItem: Sendable, Hashable {
    case item(id: Identifier, model: Model)
    /// `count` untouched items; `run` is unique among all item runs of the change.
    case untouched(run: Int, count: Int)
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

    /// Sections that hold a touched item at either end but are not listed yet.
    var unlistedSections: Set<Identifier> {
        var result = Set<Identifier>()
        for item in items.values {
            if let section = item.before?.section, sections[section] == nil { result.insert(section) }
            if let section = item.after?.section, sections[section] == nil { result.insert(section) }
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
    /// - Complexity: O(k log n) for k touched entities and n keys.
    func condense(with index: ListIndex) -> (old: [CondensedSection], new: [CondensedSection]) {
        // Sections.
        let sectionEntries = sections.map { (id: $0.key, before: $0.value.before, after: $0.value.after) }
        let sectionsNow = sectionEntries.compactMap(\.after?.key).sorted()
        let untouchedSections = index.sections.count - sectionsNow.count
        func untouchedSectionsBelow(_ key: Int64) -> Int {
            index.sections.rank(below: key) - Self.lowerBound(key, in: sectionsNow)
        }
        let sectionRuns = Runs(
            total: untouchedSections,
            splits: sectionEntries.flatMap { entry in
                [entry.before.map { untouchedSectionsBelow($0.key) }, entry.after.map { untouchedSectionsBelow($0.key) }]
                    .compactMap { $0 }
            },
            firstID: 0)

        // Items, grouped by section at each end.
        var itemsBefore: [Identifier: [(id: Identifier, state: ItemState)]] = [:]
        var itemsAfter: [Identifier: [(id: Identifier, state: ItemState)]] = [:]
        for (id, item) in items {
            if let before = item.before { itemsBefore[before.section, default: []].append((id, before)) }
            if let after = item.after { itemsAfter[after.section, default: []].append((id, after)) }
        }
        var itemRuns: [Identifier: Runs] = [:]
        var itemsBelow: [Identifier: [Int] ] = [:]  // per section: untouched items below each touched one, old then new
        var nextRun = 0
        for (section, _) in sections {
            let now = (itemsAfter[section] ?? []).map(\.state.key).sorted()
            let keys = index.items[section]
            let untouched = (keys?.count ?? 0) - now.count
            func below(_ key: Int64) -> Int {
                (keys?.rank(below: key) ?? 0) - Self.lowerBound(key, in: now)
            }
            var splits: [Int] = []
            for entry in itemsBefore[section] ?? [] { splits.append(below(entry.state.key)) }
            for entry in itemsAfter[section] ?? [] { splits.append(below(entry.state.key)) }
            let runs = Runs(total: max(0, untouched), splits: splits, firstID: nextRun)
            nextRun += runs.runs.count
            itemRuns[section] = runs
            itemsBelow[section] = splits
        }

        func condensedItems(of section: Identifier, _ entries: [(id: Identifier, state: ItemState)], offset: Int)
            -> [CondensedItem]
        {
            guard let runs = itemRuns[section] else { return [] }
            let below = itemsBelow[section] ?? []
            let ordered = entries.indices.map { (entry: entries[$0], below: below[offset + $0]) }
                .sorted { ($0.below, $0.entry.state.key) < ($1.below, $1.entry.state.key) }
            return runs.merge(ordered.map { (below: $0.below, value: CondensedItem.item(
                id: $0.entry.id, model: Model(trustedCanonicalText: $0.entry.state.model))) }) {
                CondensedItem.untouched(run: $0, count: $1)
            }
        }

        var oldSections: [(below: Int, key: Int64, value: CondensedSection)] = []
        var newSections: [(below: Int, key: Int64, value: CondensedSection)] = []
        for entry in sectionEntries {
            if let before = entry.before {
                let items = condensedItems(of: entry.id, itemsBefore[entry.id] ?? [], offset: 0)
                oldSections.append(
                    (untouchedSectionsBelow(before.key), before.key,
                     .section(id: entry.id, model: Model(trustedCanonicalText: before.model), items: items)))
            }
            if let after = entry.after {
                let items = condensedItems(
                    of: entry.id, itemsAfter[entry.id] ?? [], offset: itemsBefore[entry.id]?.count ?? 0)
                newSections.append(
                    (untouchedSectionsBelow(after.key), after.key,
                     .section(id: entry.id, model: Model(trustedCanonicalText: after.model), items: items)))
            }
        }
        func ordered(_ entries: [(below: Int, key: Int64, value: CondensedSection)]) -> [CondensedSection] {
            let sorted = entries.sorted { ($0.below, $0.key) < ($1.below, $1.key) }
            return sectionRuns.merge(sorted.map { (below: $0.below, value: $0.value) }) {
                CondensedSection.untouched(run: $0, count: $1)
            }
        }
        return (ordered(oldSections), ordered(newSections))
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
