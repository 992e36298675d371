import ListdTestSupport
import Testing

@testable import SectionDiff

/// The one-pass path of ``StagedChangeset/init(condensedFrom:to:)`` for
/// changes that only replace contents: on random condensed states (runs of
/// untouched elements between touched ones) whose shape stays and whose
/// contents change at random, it must give exactly what matching and planning
/// gives, and it must step aside for any change of shape.
@Suite struct UpdatesInPlaceTests {
    typealias CondensedSection = ArraySection<Condensed<TestItem>, Condensed<TestItem>>

    static func randomState(using rng: inout SeededGenerator) -> [CondensedSection] {
        var nextID = 0
        var nextRun = 0
        func element() -> Condensed<TestItem> {
            nextID += 1
            return .element(TestItem(id: nextID))
        }
        func run() -> Condensed<TestItem> {
            nextRun += 1
            return .run(id: nextRun, count: Int.random(in: 1...50, using: &rng))
        }
        return (0..<Int.random(in: 0...5, using: &rng)).map { _ in
            if Bool.random(using: &rng), nextRun < 3 { return CondensedSection(model: run(), items: []) }
            let items = (0..<Int.random(in: 0...6, using: &rng)).map { _ in
                Int.random(in: 0..<3, using: &rng) == 0 ? run() : element()
            }
            return CondensedSection(model: element(), items: items)
        }
    }

    static func bumped(_ element: Condensed<TestItem>, using rng: inout SeededGenerator) -> Condensed<TestItem> {
        guard case .element(var item) = element, Int.random(in: 0..<3, using: &rng) == 0 else { return element }
        item.version += 1
        return .element(item)
    }

    @Test func contentChangesStageAsMatchingStagesThem() {
        var checked = 0
        for seed in UInt64(1)...2_000 {
            var rng = SeededGenerator(seed: seed)
            let old = Self.randomState(using: &rng)
            let new = old.map { section in
                CondensedSection(
                    model: Self.bumped(section.model, using: &rng),
                    items: section.items.map { Self.bumped($0, using: &rng) })
            }
            let fast = StagedChangeset<TestItem, TestItem>.updatesInPlace(from: old, to: new)
            let matched = StagedChangeset<TestItem, TestItem>(matchingCondensedFrom: old, to: new)
            #expect(fast == matched.stages, "seed \(seed): \(old) → \(new)")
            #expect(StagedChangeset(condensedFrom: old, to: new).stages == matched.stages)
            checked += fast?.first?.operationCount ?? 0
        }
        #expect(checked > 1_000, "the cases changed contents")
    }

    @Test func anyChangeOfShapeIsLeftToMatching() {
        let item = Condensed<TestItem>.element(TestItem(id: 1))
        let other = Condensed<TestItem>.element(TestItem(id: 2))
        let section = Condensed<TestItem>.element(TestItem(id: 10))
        typealias Changeset = StagedChangeset<TestItem, TestItem>
        let cases: [([CondensedSection], [CondensedSection])] = [
            ([CondensedSection(model: section, items: [item])], [CondensedSection(model: section, items: [other])]),
            ([CondensedSection(model: section, items: [item])], [CondensedSection(model: section, items: [])]),
            (
                [CondensedSection(model: section, items: [item, other])],
                [CondensedSection(model: section, items: [other, item])]
            ),
            (
                [CondensedSection(model: section, items: [.run(id: 1, count: 3)])],
                [CondensedSection(model: section, items: [.run(id: 1, count: 4)])]
            ),
            ([CondensedSection(model: section, items: [])], []),
        ]
        for (old, new) in cases {
            #expect(Changeset.updatesInPlace(from: old, to: new) == nil, "\(old) → \(new)")
        }
    }
}
