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

    /// - Parameters:
    ///   - mustMoveSection: per new section, whether it must be reported moved
    ///     when it survives (it is left out of the longest increasing subsequence).
    ///   - mustMoveItem: per new item, the same for items that stay in their section.
    ///   The condensed diff uses them for elements that changed place relative to
    ///   untouched runs, so that the runs are always the ones kept.
    @usableFromInline
    init(_ m: Matching, mustMoveSection: [Bool]? = nil, mustMoveItem: [Bool]? = nil) {
        let oldSectionCount = m.oldSectionMatch.count
        let newSectionCount = m.newSectionMatch.count
        let newTotal = m.newMatch.count

        // Sections kept in place: the longest increasing run of old indices in new
        // order. Two neighbours continue a block when only deleted sections lie
        // between them in the old order.
        var lis = LongestIncreasingSubsequence()
        var sectionKept = [Bool](repeating: false, count: newSectionCount)
        var previousSection: Int32 = -1
        for t in 0..<newSectionCount where m.newSectionMatch[t] >= 0 && mustMoveSection?[t] != true {
            let s = m.newSectionMatch[t]
            var continues = previousSection >= 0 && s > previousSection
            if continues {
                for between in (Int(previousSection) + 1)..<Int(s) where m.oldSectionMatch[between] >= 0 {
                    continues = false
                    break
                }
            }
            lis.append(s, continuesBlock: continues)
            previousSection = s
        }
        _ = lis.run()
        var cursor = (block: -1, left: Int32(0))
        for t in 0..<newSectionCount where m.newSectionMatch[t] >= 0 && mustMoveSection?[t] != true {
            sectionKept[t] = lis.isNextKept(&cursor)
        }

        // Fate of every new item; the subsequence is taken per section, over the
        // items that stay in it ("candidates"). Two candidates continue a block
        // when every old item between them left the section or was deleted; the
        // scan that checks it stops at the first candidate, and the old items it
        // passes are each passed once (by the pair starting at the candidate that
        // precedes them), so all scans together are linear.
        var fate = [ItemFate](repeating: .inserted, count: newTotal)
        var hasMovedIntoInserted = false
        for t in 0..<newSectionCount {
            let oldSection = m.newSectionMatch[t]
            let range = m.newStart[t]..<m.newStart[t + 1]
            if oldSection < 0 {
                for h in range where m.newMatch[h] >= 0 {
                    fate[h] = .movedIntoInserted
                    hasMovedIntoInserted = true
                }
                continue
            }
            lis.reset()
            var previous: Int32 = -1
            for h in range {
                let g = m.newMatch[h]
                if g < 0 { continue }
                if m.oldSectionOf[Int(g)] == oldSection && mustMoveItem?[h] == true {
                    fate[h] = .movedWithin
                } else if m.oldSectionOf[Int(g)] == oldSection {
                    var continues = previous >= 0 && g > previous
                    if continues {
                        for between in (Int(previous) + 1)..<Int(g) {
                            let later = Int(m.oldMatch[between])
                            if later >= 0 && m.newSectionOf[later] == Int32(t) {
                                continues = false
                                break
                            }
                        }
                    }
                    lis.append(g, continuesBlock: continues)
                    previous = g
                    fate[h] = .kept
                } else {
                    fate[h] = .movedAcross
                }
            }
            _ = lis.run()
            var cursor = (block: -1, left: Int32(0))
            for h in range where fate[h] == .kept {
                if !lis.isNextKept(&cursor) { fate[h] = .movedWithin }
            }
        }

        // Deleted sections that items must leave first ("lingering"), and the layout.
        var lingering = [Bool](repeating: false, count: oldSectionCount)
        var hasLingering = false
        for s in 0..<oldSectionCount where m.oldSectionMatch[s] < 0 {
            for g in m.oldStart[s]..<m.oldStart[s + 1] where m.oldMatch[g] >= 0 {
                lingering[s] = true
                hasLingering = true
                break
            }
        }
        var parkingSection = -1  // new index of the surviving section that parks items
        var threeStages = false
        if hasMovedIntoInserted {
            var fromDeleted = false
            var fromDeletedChanged = false
            for h in 0..<newTotal where fate[h] == .movedIntoInserted {
                let g = Int(m.newMatch[h])
                if m.oldSectionMatch[Int(m.oldSectionOf[g])] < 0 {
                    fromDeleted = true
                    if m.itemChanged[h] { fromDeletedChanged = true }
                }
            }
            if fromDeleted {
                // A section that is not updated, so parking does not push its update to a later stage.
                let surviving = m.newSectionMatch.indices.filter { m.newSectionMatch[$0] >= 0 }
                parkingSection = surviving.first { !m.sectionChanged[$0] } ?? surviving.first ?? -1
                if parkingSection < 0 || fromDeletedChanged {
                    threeStages = true
                    parkingSection = -1
                }
            }
        }

        // Section order after stage 1: the new order, with each lingering section
        // right after the last section kept in place that precedes it in the old order.
        var sectionAfterStage1 = Array(0..<newSectionCount)
        var lingeringAfterStage1 = [Int](repeating: -1, count: oldSectionCount)
        if hasLingering {
            var attached: [(anchor: Int, oldSection: Int)] = []
            var anchor = -1
            for s in 0..<oldSectionCount {
                let t = Int(m.oldSectionMatch[s])
                if t >= 0 {
                    if sectionKept[t] { anchor = t }
                } else if lingering[s] {
                    attached.append((anchor, s))
                }
            }
            var position = 0
            var next = 0
            while next < attached.count && attached[next].anchor < 0 {
                lingeringAfterStage1[attached[next].oldSection] = position
                position += 1
                next += 1
            }
            for t in 0..<newSectionCount {
                sectionAfterStage1[t] = position
                position += 1
                while next < attached.count && attached[next].anchor == t {
                    lingeringAfterStage1[attached[next].oldSection] = position
                    position += 1
                    next += 1
                }
            }
        }

        // Items after stage 1: waiting items (bound for inserted sections, not moved
        // yet) stay right after the last kept item preceding them; parked items go
        // at the end of the parking section.
        var positionAfterStage1: [Int32] = []  // new item → index in its section after stage 1
        var waitingPosition: [Int32: Int32] = [:]  // old item → index after stage 1
        var parked: [Int32] = []  // old items parked, in new order
        if hasMovedIntoInserted {
            var hasWaiting = [Bool](repeating: false, count: oldSectionCount)
            for h in 0..<newTotal where fate[h] == .movedIntoInserted {
                let g = m.newMatch[h]
                let s = Int(m.oldSectionOf[Int(g)])
                if m.oldSectionMatch[s] >= 0 {
                    hasWaiting[s] = true
                } else if parkingSection >= 0 {
                    parked.append(g)
                }
            }
            positionAfterStage1 = [Int32](repeating: 0, count: newTotal)
            for t in 0..<newSectionCount {
                let range = m.newStart[t]..<m.newStart[t + 1]
                let oldSection = Int(m.newSectionMatch[t])
                var attached: [(anchor: Int, item: Int32)] = []
                if oldSection >= 0 && hasWaiting[oldSection] {
                    var anchor = -1
                    for g in m.oldStart[oldSection]..<m.oldStart[oldSection + 1] {
                        let h = Int(m.oldMatch[g])
                        if h < 0 { continue }
                        if fate[h] == .kept {
                            anchor = h - range.lowerBound
                        } else if fate[h] == .movedIntoInserted {
                            attached.append((anchor, Int32(g)))
                        }
                    }
                }
                var position: Int32 = 0
                var next = 0
                while next < attached.count && attached[next].anchor < 0 {
                    waitingPosition[attached[next].item] = position
                    position += 1
                    next += 1
                }
                for h in range {
                    positionAfterStage1[h] = position
                    position += 1
                    while next < attached.count && attached[next].anchor == h - range.lowerBound {
                        waitingPosition[attached[next].item] = position
                        position += 1
                        next += 1
                    }
                }
                if t == parkingSection {
                    for g in parked {
                        waitingPosition[g] = position
                        position += 1
                    }
                }
            }
            if threeStages {
                // Items waiting in lingering sections: their index after stage 1.
                for s in 0..<oldSectionCount where lingering[s] {
                    var position: Int32 = 0
                    for g in m.oldStart[s]..<m.oldStart[s + 1] {
                        let h = Int(m.oldMatch[g])
                        if h >= 0 && fate[h] == .movedAcross { continue }
                        if h >= 0 { waitingPosition[Int32(g)] = position }
                        position += 1
                    }
                }
            }
        }

        @inline(__always) func oldPath(_ g: Int) -> ElementPath {
            let s = Int(m.oldSectionOf[g])
            return ElementPath(element: g - m.oldStart[s], section: s)
        }

        var first = IndexStage()
        var second = IndexStage()
        var third = IndexStage()

        for s in 0..<oldSectionCount where m.oldSectionMatch[s] < 0 {
            if !lingering[s] {
                first.sectionDeleted.append(s)
            } else if threeStages {
                third.sectionDeleted.append(lingeringAfterStage1[s])
            } else {
                second.sectionDeleted.append(lingeringAfterStage1[s])
            }
        }
        for t in 0..<newSectionCount {
            let s = Int(m.newSectionMatch[t])
            if s < 0 {
                first.sectionInserted.append((sectionAfterStage1[t], Int32(t)))
            } else if !sectionKept[t] {
                first.sectionMoved.append(SectionMove(from: s, to: sectionAfterStage1[t]))
                if m.sectionChanged[t] { second.sectionUpdated.append((sectionAfterStage1[t], Int32(t))) }
            } else if m.sectionChanged[t] {
                first.sectionUpdated.append((s, Int32(t)))
            }
        }
        for s in 0..<oldSectionCount where m.oldSectionMatch[s] >= 0 {
            let base = m.oldStart[s]
            for g in base..<m.oldStart[s + 1] where m.oldMatch[g] < 0 {
                first.itemDeleted.append(ElementPath(element: g - base, section: s))
            }
        }
        let hasPositions = !positionAfterStage1.isEmpty
        for t in 0..<newSectionCount {
            let base = m.newStart[t]
            let sectionNow = sectionAfterStage1[t]
            let surviving = m.newSectionMatch[t] >= 0
            for h in base..<m.newStart[t + 1] {
                let at = ElementPath(
                    element: hasPositions ? Int(positionAfterStage1[h]) : h - base, section: sectionNow)
                let changed = m.itemChanged[h]
                switch fate[h] {
                case .inserted:
                    if surviving { first.itemInserted.append((at, Int32(h))) }
                case .kept:
                    if changed { first.itemUpdated.append((oldPath(Int(m.newMatch[h])), Int32(h))) }
                case .movedWithin, .movedAcross:
                    first.itemMoved.append(ItemMove(from: oldPath(Int(m.newMatch[h])), to: at))
                    if changed { second.itemUpdated.append((at, Int32(h))) }
                case .movedIntoInserted:
                    let g = m.newMatch[h]
                    let s = Int(m.oldSectionOf[Int(g)])
                    let waiting = Int(waitingPosition[g] ?? 0)
                    let source: ElementPath
                    if m.oldSectionMatch[s] >= 0 {
                        source = ElementPath(element: waiting, section: sectionAfterStage1[Int(m.oldSectionMatch[s])])
                        if changed { first.itemUpdated.append((oldPath(Int(g)), Int32(h))) }
                    } else if parkingSection >= 0 {
                        source = ElementPath(element: waiting, section: sectionAfterStage1[parkingSection])
                        first.itemMoved.append(ItemMove(from: oldPath(Int(g)), to: source))
                    } else {
                        source = ElementPath(element: waiting, section: lingeringAfterStage1[s])
                        if changed { first.itemUpdated.append((oldPath(Int(g)), Int32(h))) }
                    }
                    let target = ElementPath(element: h - base, section: threeStages ? sectionNow : t)
                    second.itemMoved.append(ItemMove(from: source, to: target))
                }
            }
        }
        var planned = [first, second, third].filter { !$0.isEmpty }
        Self.isolateSectionUpdates(&planned)
        for var stage in planned {
            stage.sort()
            stages.append(stage)
        }
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
