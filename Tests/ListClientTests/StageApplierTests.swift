import Foundation
import JSON
import ListClient
import Testing

/// The platform-neutral side of the UIKit and SwiftUI helpers (issue 26):
/// ``StageApplier`` decides between batch updates and `reloadData()` (off screen),
/// driven here with a fake table that checks each batch as UIKit does, and
/// ``FollowedListState`` reduces follow events for the SwiftUI model.
@MainActor @Suite struct StageApplierTests {
    /// A table view's stand-in: records what it is told, and checks each batch as
    /// UIKit does, that the data source's row counts after it equal the counts
    /// before it with the batch's deletes, inserts and moves applied.
    final class FakeTable: BatchUpdateTarget {
        var isInWindow: Bool
        var log: [String] = []
        var violations: [String] = []
        /// What the data source shows, read through this when the table "asks".
        var rowCounts: () -> [Int] = { [] }
        private var shown: [Int] = []

        init(inWindow: Bool) { isInWindow = inWindow }

        func reloadAll() {
            log.append("reload")
            shown = rowCounts()
        }

        func performBatch(_ stage: ListStage, updateData: @escaping () -> Void) {
            log.append("batch \(stage.operationCount)")
            updateData()
            guard stage.sectionDeleted.isEmpty, stage.sectionInserted.isEmpty, stage.sectionMoved.isEmpty else {
                shown = rowCounts()
                return
            }
            var expected = shown
            for path in stage.itemDeleted { expected[path.section] -= 1 }
            for insertion in stage.itemInserted { expected[insertion.at.section] += 1 }
            for move in stage.itemMoved {
                expected[move.from.section] -= 1
                expected[move.to.section] += 1
            }
            if expected != rowCounts() { violations.append("after \(stage): \(rowCounts()), expected \(expected)") }
            shown = rowCounts()
        }
    }

    static func change() throws -> (ListState, FollowUpdate) {
        let before = try FollowMachineTests.state(FollowMachineTests.snapshotV1)
        var machine = FollowMachine(list: "g")
        _ = machine.receive(snapshot: before)
        let answer = try ChangeAnswer(json: JSONValue(parsing: FollowMachineTests.stagesV1toV2))
        let update = machine.receive(answer)
        return (before, try #require(update))
    }

    @Test func aChangeOnScreenIsOneBatchPerStageWithTheStagesSections() throws {
        let (before, update) = try Self.change()
        let table = FakeTable(inWindow: true)
        var sections: ListSections = []
        table.rowCounts = { sections.map(\.items.count) }
        #expect(StageApplier.apply(.snapshot(before), to: table) { sections = $0 } == .reloaded)
        var seen: [ListSections] = []
        let outcome = StageApplier.apply(update, to: table) { new in
            sections = new
            seen.append(new)
        }
        #expect(outcome == .animated(stages: 2))
        #expect(table.log == ["reload", "batch 2", "batch 2"])
        guard case .changes(let change) = update else { return }
        #expect(seen == change.stages.map(\.sections))
        #expect(sections == change.state.sections)
        #expect(table.violations.isEmpty, "\(table.violations)")
    }

    @Test func aChangeOffScreenIsOneReloadAtTheFinalState() throws {
        let (before, update) = try Self.change()
        let table = FakeTable(inWindow: false)
        var sections = before.sections
        #expect(StageApplier.apply(update, to: table) { sections = $0 } == .reloaded)
        #expect(table.log == ["reload"])
        #expect(sections == update.state?.sections)
    }

    @Test func aResetOrDeletionIsAReloadAndAnEmptyChangeIsNothing() throws {
        let (before, _) = try Self.change()
        let table = FakeTable(inWindow: true)
        var sections: ListSections = []
        #expect(StageApplier.apply(.reset(before), to: table) { sections = $0 } == .reloaded)
        #expect(sections == before.sections)
        #expect(StageApplier.apply(.deleted(list: "g"), to: table) { sections = $0 } == .reloaded)
        #expect(sections.isEmpty)
        let empty = ListChange(
            from: before.version, before: before.sections, stages: [], state: before,
            answer: try ChangeAnswer(
                json: JSONValue(parsing: #"{"list":"g","epoch":"e1","from":1,"to":1,"stages":[]}"#)))
        #expect(StageApplier.apply(.changes(empty), to: table) { sections = $0 } == .unchanged)
        #expect(table.log == ["reload", "reload"])
    }

    @Test func aDecodedChangeSetsEachStagesDecodedState() throws {
        let (before, update) = try Self.change()
        var decoder = SnapshotDecoder<Int>()
        let table = FakeTable(inWindow: true)
        var shown: DecodedSnapshot<Int>?
        table.rowCounts = { shown?.sections.map(\.items.count) ?? [] }
        StageApplier.apply(try decoder.decode(.snapshot(before)), to: table) { shown = $0 }
        #expect(shown?.items.map(\.model) == [1, 2, 3])
        var seen: [[Int]] = []
        let outcome = StageApplier.apply(try decoder.decode(update), to: table) { snapshot in
            shown = snapshot
            seen.append(snapshot?.items.map(\.model) ?? [])
        }
        #expect(outcome == .animated(stages: 2))
        // Stage 1 deletes apple and sets pear to 20; stage 2 inserts kiwi and moves leek into fruit.
        #expect(seen == [[20, 3], [9, 20, 3]])
        #expect(table.violations.isEmpty, "\(table.violations)")
    }

    @Test func theScreenStateFollowsEventsInOrder() throws {
        let (before, update) = try Self.change()
        var screen = FollowedListState<Int>()
        #expect(screen.connection == .connecting && screen.sections.isEmpty)
        try screen.apply(.update(.snapshot(before)))
        try screen.apply(.connection(.live))
        #expect(screen.connection == .live && screen.snapshot?.items.map(\.model) == [1, 2, 3])
        let decoded = try screen.apply(.update(update))
        #expect(decoded?.stages.count == 2 && screen.snapshot?.items.map(\.model) == [9, 20, 3])
        try screen.apply(.connection(.reconnecting(attempt: 1, after: .seconds(1))))
        #expect(screen.snapshot?.version == 2)
        try screen.apply(.update(.deleted(list: "g")))
        #expect(screen.isDeleted && screen.sections.isEmpty)
        var strings = FollowedListState<String>()
        #expect(throws: ListClientError.self) { try strings.apply(.update(.snapshot(before))) }
        #expect(strings.error?.modelFailure?.item == "apple" && strings.connection == .ended)
    }

    /// A screen's view query parses to its spec; one that does not ends the
    /// screen's state with an error naming the query, not a crash.
    @Test func aScreensViewQueryParsesOrEndsTheStateNamingIt() throws {
        var screen = FollowedListState<Int>()
        #expect(
            screen.view(parsing: "where=done:false&order=due") == (try ViewSpec(parsing: "order=due&where=done:false")))
        #expect(screen.view(parsing: "") == .wholeList)
        #expect(screen.error == nil && screen.connection == .connecting)
        #expect(screen.view(parsing: "order=due&limit=0") == nil)
        #expect(screen.error?.kind == .invalidRequest && screen.connection == .ended)
        #expect(screen.error?.detail.contains("order=due&limit=0") == true, "\(String(describing: screen.error))")
        #expect(screen.error?.detail.contains("limit") == true)
    }

    /// A state restored from a snapshot store is shown and marked as saved until the
    /// server confirms it (`.live`) or moves it on (the next update).
    @Test func theScreenStateMarksARestoredStateUntilLiveOrTheNextUpdate() throws {
        let (before, update) = try Self.change()
        var screen = FollowedListState<Int>()
        let decoded = try screen.apply(.restored(before))
        #expect(screen.isFromCache && screen.snapshot?.items.map(\.model) == [1, 2, 3])
        #expect(decoded?.snapshot?.version == before.version)
        try screen.apply(.connection(.reconnecting(attempt: 1, after: .seconds(1))))
        #expect(screen.isFromCache)
        try screen.apply(.connection(.live))
        #expect(!screen.isFromCache)
        var offline = FollowedListState<Int>()
        try offline.apply(.restored(before))
        try offline.apply(.update(update))
        #expect(!offline.isFromCache && offline.snapshot?.items.map(\.model) == [9, 20, 3])
    }
}
