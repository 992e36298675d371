/// The staged change from one sectioned state to another: a list of
/// ``Stage``s, each one table-view batch update, applied in order.
///
/// Make one with ``init(from:to:)``; apply it with ``apply(to:)``. Stages are
/// never empty, and there are as few as UIKit allows (see ``init(from:to:)``).
public struct StagedChangeset<Model: Diffable, Item: Diffable> {
    /// The stages, in the order they are applied.
    public var stages: [Stage<Model, Item>]

    /// Wraps stages received from elsewhere (for example decoded by a client).
    @inlinable
    public init(stages: [Stage<Model, Item>]) {
        self.stages = stages
    }

    /// Whether there is nothing to change.
    @inlinable
    public var isEmpty: Bool { stages.isEmpty }

    /// How big the change is, so a caller can send the whole target snapshot
    /// instead when that is smaller.
    public var size: ChangeSize {
        var size = ChangeSize()
        for stage in stages {
            size.operations += stage.operationCount
            size.carriedSections += stage.sectionInserted.count + stage.sectionUpdated.count
            size.carriedItems += stage.itemInserted.count + stage.itemUpdated.count
            for insertion in stage.sectionInserted { size.carriedItems += insertion.section.items.count }
        }
        return size
    }

    /// The number of item moves over all stages (for tests and benchmarks).
    public var itemMoveCount: Int { stages.reduce(0) { $0 + $1.itemMoved.count } }

    /// Applies every stage in order to `state` and returns the result.
    ///
    /// - Throws: ``SectionDiffError`` naming the stage and operation that does not
    ///   fit, when `state` is not the state the changeset was made from.
    /// - Complexity: O(n + k log k) per stage for n items and k operations.
    @inlinable
    public func apply(to state: [ArraySection<Model, Item>]) throws(SectionDiffError) -> [ArraySection<Model, Item>] {
        var state = state
        for (number, stage) in stages.enumerated() {
            state = try stage.apply(to: state, stageNumber: number)
        }
        return state
    }

    /// The diff: the staged change that turns `old` into `new`.
    ///
    /// Sections are matched by their model's identity, items by theirs across all
    /// sections, so an item that changes section is a move, including an item
    /// leaving a section deleted in the same change or entering one inserted in
    /// it. Moves are minimal: in each section (and among sections) the longest
    /// increasing subsequence of surviving elements stays in place and only the
    /// rest is reported moved, so for one section the moves are exactly the
    /// surviving items minus that subsequence's length.
    ///
    /// Stage 1 holds everything one batch may hold; stage 2 updates what moved in
    /// stage 1 and, only when items leave deleted sections or enter inserted ones,
    /// completes those moves and deletes the sections left; a third stage is used
    /// only when an item goes from a deleted section to an inserted one and is also
    /// updated, or no section survives. This is the fewest stages UIKit's rules
    /// allow; the proof is in the planner's documentation (`Plan.swift`).
    ///
    /// Duplicate identities (which listd's store never produces) are handled
    /// deterministically: the first occurrence of an identity in `old` pairs with
    /// the first in `new`; later occurrences are deleted (in `old`) or inserted
    /// (in `new`). Applying the result to `old` still gives `new` exactly.
    ///
    /// - Complexity: O(n + k log k) expected, for n sections and items in both
    ///   states and k elements (items and sections) reported as moved. Matching
    ///   by identity is linear (a hash table, filled cache region by cache region
    ///   when it is large); the longest-increasing-subsequence search costs
    ///   O(k log k) beyond reading its input, since it runs on blocks of elements
    ///   that stay together and every block boundary lies next to a moved element;
    ///   sorting the moves is O(k log k). The other lists of a stage are produced
    ///   in position order, so sorting them is linear, except updates of items
    ///   whose sections move, which add O(u log s) for u updates over s sections.
    @inlinable
    public init(from old: [ArraySection<Model, Item>], to new: [ArraySection<Model, Item>]) {
        let matching = Matching(old: old, new: new)
        let plan = Plan(matching)
        var stages: [Stage<Model, Item>] = []
        stages.reserveCapacity(plan.stages.count)
        for indexStage in plan.stages {
            stages.append(Self.makeStage(indexStage, new: new, matching: matching))
        }
        self.stages = stages
    }

    @inlinable
    static func makeStage(
        _ plan: IndexStage, new: [ArraySection<Model, Item>], matching m: Matching
    ) -> Stage<Model, Item> {
        @inline(__always) func newItem(_ h: Int32) -> Item {
            let t = Int(m.newSectionOf[Int(h)])
            return new[t].items[Int(h) - m.newStart[t]]
        }
        var stage = Stage<Model, Item>()
        stage.sectionDeleted = plan.sectionDeleted
        stage.sectionMoved = plan.sectionMoved
        stage.itemDeleted = plan.itemDeleted
        stage.itemMoved = plan.itemMoved
        stage.sectionInserted.reserveCapacity(plan.sectionInserted.count)
        for (at, t) in plan.sectionInserted {
            let range = m.newStart[Int(t)]..<m.newStart[Int(t) + 1]
            let section = new[Int(t)]
            // Items that exist elsewhere are moved in later; a section of only new
            // items shares its array instead of copying it.
            if range.contains(where: { m.newMatch[$0] >= 0 }) {
                var fresh: [Item] = []
                for h in range where m.newMatch[h] < 0 { fresh.append(section.items[h - range.lowerBound]) }
                stage.sectionInserted.append(.init(at: at, section: ArraySection(model: section.model, items: fresh)))
            } else {
                stage.sectionInserted.append(.init(at: at, section: section))
            }
        }
        stage.sectionUpdated.reserveCapacity(plan.sectionUpdated.count)
        for (at, t) in plan.sectionUpdated {
            stage.sectionUpdated.append(.init(at: at, model: new[Int(t)].model))
        }
        stage.itemInserted.reserveCapacity(plan.itemInserted.count)
        for (at, h) in plan.itemInserted {
            stage.itemInserted.append(.init(at: at, item: newItem(h)))
        }
        stage.itemUpdated.reserveCapacity(plan.itemUpdated.count)
        for (at, h) in plan.itemUpdated {
            stage.itemUpdated.append(.init(at: at, item: newItem(h)))
        }
        return stage
    }
}

extension StagedChangeset: Equatable where Model: Equatable, Item: Equatable {}
extension StagedChangeset: Sendable where Model: Sendable, Item: Sendable {}

/// The size of a change, to weigh against sending the whole snapshot.
///
/// A caller typically answers with a reset when
/// `operations + carriedItems + carriedSections` exceeds the target snapshot's
/// section count plus item count, or compares encoded sizes when it has them.
public struct ChangeSize: Hashable, Sendable {
    /// Entries over all fields of all stages.
    public var operations = 0
    /// Section values carried: inserted sections and section updates.
    public var carriedSections = 0
    /// Item values carried: inserted and updated items, and the items of inserted sections.
    public var carriedItems = 0

    /// Creates a size; zero by default.
    public init(operations: Int = 0, carriedSections: Int = 0, carriedItems: Int = 0) {
        self.operations = operations
        self.carriedSections = carriedSections
        self.carriedItems = carriedItems
    }

    /// Whether this change weighs more than a snapshot of `sections` sections
    /// holding `items` items in all (one unit per entry and per value carried).
    public func exceeds(snapshotSections sections: Int, items: Int) -> Bool {
        operations + carriedSections + carriedItems > sections + items
    }
}
