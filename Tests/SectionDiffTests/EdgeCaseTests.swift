import Testing

@testable import SectionDiff

/// A named change with the exact stages expected.
struct EdgeCase: CustomTestStringConvertible, Sendable {
    var name: String
    var old: [TestSection]
    var new: [TestSection]
    var expected: [TestStage]
    var testDescription: String { name }
}

let edgeCases: [EdgeCase] = [
    EdgeCase(
        name: "nothing changes", old: [section(1, [1, 2])], new: [section(1, [1, 2])], expected: []),
    EdgeCase(
        name: "move first of six to last is one move",
        old: [section(1, [1, 2, 3, 4, 5, 6])], new: [section(1, [2, 3, 4, 5, 6, 1])],
        expected: [TestStage(itemMoved: [ItemMove(from: path(0, 0), to: path(0, 5))])]),
    EdgeCase(
        name: "move last to first",
        old: [section(1, [1, 2, 3, 4, 5, 6])], new: [section(1, [6, 1, 2, 3, 4, 5])],
        expected: [TestStage(itemMoved: [ItemMove(from: path(0, 5), to: path(0, 0))])]),
    EdgeCase(
        name: "rotate by two moves two",
        old: [section(1, [1, 2, 3, 4])], new: [section(1, [3, 4, 1, 2])],
        expected: [
            TestStage(itemMoved: [
                ItemMove(from: path(0, 2), to: path(0, 0)), ItemMove(from: path(0, 3), to: path(0, 1)),
            ])
        ]),
    EdgeCase(
        name: "swap two sections",
        old: [section(1, [1]), section(2, [2])], new: [section(2, [2]), section(1, [1])],
        expected: [TestStage(sectionMoved: [SectionMove(from: 1, to: 0)])]),
    EdgeCase(
        name: "item moved between sections that also move",
        old: [section(1, [1, 2]), section(2, [3])], new: [section(2, [3, 1]), section(1, [2])],
        expected: [
            TestStage(
                sectionMoved: [SectionMove(from: 1, to: 0)],
                itemMoved: [ItemMove(from: path(0, 0), to: path(0, 1))])
        ]),
    EdgeCase(
        name: "item leaving a deleted section moves out first",
        old: [section(1, [1]), section(2, [2, 3])], new: [section(2, [2, 1])],
        expected: [
            TestStage(itemDeleted: [path(1, 1)], itemMoved: [ItemMove(from: path(0, 0), to: path(1, 1))]),
            TestStage(sectionDeleted: [0]),
        ]),
    EdgeCase(
        name: "item entering an inserted section moves in after it exists",
        old: [section(1, [1, 2])], new: [section(1, [1]), section(2, [2, 9])],
        expected: [
            TestStage(sectionInserted: [.init(at: 1, section: section(2, [9]))]),
            TestStage(itemMoved: [ItemMove(from: path(0, 1), to: path(1, 0))]),
        ]),
    EdgeCase(
        name: "item from a deleted section into an inserted one is parked in a survivor",
        old: [section(1, [1]), section(2, [2])], new: [section(2, [2]), section(3, [1])],
        expected: [
            TestStage(
                sectionInserted: [.init(at: 2, section: section(3, []))],
                itemMoved: [ItemMove(from: path(0, 0), to: path(1, 1))]),
            TestStage(sectionDeleted: [0], itemMoved: [ItemMove(from: path(1, 1), to: path(1, 0))]),
        ]),
    EdgeCase(
        name: "updated item from a deleted section into an inserted one takes three stages",
        old: [section(1, [1]), section(2, [2])],
        new: [section(2, [2]), section(3, items: [TestItem(id: 1, version: 1)])],
        expected: [
            TestStage(
                sectionInserted: [.init(at: 2, section: section(3, []))],
                itemUpdated: [.init(at: path(0, 0), item: TestItem(id: 1, version: 1))]),
            TestStage(itemMoved: [ItemMove(from: path(0, 0), to: path(2, 0))]),
            TestStage(sectionDeleted: [0]),
        ]),
    EdgeCase(
        name: "no surviving section takes three stages",
        old: [section(1, [1])], new: [section(2, [1])],
        expected: [
            TestStage(sectionInserted: [.init(at: 1, section: section(2, []))]),
            TestStage(itemMoved: [ItemMove(from: path(0, 0), to: path(1, 0))]),
            TestStage(sectionDeleted: [0]),
        ]),
    EdgeCase(
        name: "update plus move of one item",
        old: [section(1, [1, 2, 3])],
        new: [section(1, items: [TestItem(id: 2), TestItem(id: 3), TestItem(id: 1, version: 1)])],
        expected: [
            TestStage(itemMoved: [ItemMove(from: path(0, 0), to: path(0, 2))]),
            TestStage(itemUpdated: [.init(at: path(0, 2), item: TestItem(id: 1, version: 1))]),
        ]),
    EdgeCase(
        name: "update of an item that stays is one stage",
        old: [section(1, [1, 2])], new: [section(1, items: [TestItem(id: 1, version: 4), TestItem(id: 2)])],
        expected: [TestStage(itemUpdated: [.init(at: path(0, 0), item: TestItem(id: 1, version: 4))])]),
    EdgeCase(
        name: "section model change",
        old: [section(1, [1])], new: [section(1, [1], version: 1)],
        expected: [TestStage(sectionUpdated: [.init(at: 0, model: TestItem(id: 1, version: 1))])]),
    EdgeCase(
        name: "moved section with a model change is updated at its new place",
        old: [section(1, []), section(2, [])], new: [section(2, [], version: 1), section(1, [])],
        expected: [
            TestStage(sectionMoved: [SectionMove(from: 1, to: 0)]),
            TestStage(sectionUpdated: [.init(at: 0, model: TestItem(id: 2, version: 1))]),
        ]),
    EdgeCase(
        name: "from empty", old: [], new: [section(1, [1, 2])],
        expected: [TestStage(sectionInserted: [.init(at: 0, section: section(1, [1, 2]))])]),
    EdgeCase(
        name: "to empty", old: [section(1, [1, 2]), section(2, [])], new: [],
        expected: [TestStage(sectionDeleted: [0, 1])]),
    EdgeCase(
        name: "delete, insert and update in one stage",
        old: [section(1, [1, 2, 3])],
        new: [section(1, items: [TestItem(id: 1), TestItem(id: 4), TestItem(id: 3, version: 1)])],
        expected: [
            TestStage(
                itemDeleted: [path(0, 1)], itemInserted: [.init(at: path(0, 1), item: TestItem(id: 4))],
                itemUpdated: [.init(at: path(0, 2), item: TestItem(id: 3, version: 1))])
        ]),
]

@Suite struct EdgeCaseTests {
    @Test(arguments: edgeCases)
    func producesExpectedStages(_ edge: EdgeCase) throws {
        let verified = try verify(edge.old, edge.new)
        #expect(verified.changeset.stages == edge.expected)
    }

    @Test func duplicateItemIdentitiesPairFirstWithFirst() throws {
        let old = [section(1, items: [TestItem(id: 7), TestItem(id: 7, version: 1), TestItem(id: 8)])]
        let new = [section(1, items: [TestItem(id: 7, version: 2), TestItem(id: 8), TestItem(id: 7, version: 3)])]
        let changeset = TestChangeset(from: old, to: new)
        #expect(try changeset.apply(to: old) == new)
        // First 7 pairs with first 7 (an update); the second old 7 is deleted, the second new 7 inserted.
        #expect(
            changeset.stages == [
                TestStage(
                    itemDeleted: [path(0, 1)],
                    itemInserted: [.init(at: path(0, 2), item: TestItem(id: 7, version: 3))],
                    itemUpdated: [.init(at: path(0, 0), item: TestItem(id: 7, version: 2))])
            ])
        #expect(TestChangeset(from: old, to: new) == changeset)
    }

    @Test func duplicateSectionIdentitiesPairFirstWithFirst() throws {
        let old = [section(1, [1]), section(1, [2])]
        let new = [section(1, [2]), section(1, [1])]
        let verified = try verify(old, new, uniqueIdentities: false)
        // The second old 1 is deleted (its item 2 leaves first), the second new 1 inserted.
        #expect(verified.changeset.stages.count == 2)
    }

    @Test func sizeCountsOperationsAndCarriedValues() {
        let old = [section(1, [1, 2, 3])]
        let new = [section(1, [3, 1, 4]), section(2, [5, 6])]
        let size = TestChangeset(from: old, to: new).size
        // Delete 2, insert 4, move 3, insert section 2 (carrying 5 and 6).
        #expect(size == ChangeSize(operations: 4, carriedSections: 1, carriedItems: 3))
        #expect(size.exceeds(snapshotSections: 1, items: 6))
        #expect(!size.exceeds(snapshotSections: 2, items: 6))
    }
}
