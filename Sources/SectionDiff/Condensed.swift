/// One element of a condensed state: a real element, or a run of elements
/// that did not change between the two states being diffed.
///
/// A store that knows which elements a change touched describes both states by
/// the touched elements alone, with each stretch of untouched siblings between
/// them folded into one run. Runs keep their place and their relative order in
/// both states (untouched elements keep their section, position and model), so
/// ``StagedChangeset/init(condensedFrom:to:)`` never moves, deletes or updates
/// them and only has to count them when it turns positions into real ones.
public enum Condensed<Element: Diffable>: Diffable {
    /// A real element.
    case element(Element)
    /// `count` untouched elements; `id` names the run in both states.
    case run(id: Int, count: Int)

    /// A run's id or the element's own identity.
    public enum Identity: Hashable {
        case element(Element.ID)
        case run(Int)
    }

    @inlinable
    public var id: Identity {
        switch self {
        case .element(let element): .element(element.id)
        case .run(let id, _): .run(id)
        }
    }

    @inlinable
    public var identityHash: Int {
        switch self {
        case .element(let element): element.identityHash
        case .run(let id, _): id &* -7_046_029_254_386_353_131
        }
    }

    @inlinable
    public func hasSameIdentity(as other: Condensed<Element>) -> Bool {
        switch (self, other) {
        case (.element(let left), .element(let right)): left.hasSameIdentity(as: right)
        case (.run(let left, _), .run(let right, _)): left == right
        default: false
        }
    }

    @inlinable
    public func hasSameContent(as other: Condensed<Element>) -> Bool {
        switch (self, other) {
        case (.element(let left), .element(let right)): left.hasSameContent(as: right)
        case (.run(_, let left), .run(_, let right)): left == right
        default: false
        }
    }

    /// How many real elements this stands for.
    @inlinable
    public var weight: Int {
        switch self {
        case .element: 1
        case .run(_, let count): count
        }
    }

    /// The real element, `nil` for a run.
    @inlinable
    public var element: Element? {
        if case .element(let element) = self { return element }
        return nil
    }
}

extension Condensed: Sendable where Element: Sendable, Element.ID: Sendable {}
extension Condensed: Equatable where Element: Equatable {}
extension Condensed: Hashable where Element: Hashable {}
extension Condensed.Identity: Sendable where Element.ID: Sendable {}

extension StagedChangeset {
    /// The staged change between two condensed states, in real positions.
    ///
    /// `old` and `new` hold the touched sections and items, and runs of
    /// untouched ones (``Condensed/run(id:count:)``) between them; a run
    /// appears in both states, in the same order, and a section that is a run
    /// holds no items. A touched element that stays in its section (or, for a
    /// section, in the list) but changes the run it follows is always reported
    /// moved, as it really did move past untouched elements; among the others the
    /// longest increasing subsequence stays, as in ``init(from:to:)``, so moves
    /// are never more than the real ones and runs are never moved. The stages obey
    /// the same rules as ``init(from:to:)``'s; their positions count every run
    /// element.
    ///
    /// - Complexity: O(k log k) for k condensed elements in both states,
    ///   independent of how many elements the runs stand for.
    @inlinable
    public init(
        condensedFrom old: [ArraySection<Condensed<Model>, Condensed<Item>>],
        to new: [ArraySection<Condensed<Model>, Condensed<Item>>]
    ) {
        if let stages = Self.updatesInPlace(from: old, to: new) {
            self.init(stages: stages)
        } else {
            self.init(matchingCondensedFrom: old, to: new)
        }
    }

    /// The stages when both states hold the same sections and items in the
    /// same order and only contents changed (the most common write: an item's
    /// model replaced), or nil for any other change. One pass, no hashing; the
    /// same stages as ``init(matchingCondensedFrom:to:)`` gives (the updates at
    /// their real positions, a section whose items are updated reloaded in a
    /// second stage).
    @inlinable
    static func updatesInPlace(
        from old: [ArraySection<Condensed<Model>, Condensed<Item>>],
        to new: [ArraySection<Condensed<Model>, Condensed<Item>>]
    ) -> [Stage<Model, Item>]? {
        guard old.count == new.count else { return nil }
        var stage = Stage<Model, Item>()
        // A section reloaded in the stage that updates items in it would have
        // UIKit reload what it also updates: such sections reload in a stage after.
        var later = Stage<Model, Item>()
        var realSection = 0
        for (before, after) in zip(old, new) {
            guard before.items.count == after.items.count,
                let sectionWeight = Self.sameShape(before.model, after.model)
            else { return nil }
            let updatedItems = stage.itemUpdated.count
            var realItem = 0
            for (beforeItem, afterItem) in zip(before.items, after.items) {
                guard let itemWeight = Self.sameShape(beforeItem, afterItem) else { return nil }
                if case .element(let item) = afterItem, !beforeItem.hasSameContent(as: afterItem) {
                    stage.itemUpdated.append(
                        .init(at: ElementPath(element: realItem, section: realSection), item: item))
                }
                realItem += itemWeight
            }
            if case .element(let model) = after.model, !before.model.hasSameContent(as: after.model) {
                if stage.itemUpdated.count > updatedItems {
                    later.sectionUpdated.append(.init(at: realSection, model: model))
                } else {
                    stage.sectionUpdated.append(.init(at: realSection, model: model))
                }
            }
            realSection += sectionWeight
        }
        return [stage, later].filter { !$0.isEmpty }
    }

    /// The weight both stand for when they are the same element (whatever its
    /// content) or the same run of the same length, else nil.
    @inlinable
    static func sameShape<Element>(_ before: Condensed<Element>, _ after: Condensed<Element>) -> Int? {
        switch (before, after) {
        case (.element(let left), .element(let right)):
            return left.identityHash == right.identityHash && left.hasSameIdentity(as: right) ? 1 : nil
        case (.run(let leftID, let left), .run(let rightID, let right)):
            return leftID == rightID && left == right ? left : nil
        default:
            return nil
        }
    }

    /// ``init(condensedFrom:to:)`` by matching identities and planning stages,
    /// for any change.
    @inlinable
    init(
        matchingCondensedFrom old: [ArraySection<Condensed<Model>, Condensed<Item>>],
        to new: [ArraySection<Condensed<Model>, Condensed<Item>>]
    ) {
        let matching = Matching(old: old, new: new)
        // The run each element follows, in each state; a touched element that
        // stays in its section (or a section that survives) but follows another
        // run than before must move. Read off the matching, so no hashing here.
        var oldSectionGap = [Int](repeating: -1, count: old.count)
        var oldItemGap: [Int] = []
        oldItemGap.reserveCapacity(matching.oldMatch.count)
        var gap = -1
        for (s, section) in old.enumerated() {
            if case .run(let id, _) = section.model { gap = id }
            oldSectionGap[s] = gap
            var itemGap = -1
            for item in section.items {
                if case .run(let id, _) = item { itemGap = id }
                oldItemGap.append(itemGap)
            }
        }
        var mustMoveSection = [Bool](repeating: false, count: new.count)
        var mustMoveItem = [Bool](repeating: false, count: matching.newMatch.count)
        gap = -1
        var h = 0
        for (t, section) in new.enumerated() {
            if case .run(let id, _) = section.model { gap = id }
            let s = Int(matching.newSectionMatch[t])
            if s >= 0, oldSectionGap[s] != gap { mustMoveSection[t] = true }
            var itemGap = -1
            for item in section.items {
                if case .run(let id, _) = item { itemGap = id }
                let g = Int(matching.newMatch[h])
                if s >= 0, g >= 0, Int(matching.oldSectionOf[g]) == s, oldItemGap[g] != itemGap {
                    mustMoveItem[h] = true
                }
                h += 1
            }
        }
        let plan = Plan(matching, mustMoveSection: mustMoveSection, mustMoveItem: mustMoveItem)
        var stages: [Stage<Model, Item>] = []
        stages.reserveCapacity(plan.stages.count)
        var before = Weights(old)
        for (number, indexStage) in plan.stages.enumerated() {
            let stage = StagedChangeset<Condensed<Model>, Condensed<Item>>.makeStage(
                indexStage, new: new, matching: matching)
            // After the last stage the state is `new`; before that, apply. The
            // stage was planned from these states, so it applies; should it
            // not, the positions below still come from the state before it.
            let after = number == plan.stages.count - 1 ? Weights(new) : before.applying(stage)
            stages.append(Self.expand(stage, before: before, after: after))
            before = after
        }
        self.stages = stages
    }

    /// Running totals of real elements in a condensed state.
    @usableFromInline
    struct Weights {
        /// Real sections before each condensed section.
        @usableFromInline var sections: [Int]
        /// Per condensed section, real items before each condensed item.
        @usableFromInline var items: [[Int]]
        /// Each condensed section's own weight, and each item's.
        @usableFromInline var sectionWeights: [Int]
        @usableFromInline var itemWeights: [[Int]]

        @inlinable
        init<M, I>(_ state: [ArraySection<Condensed<M>, Condensed<I>>]) {
            self.init(sectionWeights: state.map(\.model.weight), itemWeights: state.map { $0.items.map(\.weight) })
        }

        @inlinable
        init(sectionWeights: [Int], itemWeights: [[Int]]) {
            self.sectionWeights = sectionWeights
            self.itemWeights = itemWeights
            sections = []
            sections.reserveCapacity(sectionWeights.count)
            items = []
            items.reserveCapacity(itemWeights.count)
            var total = 0
            for (weight, section) in zip(sectionWeights, itemWeights) {
                sections.append(total)
                total += weight
                var itemTotal = 0
                var prefix: [Int] = []
                prefix.reserveCapacity(section.count)
                for item in section {
                    prefix.append(itemTotal)
                    itemTotal += item
                }
                items.append(prefix)
            }
        }

        /// The weights after `stage`, which the state these describe accepts:
        /// UIKit's batch semantics on weights alone (no elements copied).
        @inlinable
        func applying<M, I>(_ stage: Stage<Condensed<M>, Condensed<I>>) -> Weights {
            let sectionWeight = sectionWeights
            let itemWeight = itemWeights
            let afterCount = sections.count - stage.sectionDeleted.count + stage.sectionInserted.count
            var origin = [Int](repeating: -1, count: afterCount)
            var inserted = [Int?](repeating: nil, count: afterCount)
            for insertion in stage.sectionInserted where insertion.at < afterCount {
                inserted[insertion.at] = insertion.section.items.count
            }
            var taken = [Bool](repeating: false, count: afterCount)
            for insertion in stage.sectionInserted where insertion.at < afterCount { taken[insertion.at] = true }
            for move in stage.sectionMoved where move.to < afterCount {
                origin[move.to] = move.from
                taken[move.to] = true
            }
            var gone = [Bool](repeating: false, count: sections.count)
            for index in stage.sectionDeleted where index < gone.count { gone[index] = true }
            for move in stage.sectionMoved where move.from < gone.count { gone[move.from] = true }
            var slot = 0
            for s in sections.indices where !gone[s] {
                while slot < afterCount && taken[slot] { slot += 1 }
                if slot < afterCount { origin[slot] = s }
                slot += 1
            }
            var removed = [Set<Int>](repeating: [], count: sections.count)
            for path in stage.itemDeleted where path.section < removed.count {
                removed[path.section].insert(path.element)
            }
            for move in stage.itemMoved where move.from.section < removed.count {
                removed[move.from.section].insert(move.from.element)
            }
            var incoming = [[Int: Int]](repeating: [:], count: afterCount)
            for insertion in stage.itemInserted where insertion.at.section < afterCount {
                incoming[insertion.at.section][insertion.at.element] = 1
            }
            for move in stage.itemMoved where move.to.section < afterCount && move.from.section < itemWeight.count {
                let weights = itemWeight[move.from.section]
                incoming[move.to.section][move.to.element] =
                    move.from.element < weights.count ? weights[move.from.element] : 1
            }
            var newSections: [Int] = []
            newSections.reserveCapacity(afterCount)
            var newItems: [[Int]] = []
            newItems.reserveCapacity(afterCount)
            for t in 0..<afterCount {
                if let count = inserted[t] {
                    newSections.append(1)
                    newItems.append([Int](repeating: 1, count: count))
                    continue
                }
                let s = origin[t]
                guard s >= 0 else {
                    newSections.append(1)
                    newItems.append([])
                    continue
                }
                newSections.append(sectionWeight[s])
                let kept = itemWeight[s].indices.filter { !removed[s].contains($0) }.map { itemWeight[s][$0] }
                let extra = incoming[t]
                var next = kept.makeIterator()
                var weights: [Int] = []
                weights.reserveCapacity(kept.count + extra.count)
                for e in 0..<(kept.count + extra.count) {
                    if let weight = extra[e] {
                        weights.append(weight)
                    } else if let weight = next.next() {
                        weights.append(weight)
                    }
                }
                newItems.append(weights)
            }
            return Weights(sectionWeights: newSections, itemWeights: newItems)
        }

        @inlinable
        func section(_ index: Int) -> Int { index < sections.count ? sections[index] : index }

        @inlinable
        func path(_ path: ElementPath) -> ElementPath {
            guard path.section < items.count else { return path }
            let prefix = items[path.section]
            let element = path.element < prefix.count ? prefix[path.element] : path.element
            return ElementPath(element: element, section: sections[path.section])
        }
    }

    @inlinable
    static func expand(
        _ stage: Stage<Condensed<Model>, Condensed<Item>>, before: Weights, after: Weights
    ) -> Stage<Model, Item> {
        var result = Stage<Model, Item>()
        result.sectionDeleted = stage.sectionDeleted.map { before.section($0) }
        for insertion in stage.sectionInserted {
            guard let model = insertion.section.model.element else { continue }
            let items = insertion.section.items.compactMap(\.element)
            result.sectionInserted.append(
                .init(at: after.section(insertion.at), section: ArraySection(model: model, items: items)))
        }
        for update in stage.sectionUpdated {
            guard let model = update.model.element else { continue }
            result.sectionUpdated.append(.init(at: before.section(update.at), model: model))
        }
        result.sectionMoved = stage.sectionMoved.map {
            SectionMove(from: before.section($0.from), to: after.section($0.to))
        }
        result.itemDeleted = stage.itemDeleted.map { before.path($0) }
        for insertion in stage.itemInserted {
            guard let item = insertion.item.element else { continue }
            result.itemInserted.append(.init(at: after.path(insertion.at), item: item))
        }
        for update in stage.itemUpdated {
            guard let item = update.item.element else { continue }
            result.itemUpdated.append(.init(at: before.path(update.at), item: item))
        }
        result.itemMoved = stage.itemMoved.map { ItemMove(from: before.path($0.from), to: after.path($0.to)) }
        return result
    }
}
