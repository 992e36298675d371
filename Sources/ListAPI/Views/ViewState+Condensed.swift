import JSON
import ListModel
import ListStore
import ListView
import ListWire
import SectionDiff

extension ViewState {
    /// A view section: one of the list's sections, or (with `group`) a group value.
    enum Place: Hashable {
        case section(Identifier)
        case group(JSONValue)
    }

    /// The view's change from `span.from` to this state's version (the span's
    /// end: the state was moved by it), as the two condensed states the diff
    /// engine stages (``StagedChangeset/init(condensedFrom:to:)``): the members
    /// the span touched as they were and are, the members that crossed the
    /// window's edge because of them, and the sections holding any of those or
    /// touched, as real elements; every stretch of untouched members, and of
    /// untouched sections, as one run. `nil` when a section whose position the
    /// members' keys hold has moved (its members all change places as a block:
    /// ``sections(before:)`` shows the view as it was instead).
    ///
    /// - Complexity: O(k log m) for k touched items and m members, plus, with
    ///   `group`, O(g log m) for the g groups in the window, and without, O(s)
    ///   for the list's s sections (O(s log s) when the span touched one);
    ///   never the window's size.
    func condensedChange(since span: TouchedSpan) throws(StoreError) -> (
        old: CondensedListSections, new: CondensedListSections
    )? {
        var oldSections = sections
        for (id, change) in span.sections {
            if let before = change.before {
                if keysHoldSections, let now = sections[id], now.key != before.key { return nil }
                oldSections[id] = before
            } else {
                oldSections[id] = nil
            }
        }
        // The touched members as they were (`old`) and are (`new`), in key order.
        var old: [Member] = []
        var new: [Member] = []
        for (id, change) in span.items {
            if let before = change.before, let member = try Self.member(before, of: view, sections: oldSections) {
                old.append(member)
            }
            if let member = members[id] { new.append(member) }
        }
        old.sort { $0.key < $1.key }
        new.sort { $0.key < $1.key }
        let newKeys = new.map(\.key)
        let newRanks = newKeys.map { ordered.rank(of: $0) }

        /// How many untouched members are below `key` (the same in both states:
        /// an untouched member keeps its key).
        func untouchedBelow(_ key: ViewKey) -> Int {
            ordered.rank(of: key) - Self.count(below: key, in: newKeys)
        }
        /// The untouched member at untouched index `index`.
        func untouchedMember(_ index: Int) -> Member? {
            var rank = index
            for touched in newRanks where touched <= rank { rank += 1 }
            guard let key = ordered.key(atRank: rank), let id = ids[key] else { return nil }
            return members[id]
        }

        // The window: the first `limit` members of each state. Untouched members
        // in both are the first `common` untouched ones; those in one only crossed its edge.
        let limit = view.limit ?? Int.max
        let untouched = ordered.count - new.count
        let newIn = newRanks.prefix { $0 < limit }.count
        var oldIn = 0
        for (index, member) in old.enumerated() where untouchedBelow(member.key) + index < limit { oldIn = index + 1 }
        let untouchedNew = min(limit, ordered.count) - newIn
        let untouchedOld = min(limit, untouched + old.count) - oldIn
        let common = min(untouchedNew, untouchedOld)
        var oldReal = Array(old.prefix(oldIn))
        var newReal = Array(new.prefix(newIn))
        if untouchedOld > common {
            oldReal += (common..<untouchedOld).compactMap(untouchedMember)
            oldReal.sort { $0.key < $1.key }
        }
        if untouchedNew > common {
            newReal += (common..<untouchedNew).compactMap(untouchedMember)
            newReal.sort { $0.key < $1.key }
        }
        // Common members are the untouched ones below this key (all when nil).
        let boundary = common < untouched ? untouchedMember(common)?.key : nil

        /// The common members of `place` below `key` (all of them when nil).
        func commonBelow(_ place: Place, _ key: ViewKey?, inBoth: Bool) -> Int {
            guard inBoth, let bounds = self.bounds(of: place) else { return 0 }
            var upper = bounds.upper
            if let key, key < upper { upper = key }
            if let boundary, boundary < upper { upper = boundary }
            guard bounds.lower < upper else { return 0 }
            return untouchedBelow(upper) - untouchedBelow(bounds.lower)
        }

        let oldByPlace = Dictionary(grouping: oldReal, by: place(of:))
        let newByPlace = Dictionary(grouping: newReal, by: place(of:))
        var real = Set(oldByPlace.keys).union(newByPlace.keys)

        // The view sections of each state, in order.
        let oldPlaces: [Place]
        let newPlaces: [Place]
        if view.group == nil {
            for id in span.sections.keys { real.insert(.section(id)) }
            newPlaces = sortedSectionIDs.map(Place.section)
            oldPlaces =
                span.sections.isEmpty
                ? newPlaces
                : oldSections.values.sorted { ($0.key, $0.id.rawValue) < ($1.key, $1.id.rawValue) }.map {
                    Place.section($0.id)
                }
        } else {
            // The groups holding common members (walked group by group, at
            // O(log m) each), and those holding real ones, in key order.
            var keyed: [(key: ViewKey, place: Place)] = []
            var seen = Set<Place>()
            var index = 0
            while index < common, let member = untouchedMember(index) {
                let place = place(of: member)
                keyed.append((member.key, place))
                seen.insert(place)
                guard let upper = bounds(of: place)?.upper else { break }
                index = untouchedBelow(upper)
            }
            for member in oldReal + newReal where seen.insert(place(of: member)).inserted {
                keyed.append((member.key, place(of: member)))
            }
            keyed.sort { $0.key < $1.key }
            let places = keyed.map(\.place)
            // A group is in a state while it holds a member there.
            func present(_ place: Place, _ byPlace: [Place: [Member]]) -> Bool {
                byPlace[place] != nil || commonBelow(place, nil, inBoth: true) > 0
            }
            oldPlaces = places.filter { present($0, oldByPlace) }
            newPlaces = places.filter { present($0, newByPlace) }
        }
        let oldSet = Set(oldPlaces)
        let newSet = Set(newPlaces)
        func isCommon(_ place: Place) -> Bool {
            !real.contains(place) && oldSet.contains(place) && newSet.contains(place)
        }

        // Where real sections sit among the common ones, in either state: a run of
        // common sections breaks there, so that both states hold the same runs.
        var sectionCuts = Set<Int>()
        for places in [oldPlaces, newPlaces] {
            var commonSeen = 0
            for place in places {
                if isCommon(place) { commonSeen += 1 } else { sectionCuts.insert(commonSeen) }
            }
        }
        // Likewise where real items sit among each real section's common members.
        var itemCuts: [Place: Set<Int>] = [:]
        var positions: [Place: (old: [Int], new: [Int])] = [:]
        for place in real {
            let inBoth = oldSet.contains(place) && newSet.contains(place)
            let before = (oldByPlace[place] ?? []).map { commonBelow(place, $0.key, inBoth: inBoth) }
            let after = (newByPlace[place] ?? []).map { commonBelow(place, $0.key, inBoth: inBoth) }
            positions[place] = (before, after)
            itemCuts[place] = Set(before).union(after)
        }
        let realIndex = Dictionary(uniqueKeysWithValues: real.enumerated().map { ($0.element, $0.offset) })

        func entry(_ member: Member) -> Condensed<JSONEntry> {
            .element(JSONEntry(id: member.row.id.rawValue, model: JSONText(member.row.model.canonicalText)))
        }
        func build(_ places: [Place], _ byPlace: [Place: [Member]], old: Bool) -> CondensedListSections {
            var result: CondensedListSections = []
            var commonSeen = 0
            var run: (start: Int, count: Int)?
            func flush() {
                guard let pending = run else { return }
                result.append(ArraySection(model: .run(id: pending.start, count: pending.count), items: []))
                run = nil
            }
            for place in places {
                if isCommon(place) {
                    if sectionCuts.contains(commonSeen) { flush() }
                    if let pending = run {
                        run = (pending.start, pending.count + 1)
                    } else {
                        run = (commonSeen, 1)
                    }
                    commonSeen += 1
                    continue
                }
                flush()
                let inBoth = oldSet.contains(place) && newSet.contains(place)
                let total = commonBelow(place, nil, inBoth: inBoth)
                let members = byPlace[place] ?? []
                let at = (old ? positions[place]?.old : positions[place]?.new) ?? []
                var items: [Condensed<JSONEntry>] = []
                var position = 0
                var next = 0
                let base = (realIndex[place] ?? 0) << 32
                for cut in (itemCuts[place] ?? []).sorted() + [total] {
                    if cut > position {
                        items.append(.run(id: base | position, count: cut - position))
                        position = cut
                    }
                    while next < members.count, at[next] <= position {
                        items.append(entry(members[next]))
                        next += 1
                    }
                }
                result.append(ArraySection(model: sectionEntry(place, old ? oldSections : sections), items: items))
            }
            flush()
            return result
        }
        return (build(oldPlaces, oldByPlace, old: true), build(newPlaces, newByPlace, old: false))
    }

    /// The view section `member` is in.
    func place(of member: Member) -> Place {
        if view.group != nil { return .group(member.group ?? .null) }
        return .section(member.row.section)
    }

    /// The keys just below and above every member key of `place` (a section at
    /// its current position), or nil for a section the list no longer has.
    private func bounds(of place: Place) -> (lower: ViewKey, upper: ViewKey)? {
        switch place {
        case .group(let value):
            return (ViewKey.lowerBound(group: value), ViewKey.upperBound(group: value))
        case .section(let id):
            guard let section = sections[id] else { return nil }
            return (ViewKey.lowerBound(section: section.key), ViewKey.upperBound(section: section.key))
        }
    }

    /// The wire entry of a view section, from `sections` for a list's.
    private func sectionEntry(_ place: Place, _ sections: [Identifier: SectionRow]) -> Condensed<JSONEntry> {
        switch place {
        case .group(let value):
            let model = ViewSpec.sectionModel(ofGroup: value)
            return .element(JSONEntry(id: ViewSpec.sectionID(ofGroup: value), model: JSONText(model.canonicalText)))
        case .section(let id):
            let model = sections[id]?.model.canonicalText ?? "{}"
            return .element(JSONEntry(id: id.rawValue, model: JSONText(model)))
        }
    }

    /// How many of ascending `keys` are below `key`.
    private static func count(below key: ViewKey, in keys: [ViewKey]) -> Int {
        var low = 0
        var high = keys.count
        while low < high {
            let middle = (low + high) / 2
            if keys[middle] < key { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
