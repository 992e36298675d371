/// One stage in index form: positions, plus the numbers of the new sections and
/// items whose values the stage carries. ``StagedChangeset`` turns it into a
/// ``Stage`` by reading those values.
@usableFromInline
struct IndexStage {
    @usableFromInline var sectionDeleted: [Int] = []
    /// (index after the stage, new section number)
    @usableFromInline var sectionInserted: [(at: Int, section: Int32)] = []
    /// (index before the stage, new section number)
    @usableFromInline var sectionUpdated: [(at: Int, section: Int32)] = []
    @usableFromInline var sectionMoved: [SectionMove] = []
    @usableFromInline var itemDeleted: [ElementPath] = []
    /// (path after the stage, new global item number)
    @usableFromInline var itemInserted: [(at: ElementPath, item: Int32)] = []
    /// (path before the stage, new global item number)
    @usableFromInline var itemUpdated: [(at: ElementPath, item: Int32)] = []
    @usableFromInline var itemMoved: [ItemMove] = []

    @usableFromInline
    var isEmpty: Bool {
        sectionDeleted.isEmpty && sectionInserted.isEmpty && sectionUpdated.isEmpty && sectionMoved.isEmpty
            && itemDeleted.isEmpty && itemInserted.isEmpty && itemUpdated.isEmpty && itemMoved.isEmpty
    }

    /// Sorts every list by position, so that equal changes give equal stages.
    mutating func sort() {
        sectionDeleted.sort()
        sectionInserted.sort { $0.at < $1.at }
        sectionUpdated.sort { $0.at < $1.at }
        sectionMoved.sort { $0.from < $1.from }
        itemDeleted.sort()
        itemInserted.sort { $0.at < $1.at }
        itemUpdated.sort { $0.at < $1.at }
        itemMoved.sort { $0.from < $1.from }
    }
}

/// What happens to a new item.
@usableFromInline
enum ItemFate: UInt8 {
    /// Not in the old state.
    case inserted
    /// Same section, in the longest increasing subsequence: stays in place.
    case kept
    /// Same section, outside the subsequence: moved within its section.
    case movedWithin
    /// From another section, which survives or is deleted: moved in the first stage.
    case movedAcross
    /// Into a section inserted in this change: moved once that section exists.
    case movedIntoInserted
}

/// Decides the stages from a ``Matching``.
///
/// ## The stages
///
/// *Stage 1* holds everything UIKit lets one batch hold: section deletes (except
/// of sections that items must leave first), inserts, moves, and updates of
/// sections that do not move; item deletes, inserts, moves between and within
/// surviving sections, moves out of deleted sections into surviving ones, and
/// updates of items that do not move in it. A section inserted here carries only
/// its new items. *Stage 2* holds updates of the items and sections that moved in
/// stage 1 (at their new positions), the moves of items into sections inserted in
/// stage 1, and the deletes of the sections they left. When an item goes from a
/// deleted section to an inserted one, stage 1 parks it at the end of a surviving
/// section, so it is never in a section deleted or inserted in the stage that
/// moves it. When it cannot be parked (it is also updated, or no section
/// survives), it waits in its deleted section; stage 2 moves it and *stage 3*
/// deletes the sections left behind. Empty stages are left out.
///
/// ## Why this is the fewest stages
///
/// One stage suffices exactly when nothing below happens, and then only stage 1 is
/// non-empty. Two stages are needed when (a) an item or a section is both moved
/// and updated, since UIKit forbids both in one batch (moved, that is, by the
/// fewest moves chosen: when several longest increasing subsequences exist, the
/// one patience sorting finds may move an updated item that another would keep); (b) a surviving item leaves
/// a deleted section, since it must move out in a batch before the one that
/// deletes the section; or (c) an item enters an inserted section, since the
/// section must exist before the batch that moves the item in. Our second stage
/// exists only in these cases. Three are needed when an item goes from a deleted
/// section D to an inserted section N and either (d) no section survives or (e) it
/// is updated. Proof for two stages with states S0, S1, S2: the item is in D in S0
/// and in N in S2. If it is in D in S1, it leaves D in stage 2, which deletes D.
/// If it is in N in S1, it moves into N in stage 1, which inserts N. Otherwise it
/// is in a third section Q in S1; it moves into Q in stage 1 and out of Q in stage
/// 2, so Q is neither inserted in stage 1 nor deleted in stage 2: Q survives,
/// contradicting (d). Under (e) the item moves in stage 1 and in stage 2 and
/// cannot be updated in either. Our third stage exists only under (d) or (e).
@usableFromInline
struct Plan {
    @usableFromInline var stages: [IndexStage] = []

    /// Plans the stages in named phases; each returns a small value that the
    /// later ones read. Throughout, `oldSection` and `newSection` are section
    /// indices in the old and new states, `oldItem` and `newItem` global item
    /// numbers in them (see ``Matching``).
    ///
    /// - Parameters:
    ///   - mustMoveSection: per new section, whether it must be reported moved
    ///     when it survives (it is left out of the longest increasing subsequence).
    ///   - mustMoveItem: per new item, the same for items that stay in their section.
    ///   The condensed diff uses them for elements that changed place relative to
    ///   untouched runs, so that the runs are always the ones kept.
    @usableFromInline
    init(_ matching: Matching, mustMoveSection: [Bool]? = nil, mustMoveItem: [Bool]? = nil) {
        // What stays and what moves.
        var lis = LongestIncreasingSubsequence()
        let sectionKept = Self.sectionsKeptInPlace(matching, mustMove: mustMoveSection, lis: &lis)
        let fates = Self.itemFates(matching, mustMove: mustMoveItem, lis: &lis)
        // Where everything is between stage 1 and the stages after it.
        let lingering = Self.lingeringSections(matching)
        let route = Self.routeFromDeletedToInserted(matching, fates)
        let sectionLayout = Self.sectionLayoutAfterStage1(matching, sectionKept: sectionKept, lingering: lingering)
        let itemLayout = Self.itemLayoutAfterStage1(matching, fates, lingering: lingering, route: route)
        // The operations, each in its stage.
        var draft = Draft(matching, route: route, sections: sectionLayout)
        draft.addSectionDeletes(lingering)
        draft.addSectionInsertsMovesAndUpdates(sectionKept)
        draft.addItemDeletes()
        draft.addItemInsertsMovesAndUpdates(fates, itemLayout)
        stages = Self.split(draft)
    }

    // MARK: - What stays and what moves

    /// Sections kept in place: the longest increasing run of old sections in new
    /// order (per new section; false for inserted ones and those that must move).
    ///
    /// Two neighbours continue a block when only deleted sections lie between
    /// them in the old order.
    private static func sectionsKeptInPlace(
        _ matching: Matching, mustMove: [Bool]?, lis: inout LongestIncreasingSubsequence
    ) -> [Bool] {
        let newSectionCount = matching.newSectionMatch.count
        var sectionKept = [Bool](repeating: false, count: newSectionCount)
        var previousOldSection: Int32 = -1
        for newSection in 0..<newSectionCount
        where matching.newSectionMatch[newSection] >= 0 && mustMove?[newSection] != true {
            let oldSection = matching.newSectionMatch[newSection]
            var continues = previousOldSection >= 0 && oldSection > previousOldSection
            if continues {
                for between in (Int(previousOldSection) + 1)..<Int(oldSection)
                where matching.oldSectionMatch[between] >= 0 {
                    continues = false
                    break
                }
            }
            lis.append(oldSection, continuesBlock: continues)
            previousOldSection = oldSection
        }
        _ = lis.run()
        var cursor = (block: -1, left: Int32(0))
        for newSection in 0..<newSectionCount
        where matching.newSectionMatch[newSection] >= 0 && mustMove?[newSection] != true {
            sectionKept[newSection] = lis.isNextKept(&cursor)
        }
        return sectionKept
    }

    /// What happens to each new item, and whether any moves into an inserted section.
    private struct ItemFates {
        /// New item → its fate.
        var fate: [ItemFate]
        var hasMovedIntoInserted: Bool
    }

    /// The fate of every new item: inserted, kept, or moved (within its section,
    /// across sections, or into an inserted section).
    ///
    /// The longest increasing subsequence is taken per section, over the items
    /// that stay in it ("candidates"). Two candidates continue a block when every
    /// old item between them left the section or was deleted; the scan that checks
    /// it stops at the first candidate, and the old items it passes are each passed
    /// once (by the pair starting at the candidate that precedes them), so all
    /// scans together are linear.
    private static func itemFates(
        _ matching: Matching, mustMove: [Bool]?, lis: inout LongestIncreasingSubsequence
    ) -> ItemFates {
        var fates = ItemFates(
            fate: [ItemFate](repeating: .inserted, count: matching.newMatch.count), hasMovedIntoInserted: false)
        for newSection in 0..<matching.newSectionMatch.count {
            let oldSection = matching.newSectionMatch[newSection]
            let newItems = matching.newStart[newSection]..<matching.newStart[newSection + 1]
            if oldSection < 0 {
                for newItem in newItems where matching.newMatch[newItem] >= 0 {
                    fates.fate[newItem] = .movedIntoInserted
                    fates.hasMovedIntoInserted = true
                }
                continue
            }
            lis.reset()
            var previousOldItem: Int32 = -1
            for newItem in newItems {
                let oldItem = matching.newMatch[newItem]
                if oldItem < 0 { continue }
                if matching.oldSectionOf[Int(oldItem)] == oldSection && mustMove?[newItem] == true {
                    fates.fate[newItem] = .movedWithin
                } else if matching.oldSectionOf[Int(oldItem)] == oldSection {
                    var continues = previousOldItem >= 0 && oldItem > previousOldItem
                    if continues {
                        for between in (Int(previousOldItem) + 1)..<Int(oldItem) {
                            let later = Int(matching.oldMatch[between])
                            if later >= 0 && matching.newSectionOf[later] == Int32(newSection) {
                                continues = false
                                break
                            }
                        }
                    }
                    lis.append(oldItem, continuesBlock: continues)
                    previousOldItem = oldItem
                    fates.fate[newItem] = .kept
                } else {
                    fates.fate[newItem] = .movedAcross
                }
            }
            _ = lis.run()
            var cursor = (block: -1, left: Int32(0))
            for newItem in newItems where fates.fate[newItem] == .kept {
                if !lis.isNextKept(&cursor) { fates.fate[newItem] = .movedWithin }
            }
        }
        return fates
    }

    // MARK: - Where everything is after stage 1

    /// Deleted sections that items must leave first ("lingering"): they are
    /// deleted in a later stage than stage 1.
    private struct LingeringSections {
        /// Old section → whether it lingers.
        var isLingering: [Bool]
        var any: Bool
    }

    /// The deleted sections that hold an item that survives.
    private static func lingeringSections(_ matching: Matching) -> LingeringSections {
        let oldSectionCount = matching.oldSectionMatch.count
        var lingering = LingeringSections(isLingering: [Bool](repeating: false, count: oldSectionCount), any: false)
        for oldSection in 0..<oldSectionCount where matching.oldSectionMatch[oldSection] < 0 {
            for oldItem in matching.oldStart[oldSection]..<matching.oldStart[oldSection + 1]
            where matching.oldMatch[oldItem] >= 0 {
                lingering.isLingering[oldSection] = true
                lingering.any = true
                break
            }
        }
        return lingering
    }

    /// How items that go from a deleted section to an inserted one get there.
    private struct Route {
        /// New index of the surviving section that parks them in stage 1, or -1.
        var parkingSection = -1
        /// Whether they wait in their deleted sections instead, which then are
        /// deleted in a third stage.
        var threeStages = false
    }

    /// Parks items from deleted to inserted sections in a surviving section when
    /// one exists and none of them is updated; otherwise they need three stages
    /// (see the proof above).
    private static func routeFromDeletedToInserted(_ matching: Matching, _ fates: ItemFates) -> Route {
        var route = Route()
        guard fates.hasMovedIntoInserted else { return route }
        var fromDeleted = false
        var fromDeletedChanged = false
        for newItem in 0..<matching.newMatch.count where fates.fate[newItem] == .movedIntoInserted {
            let oldItem = Int(matching.newMatch[newItem])
            if matching.oldSectionMatch[Int(matching.oldSectionOf[oldItem])] < 0 {
                fromDeleted = true
                if matching.itemChanged[newItem] { fromDeletedChanged = true }
            }
        }
        if fromDeleted {
            // A section that is not updated, so parking does not push its update to a later stage.
            let surviving = matching.newSectionMatch.indices.filter { matching.newSectionMatch[$0] >= 0 }
            route.parkingSection = surviving.first { !matching.sectionChanged[$0] } ?? surviving.first ?? -1
            if route.parkingSection < 0 || fromDeletedChanged {
                route.threeStages = true
                route.parkingSection = -1
            }
        }
        return route
    }

    /// Section positions after stage 1.
    private struct SectionLayout {
        /// New section → its position after stage 1.
        var newSectionAfterStage1: [Int]
        /// Old section → its position after stage 1, for lingering sections (else -1).
        var lingeringAfterStage1: [Int]
    }

    /// Section order after stage 1: the new order, with each lingering section
    /// right after the last section kept in place that precedes it in the old order.
    private static func sectionLayoutAfterStage1(
        _ matching: Matching, sectionKept: [Bool], lingering: LingeringSections
    ) -> SectionLayout {
        let oldSectionCount = matching.oldSectionMatch.count
        let newSectionCount = matching.newSectionMatch.count
        var layout = SectionLayout(
            newSectionAfterStage1: Array(0..<newSectionCount),
            lingeringAfterStage1: [Int](repeating: -1, count: oldSectionCount))
        guard lingering.any else { return layout }
        var attached: [(anchor: Int, oldSection: Int)] = []
        var anchor = -1
        for oldSection in 0..<oldSectionCount {
            let newSection = Int(matching.oldSectionMatch[oldSection])
            if newSection >= 0 {
                if sectionKept[newSection] { anchor = newSection }
            } else if lingering.isLingering[oldSection] {
                attached.append((anchor, oldSection))
            }
        }
        var position = 0
        var next = 0
        while next < attached.count && attached[next].anchor < 0 {
            layout.lingeringAfterStage1[attached[next].oldSection] = position
            position += 1
            next += 1
        }
        for newSection in 0..<newSectionCount {
            layout.newSectionAfterStage1[newSection] = position
            position += 1
            while next < attached.count && attached[next].anchor == newSection {
                layout.lingeringAfterStage1[attached[next].oldSection] = position
                position += 1
                next += 1
            }
        }
        return layout
    }

    /// Item positions after stage 1; empty unless an item moves into an inserted section.
    private struct ItemLayout {
        /// New item → its index in its section after stage 1.
        var positionAfterStage1: [Int32] = []
        /// Old item → its index after stage 1, for items that move into an
        /// inserted section after stage 1 (waiting or parked).
        var waitingPosition: [Int32: Int32] = [:]
    }

    /// Items after stage 1: waiting items (bound for inserted sections, not moved
    /// yet) stay right after the last kept item preceding them; parked items go
    /// at the end of the parking section.
    private static func itemLayoutAfterStage1(
        _ matching: Matching, _ fates: ItemFates, lingering: LingeringSections, route: Route
    ) -> ItemLayout {
        var layout = ItemLayout()
        guard fates.hasMovedIntoInserted else { return layout }
        let oldSectionCount = matching.oldSectionMatch.count
        let newTotal = matching.newMatch.count
        let fate = fates.fate
        var hasWaiting = [Bool](repeating: false, count: oldSectionCount)
        var parked: [Int32] = []  // old items parked, in new order
        for newItem in 0..<newTotal where fate[newItem] == .movedIntoInserted {
            let oldItem = matching.newMatch[newItem]
            let oldSection = Int(matching.oldSectionOf[Int(oldItem)])
            if matching.oldSectionMatch[oldSection] >= 0 {
                hasWaiting[oldSection] = true
            } else if route.parkingSection >= 0 {
                parked.append(oldItem)
            }
        }
        layout.positionAfterStage1 = [Int32](repeating: 0, count: newTotal)
        for newSection in 0..<matching.newSectionMatch.count {
            let newItems = matching.newStart[newSection]..<matching.newStart[newSection + 1]
            let oldSection = Int(matching.newSectionMatch[newSection])
            var attached: [(anchor: Int, oldItem: Int32)] = []
            if oldSection >= 0 && hasWaiting[oldSection] {
                var anchor = -1
                for oldItem in matching.oldStart[oldSection]..<matching.oldStart[oldSection + 1] {
                    let newItem = Int(matching.oldMatch[oldItem])
                    if newItem < 0 { continue }
                    if fate[newItem] == .kept {
                        anchor = newItem - newItems.lowerBound
                    } else if fate[newItem] == .movedIntoInserted {
                        attached.append((anchor, Int32(oldItem)))
                    }
                }
            }
            var position: Int32 = 0
            var next = 0
            while next < attached.count && attached[next].anchor < 0 {
                layout.waitingPosition[attached[next].oldItem] = position
                position += 1
                next += 1
            }
            for newItem in newItems {
                layout.positionAfterStage1[newItem] = position
                position += 1
                while next < attached.count && attached[next].anchor == newItem - newItems.lowerBound {
                    layout.waitingPosition[attached[next].oldItem] = position
                    position += 1
                    next += 1
                }
            }
            if newSection == route.parkingSection {
                for oldItem in parked {
                    layout.waitingPosition[oldItem] = position
                    position += 1
                }
            }
        }
        if route.threeStages {
            // Items waiting in lingering sections: their index after stage 1.
            for oldSection in 0..<oldSectionCount where lingering.isLingering[oldSection] {
                var position: Int32 = 0
                for oldItem in matching.oldStart[oldSection]..<matching.oldStart[oldSection + 1] {
                    let newItem = Int(matching.oldMatch[oldItem])
                    if newItem >= 0 && fate[newItem] == .movedAcross { continue }
                    if newItem >= 0 { layout.waitingPosition[Int32(oldItem)] = position }
                    position += 1
                }
            }
        }
        return layout
    }

    // MARK: - The operations, each in its stage

    /// The three stages being filled; ``Plan/split(_:)`` drops the empty ones.
    private struct Draft {
        let matching: Matching
        let route: Route
        let sections: SectionLayout
        var first = IndexStage()
        var second = IndexStage()
        var third = IndexStage()

        init(_ matching: Matching, route: Route, sections: SectionLayout) {
            self.matching = matching
            self.route = route
            self.sections = sections
        }

        /// An old item's path in the old state.
        @inline(__always)
        func oldPath(_ oldItem: Int) -> ElementPath {
            let oldSection = Int(matching.oldSectionOf[oldItem])
            return ElementPath(element: oldItem - matching.oldStart[oldSection], section: oldSection)
        }

        /// Section deletes: in stage 1, except lingering sections, which go in
        /// the stage after the items leave them (at their position after stage 1).
        mutating func addSectionDeletes(_ lingering: LingeringSections) {
            for oldSection in 0..<matching.oldSectionMatch.count where matching.oldSectionMatch[oldSection] < 0 {
                if !lingering.isLingering[oldSection] {
                    first.sectionDeleted.append(oldSection)
                } else if route.threeStages {
                    third.sectionDeleted.append(sections.lingeringAfterStage1[oldSection])
                } else {
                    second.sectionDeleted.append(sections.lingeringAfterStage1[oldSection])
                }
            }
        }

        /// Section inserts and moves in stage 1; updates in stage 1, or in stage 2
        /// (at the new position) for a section that moves.
        mutating func addSectionInsertsMovesAndUpdates(_ sectionKept: [Bool]) {
            for newSection in 0..<matching.newSectionMatch.count {
                let oldSection = Int(matching.newSectionMatch[newSection])
                let after = sections.newSectionAfterStage1[newSection]
                if oldSection < 0 {
                    first.sectionInserted.append((after, Int32(newSection)))
                } else if !sectionKept[newSection] {
                    first.sectionMoved.append(SectionMove(from: oldSection, to: after))
                    if matching.sectionChanged[newSection] { second.sectionUpdated.append((after, Int32(newSection))) }
                } else if matching.sectionChanged[newSection] {
                    first.sectionUpdated.append((oldSection, Int32(newSection)))
                }
            }
        }

        /// Item deletes, all in stage 1: the unmatched items of surviving sections
        /// (a deleted section takes its deleted items with it).
        mutating func addItemDeletes() {
            for oldSection in 0..<matching.oldSectionMatch.count where matching.oldSectionMatch[oldSection] >= 0 {
                let base = matching.oldStart[oldSection]
                for oldItem in base..<matching.oldStart[oldSection + 1] where matching.oldMatch[oldItem] < 0 {
                    first.itemDeleted.append(ElementPath(element: oldItem - base, section: oldSection))
                }
            }
        }

        /// Item inserts, moves and updates, by fate, in one pass over the new items:
        /// inserts into surviving sections and moves in stage 1 (an inserted section
        /// carries its new items); updates in stage 1 for an item that does not move
        /// then, else in stage 2 at its new position; moves into inserted sections
        /// in stage 2, from where the item waits or is parked after stage 1.
        mutating func addItemInsertsMovesAndUpdates(_ fates: ItemFates, _ items: ItemLayout) {
            let hasPositions = !items.positionAfterStage1.isEmpty
            for newSection in 0..<matching.newSectionMatch.count {
                let base = matching.newStart[newSection]
                let sectionNow = sections.newSectionAfterStage1[newSection]
                let surviving = matching.newSectionMatch[newSection] >= 0
                for newItem in base..<matching.newStart[newSection + 1] {
                    let at = ElementPath(
                        element: hasPositions ? Int(items.positionAfterStage1[newItem]) : newItem - base,
                        section: sectionNow)
                    let changed = matching.itemChanged[newItem]
                    switch fates.fate[newItem] {
                    case .inserted:
                        if surviving { first.itemInserted.append((at, Int32(newItem))) }
                    case .kept:
                        if changed {
                            first.itemUpdated.append((oldPath(Int(matching.newMatch[newItem])), Int32(newItem)))
                        }
                    case .movedWithin, .movedAcross:
                        first.itemMoved.append(ItemMove(from: oldPath(Int(matching.newMatch[newItem])), to: at))
                        if changed { second.itemUpdated.append((at, Int32(newItem))) }
                    case .movedIntoInserted:
                        let oldItem = matching.newMatch[newItem]
                        let oldSection = Int(matching.oldSectionOf[Int(oldItem)])
                        let waiting = Int(items.waitingPosition[oldItem] ?? 0)
                        let source: ElementPath
                        if matching.oldSectionMatch[oldSection] >= 0 {
                            // Waits in its surviving section.
                            let sectionAfter = sections.newSectionAfterStage1[Int(matching.oldSectionMatch[oldSection])]
                            source = ElementPath(element: waiting, section: sectionAfter)
                            if changed { first.itemUpdated.append((oldPath(Int(oldItem)), Int32(newItem))) }
                        } else if route.parkingSection >= 0 {
                            // Leaves its deleted section for the parking section in stage 1.
                            let sectionAfter = sections.newSectionAfterStage1[route.parkingSection]
                            source = ElementPath(element: waiting, section: sectionAfter)
                            first.itemMoved.append(ItemMove(from: oldPath(Int(oldItem)), to: source))
                        } else {
                            // Waits in its lingering section.
                            source = ElementPath(element: waiting, section: sections.lingeringAfterStage1[oldSection])
                            if changed { first.itemUpdated.append((oldPath(Int(oldItem)), Int32(newItem))) }
                        }
                        let target = ElementPath(
                            element: newItem - base, section: route.threeStages ? sectionNow : newSection)
                        second.itemMoved.append(ItemMove(from: source, to: target))
                    }
                }
            }
        }
    }

    /// Stage split: the non-empty stages in order, with section updates moved
    /// away from item changes in their section, each sorted by position.
    private static func split(_ draft: Draft) -> [IndexStage] {
        var planned = [draft.first, draft.second, draft.third].filter { !$0.isEmpty }
        Self.isolateSectionUpdates(&planned)
        var stages: [IndexStage] = []
        for var stage in planned {
            stage.sort()
            stages.append(stage)
        }
        return stages
    }

    /// Moves every section update that shares its stage with an item operation
    /// in that section (a delete, insert, update, or a move into or out of it)
    /// to the next stage, at the section's position after its stage, adding a
    /// stage at the end only when the last one has such a conflict. Clients
    /// may then apply a section update as `reloadSections`, which UIKit rejects
    /// beside any item change in the same section.
    ///
    /// - Complexity: O(k log k) per stage for k operations.
    static func isolateSectionUpdates(_ stages: inout [IndexStage]) {
        var number = 0
        while number < stages.count {
            let stage = stages[number]
            number += 1
            guard !stage.sectionUpdated.isEmpty else { continue }
            var before = Set<Int>()
            var after = Set<Int>()
            for path in stage.itemDeleted { before.insert(path.section) }
            for update in stage.itemUpdated { before.insert(update.at.section) }
            for move in stage.itemMoved {
                before.insert(move.from.section)
                after.insert(move.to.section)
            }
            for insertion in stage.itemInserted { after.insert(insertion.at.section) }
            if before.isEmpty && after.isEmpty { continue }
            let mapper = SectionPositionMapper(stage)
            var kept: [(at: Int, section: Int32)] = []
            var deferred: [(at: Int, section: Int32)] = []
            for update in stage.sectionUpdated {
                let later = mapper.positionAfter(update.at)
                if before.contains(update.at) || after.contains(later) {
                    deferred.append((later, update.section))
                } else {
                    kept.append(update)
                }
            }
            guard !deferred.isEmpty else { continue }
            stages[number - 1].sectionUpdated = kept
            if number == stages.count { stages.append(IndexStage()) }
            stages[number].sectionUpdated.append(contentsOf: deferred)
        }
    }
}

/// Where a section that a stage neither deletes nor moves ends up after it.
struct SectionPositionMapper {
    private let removed: [Int]
    private let targets: [Int]

    init(_ stage: IndexStage) {
        removed = (stage.sectionDeleted + stage.sectionMoved.map(\.from)).sorted()
        targets = (stage.sectionInserted.map(\.at) + stage.sectionMoved.map(\.to)).sorted()
    }

    /// The position after the stage of the section at `before` before it.
    func positionAfter(_ before: Int) -> Int {
        // Its rank among the sections that stay, then the rank-th free slot
        // once inserted and moved sections take their places.
        var position = before - Self.countBelow(before, in: removed)
        for target in targets {
            if target <= position { position += 1 } else { break }
        }
        return position
    }

    private static func countBelow(_ value: Int, in sorted: [Int]) -> Int {
        var low = 0
        var high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
