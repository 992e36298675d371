import Testing

@testable import SectionDiff

/// A test element: an integer identity and a version; a version change is an update.
struct TestItem: Diffable, Hashable, Sendable, CustomStringConvertible {
    var id: Int
    var version: Int = 0
    var description: String { version == 0 ? "\(id)" : "\(id)v\(version)" }
}

typealias TestSection = ArraySection<TestItem, TestItem>
typealias TestChangeset = StagedChangeset<TestItem, TestItem>
typealias TestStage = Stage<TestItem, TestItem>

func section(_ id: Int, _ items: [Int], version: Int = 0) -> TestSection {
    TestSection(model: TestItem(id: id, version: version), items: items.map { TestItem(id: $0) })
}

func section(_ id: Int, items: [TestItem], version: Int = 0) -> TestSection {
    TestSection(model: TestItem(id: id, version: version), items: items)
}

func path(_ section: Int, _ element: Int) -> ElementPath { ElementPath(element: element, section: section) }

/// Length of the longest strictly increasing subsequence, by the quadratic
/// textbook recurrence (deliberately not the engine's algorithm).
func naiveLISLength(_ values: [Int]) -> Int {
    var best = [Int](repeating: 1, count: values.count)
    for i in values.indices {
        for j in 0..<i where values[j] < values[i] { best[i] = max(best[i], best[j] + 1) }
    }
    return best.max() ?? 0
}

/// UITableView's batch-update rules, written independently of the engine, as a
/// reference: applies one stage or says why UIKit would reject it.
enum UIKitModel {
    struct Rejection: Error, CustomStringConvertible {
        var description: String
    }

    static func apply(_ stage: TestStage, to before: [TestSection]) throws -> [TestSection] {
        func reject(_ message: String) -> Rejection { Rejection(description: message) }
        let beforeCount = before.count
        let deletedSections = Set(stage.sectionDeleted)
        let sectionSources = stage.sectionDeleted + stage.sectionUpdated.map(\.at) + stage.sectionMoved.map(\.from)
        for index in sectionSources where !(0..<beforeCount).contains(index) {
            throw reject("section \(index) out of range before (\(beforeCount))")
        }
        if Set(sectionSources).count != sectionSources.count {
            throw reject("a section is named twice among deletes, updates and move sources")
        }
        let afterCount = beforeCount - stage.sectionDeleted.count + stage.sectionInserted.count
        let sectionTargets = stage.sectionInserted.map(\.at) + stage.sectionMoved.map(\.to)
        for index in sectionTargets where !(0..<afterCount).contains(index) {
            throw reject("section \(index) out of range after (\(afterCount))")
        }
        if Set(sectionTargets).count != sectionTargets.count {
            throw reject("a section is named twice among inserts and move targets")
        }
        let insertedSections = Set(stage.sectionInserted.map(\.at))

        let itemSources = stage.itemDeleted + stage.itemUpdated.map(\.at) + stage.itemMoved.map(\.from)
        for source in itemSources {
            guard (0..<beforeCount).contains(source.section) else {
                throw reject("item \(source): no such section before")
            }
            guard !deletedSections.contains(source.section) else {
                throw reject("item \(source) is in a section deleted in the same batch")
            }
            guard (0..<before[source.section].items.count).contains(source.element) else {
                throw reject("item \(source) out of range before")
            }
        }
        if Set(itemSources).count != itemSources.count {
            throw reject("an index path is named twice among deletes, reloads and move sources")
        }
        let itemTargets = stage.itemInserted.map(\.at) + stage.itemMoved.map(\.to)
        for target in itemTargets {
            guard (0..<afterCount).contains(target.section) else {
                throw reject("item \(target): no such section after")
            }
            guard !insertedSections.contains(target.section) else {
                throw reject("item \(target) goes into a section inserted in the same batch")
            }
        }
        if Set(itemTargets).count != itemTargets.count {
            throw reject("an index path is named twice among inserts and move targets")
        }

        // Which before-section ends up at each after-position (nil: inserted).
        var origin = [Int?](repeating: nil, count: afterCount)
        var filled = [Bool](repeating: false, count: afterCount)
        for insertion in stage.sectionInserted { filled[insertion.at] = true }
        for move in stage.sectionMoved {
            origin[move.to] = move.from
            filled[move.to] = true
        }
        let movedFrom = Set(stage.sectionMoved.map(\.from))
        let unmoved = (0..<beforeCount).filter { !deletedSections.contains($0) && !movedFrom.contains($0) }
        let open = (0..<afterCount).filter { !filled[$0] }
        guard unmoved.count == open.count else { throw reject("section count mismatch") }
        for (slot, source) in zip(open, unmoved) { origin[slot] = source }

        // A section update may be applied as reloadSections, which UIKit rejects
        // beside any item change in that section in the same batch.
        for update in stage.sectionUpdated {
            let after = origin.firstIndex { $0 == update.at }
            let touchedBefore =
                stage.itemDeleted.contains { $0.section == update.at }
                || stage.itemUpdated.contains { $0.at.section == update.at }
                || stage.itemMoved.contains { $0.from.section == update.at }
            let touchedAfter =
                stage.itemInserted.contains { $0.at.section == after }
                || stage.itemMoved.contains { $0.to.section == after }
            if touchedBefore || touchedAfter {
                throw reject("section \(update.at) is reloaded beside an item change in it")
            }
        }

        var updated = before
        for update in stage.itemUpdated {
            guard updated[update.at.section].items[update.at.element].id == update.item.id else {
                throw reject("a reload at \(update.at) changes the identity of the row")
            }
            updated[update.at.section].items[update.at.element] = update.item
        }

        var result: [TestSection] = []
        for position in 0..<afterCount {
            guard let source = origin[position] else {
                let insertion = stage.sectionInserted.first { $0.at == position }!
                result.append(insertion.section)
                continue
            }
            var model = updated[source].model
            if let update = stage.sectionUpdated.first(where: { $0.at == source }) {
                guard update.model.id == model.id else { throw reject("a section update changes its identity") }
                model = update.model
            }
            let beforeItems = updated[source].items
            let deletes = stage.itemDeleted.filter { $0.section == source }.map(\.element)
            let movesOut = stage.itemMoved.filter { $0.from.section == source }.map(\.from.element)
            let removed = Set(deletes + movesOut)
            let remaining = beforeItems.indices.filter { !removed.contains($0) }.map { beforeItems[$0] }
            var incoming: [Int: TestItem] = [:]
            for insertion in stage.itemInserted where insertion.at.section == position {
                incoming[insertion.at.element] = insertion.item
            }
            for move in stage.itemMoved where move.to.section == position {
                incoming[move.to.element] = updated[move.from.section].items[move.from.element]
            }
            // UIKit's count rule.
            let count = beforeItems.count - deletes.count - movesOut.count + incoming.count
            guard incoming.keys.allSatisfy({ (0..<count).contains($0) }) else {
                throw reject("an insert or move target in section \(position) is beyond its \(count) items")
            }
            var items: [TestItem] = []
            var next = 0
            for index in 0..<count {
                if let item = incoming[index] {
                    items.append(item)
                } else {
                    items.append(remaining[next])
                    next += 1
                }
            }
            result.append(TestSection(model: model, items: items))
        }
        return result
    }
}

/// What one verified changeset looked like.
struct Verified {
    var changeset: TestChangeset
    var movedIDs: [Int] = []
    var movedSectionIDs: [Int] = []
}

/// Diffs `old` to `new`, then checks every stage against the UIKit model and the
/// library's own apply, that the stages end at `new`, that no stage is empty,
/// and that the number of stages is the minimum the rules allow for the moves chosen.
@discardableResult
func verify(
    _ old: [TestSection], _ new: [TestSection], seed: UInt64? = nil, uniqueIdentities: Bool = true
) throws -> Verified {
    let context = seed.map { "seed \($0)" } ?? "fixed case"
    let changeset = TestChangeset(from: old, to: new)
    var verified = Verified(changeset: changeset)
    var state = old
    var updatedIDs = Set<Int>()
    var updatedSectionIDs = Set<Int>()
    for (number, stage) in changeset.stages.enumerated() {
        #expect(!stage.isEmpty, "empty stage \(number), \(context)")
        let model: [TestSection]
        do {
            model = try UIKitModel.apply(stage, to: state)
        } catch {
            Issue.record(
                "UIKit would reject stage \(number) (\(error)), \(context): \(stage)\nold: \(old)\nnew: \(new)")
            throw error
        }
        let library = try stage.apply(to: state)
        #expect(library == model, "library apply differs from the UIKit model at stage \(number), \(context)")
        verified.movedIDs += stage.itemMoved.map { state[$0.from.section].items[$0.from.element].id }
        verified.movedSectionIDs += stage.sectionMoved.map { state[$0.from].model.id }
        updatedIDs.formUnion(stage.itemUpdated.map(\.item.id))
        updatedSectionIDs.formUnion(stage.sectionUpdated.map(\.model.id))
        state = library
    }
    #expect(state == new, "stages do not end at the target, \(context)\nold: \(old)\nnew: \(new)\n\(changeset.stages)")
    #expect(try changeset.apply(to: old) == new, "StagedChangeset.apply, \(context)")

    // The minimum number of stages, from the rules (see Plan's documentation);
    // the reasoning below pairs items by identity, so it needs unique identities.
    guard uniqueIdentities else { return verified }
    let oldSectionIDs = Set(old.map(\.model.id))
    let newSectionIDs = Set(new.map(\.model.id))
    var oldSectionOfItem: [Int: Int] = [:]
    for s in old { for item in s.items { oldSectionOfItem[item.id] = s.model.id } }
    var oldVersion: [Int: Int] = [:]
    for s in old { for item in s.items { oldVersion[item.id] = item.version } }
    let anySurviving = !oldSectionIDs.isDisjoint(with: newSectionIDs)
    var minimum = old == new ? 0 : 1
    if !Set(verified.movedIDs).isDisjoint(with: updatedIDs)
        || !Set(verified.movedSectionIDs).isDisjoint(with: updatedSectionIDs)
    {
        minimum = max(minimum, 2)
    }
    for s in new {
        for item in s.items {
            guard let from = oldSectionOfItem[item.id] else { continue }
            let leavesDeleted = !newSectionIDs.contains(from)
            let entersInserted = !oldSectionIDs.contains(s.model.id)
            if leavesDeleted || entersInserted { minimum = max(minimum, 2) }
            if leavesDeleted && entersInserted && (!anySurviving || oldVersion[item.id] != item.version) {
                minimum = 3
            }
        }
    }
    // A section update shares no stage with an item change in its section
    // (it may be applied as reloadSections): one more stage when an updated
    // section also has item changes. With one stage otherwise, exactly two are
    // needed; beyond that the planner defers the update past the item changes,
    // at most one stage more.
    var oldItemsByID: [Int: (section: Int, version: Int)] = [:]
    for s in old { for item in s.items { oldItemsByID[item.id] = (s.model.id, item.version) } }
    var newItemsByID: [Int: (section: Int, version: Int)] = [:]
    for s in new { for item in s.items { newItemsByID[item.id] = (s.model.id, item.version) } }
    let moved = Set(verified.movedIDs)
    let oldSectionVersion = Dictionary(old.map { ($0.model.id, $0.model.version) }, uniquingKeysWith: { a, _ in a })
    var updatedWithItemChanges = false
    for s in new where oldSectionVersion[s.model.id].map({ $0 != s.model.version }) ?? false {
        let id = s.model.id
        let oldIDs = old.first { $0.model.id == id }?.items.map(\.id) ?? []
        let newIDs = s.items.map(\.id)
        for item in Set(oldIDs).union(newIDs) {
            guard let before = oldItemsByID[item], let after = newItemsByID[item],
                before.section == after.section, before.version == after.version, !moved.contains(item)
            else {
                updatedWithItemChanges = true
                break
            }
        }
    }
    // Items from a deleted section to an inserted one park in a surviving
    // section; when every surviving section is updated, one of them has them.
    let survivingIDs = new.map(\.model.id).filter { oldSectionVersion[$0] != nil }
    let everySurvivorUpdated =
        !survivingIDs.isEmpty
        && new.allSatisfy { s in
            oldSectionVersion[s.model.id].map { $0 != s.model.version } ?? true
        }
    if everySurvivorUpdated {
        for (item, after) in newItemsByID {
            if let before = oldItemsByID[item], !newSectionIDs.contains(before.section),
                !oldSectionIDs.contains(after.section)
            {
                updatedWithItemChanges = true
            }
        }
    }
    if updatedWithItemChanges && minimum == 1 {
        #expect(changeset.stages.count == 2, "expected 2 stages, got \(changeset.stages.count), \(context)")
    } else if updatedWithItemChanges {
        #expect(
            (minimum...minimum + 1).contains(changeset.stages.count),
            "expected \(minimum) or \(minimum + 1) stages, got \(changeset.stages.count), \(context)")
    } else {
        #expect(
            changeset.stages.count == minimum, "expected \(minimum) stages, got \(changeset.stages.count), \(context)")
    }
    return verified
}
