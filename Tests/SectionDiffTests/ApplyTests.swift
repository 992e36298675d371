import Testing

@testable import SectionDiff

/// A stage that breaks a rule, and the words the error must carry.
struct BadStage: CustomTestStringConvertible, Sendable {
    var name: String
    var stage: TestStage
    var operation: String
    var reason: String
    var testDescription: String { name }
}

let applyState = [section(1, [1, 2, 3]), section(2, [4])]

let badStages: [BadStage] = [
    BadStage(
        name: "section delete out of range", stage: TestStage(sectionDeleted: [2]),
        operation: "sectionDeleted[0]", reason: "out of range"),
    BadStage(
        name: "section deleted and moved",
        stage: TestStage(sectionDeleted: [0], sectionMoved: [SectionMove(from: 0, to: 0)]),
        operation: "sectionMoved[0]", reason: "already deleted"),
    BadStage(
        name: "section moved and updated",
        stage: TestStage(
            sectionUpdated: [.init(at: 1, model: TestItem(id: 2, version: 1))],
            sectionMoved: [SectionMove(from: 1, to: 0)]),
        operation: "sectionMoved[0]", reason: "already updated"),
    BadStage(
        name: "two sections into one place",
        stage: TestStage(
            sectionInserted: [.init(at: 0, section: section(3, []))], sectionMoved: [SectionMove(from: 1, to: 0)]),
        operation: "sectionMoved[0]", reason: "already filled"),
    BadStage(
        name: "item deleted and moved",
        stage: TestStage(itemDeleted: [path(0, 1)], itemMoved: [ItemMove(from: path(0, 1), to: path(0, 0))]),
        operation: "itemMoved[0]", reason: "already deleted"),
    BadStage(
        name: "item moved and updated",
        stage: TestStage(
            itemUpdated: [.init(at: path(0, 0), item: TestItem(id: 1, version: 1))],
            itemMoved: [ItemMove(from: path(0, 0), to: path(0, 2))]),
        operation: "itemMoved[0]", reason: "already updated"),
    BadStage(
        name: "item out of range", stage: TestStage(itemDeleted: [path(1, 1)]),
        operation: "itemDeleted[0]", reason: "out of range"),
    BadStage(
        name: "item moved out of a deleted section",
        stage: TestStage(sectionDeleted: [1], itemMoved: [ItemMove(from: path(1, 0), to: path(0, 0))]),
        operation: "itemMoved[0]", reason: "deleted in the same stage"),
    BadStage(
        name: "item moved into an inserted section",
        stage: TestStage(
            sectionInserted: [.init(at: 2, section: section(3, []))],
            itemMoved: [ItemMove(from: path(1, 0), to: path(2, 0))]),
        operation: "itemMoved[0]", reason: "inserted in the same stage"),
    BadStage(
        name: "insert beyond the section's end",
        stage: TestStage(itemInserted: [.init(at: path(1, 2), item: TestItem(id: 9))]),
        operation: "itemInserted[0]", reason: "out of range"),
    BadStage(
        name: "two items into one place",
        stage: TestStage(
            itemInserted: [.init(at: path(1, 0), item: TestItem(id: 9))],
            itemMoved: [ItemMove(from: path(0, 0), to: path(1, 0))]),
        operation: "itemMoved[0]", reason: "already filled"),
    BadStage(
        name: "update that changes identity",
        stage: TestStage(itemUpdated: [.init(at: path(0, 0), item: TestItem(id: 9))]),
        operation: "itemUpdated[0]", reason: "identity"),
]

@Suite struct ApplyTests {
    @Test(arguments: badStages)
    func rejectsWhatUIKitRejects(_ bad: BadStage) {
        #expect(throws: (any Error).self) { try UIKitModel.apply(bad.stage, to: applyState) }
        do {
            _ = try bad.stage.apply(to: applyState)
            Issue.record("applied a stage that breaks a rule: \(bad.stage)")
        } catch {
            #expect(error.operation == bad.operation)
            #expect(error.reason.contains(bad.reason), "\(error)")
            #expect(error.stage == 0)
        }
    }

    @Test func changesetErrorsNameTheStage() {
        let changeset = TestChangeset(stages: [
            TestStage(itemDeleted: [path(0, 0)]), TestStage(itemDeleted: [path(0, 5)]),
        ])
        #expect(
            throws: SectionDiffError(
                stage: 1, operation: "itemDeleted[0]",
                reason: "item [0, 5] is out of range: section 0 has 2 items before the stage")
        ) {
            try changeset.apply(to: applyState)
        }
    }

    @Test func appliesAMixedStage() throws {
        let stage = TestStage(
            sectionInserted: [.init(at: 0, section: section(3, [7]))],
            sectionMoved: [SectionMove(from: 1, to: 1)],
            itemDeleted: [path(0, 1)],
            itemInserted: [.init(at: path(2, 0), item: TestItem(id: 8))],
            itemMoved: [ItemMove(from: path(0, 0), to: path(1, 1))])
        let expected = [section(3, [7]), section(2, [4, 1]), section(1, [8, 3])]
        #expect(try stage.apply(to: applyState) == expected)
        #expect(try UIKitModel.apply(stage, to: applyState) == expected)
    }
}
