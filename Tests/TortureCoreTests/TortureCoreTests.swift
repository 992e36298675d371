import JSON
import ListWire
import SectionDiff
import Testing

@testable import TortureCore

/// The harness's pure parts: the plan drawn from a seed, and checkers fed a bad history.
@Suite struct TortureCoreTests {
    func state(_ list: String, version: Int64, items: [(String, String)], epoch: String = "e1") throws -> ListState {
        let section = ArraySection(
            model: JSONEntry(id: "s0", model: JSONText("{}")),
            items: items.map { JSONEntry(id: $0.0, model: JSONText($0.1)) })
        return ListState(id: list, name: list, epoch: epoch, version: version, sections: [section])
    }

    @Test func theSameSeedGivesTheSamePlanAndAnotherSeedAnother() {
        let first = TorturePlan(seed: 42, seconds: 600, store: .postgres, instances: 3)
        let again = TorturePlan(seed: 42, seconds: 600, store: .postgres, instances: 3)
        let other = TorturePlan(seed: 43, seconds: 600, store: .postgres, instances: 3)
        #expect(first == again)
        #expect(first.lines == again.lines)
        #expect(first != other)
        #expect(!first.nemeses.isEmpty)
        #expect(first.nemeses.allSatisfy { $0.at >= 5 && $0.at < 600 - 15 && $0.target >= 0 })
        var a = first.generator("writer", 1)
        var b = again.generator("writer", 1)
        var c = first.generator("writer", 2)
        let drawnA = (0..<20).map { _ in a.next() }
        #expect(drawnA == (0..<20).map { _ in b.next() })
        #expect(drawnA != (0..<20).map { _ in c.next() })
    }

    @Test func sqlitePlansUseOneInstanceAndNoPostgresFaults() {
        for seed in UInt64(1)...20 {
            let plan = TorturePlan(seed: seed, seconds: 3_600, store: .sqlite, instances: 3)
            #expect(plan.instances == 1)
            #expect(plan.nemeses.allSatisfy { NemesisKind.kinds(for: .sqlite).contains($0.kind) })
            #expect(plan.nemeses.allSatisfy { $0.kind == .slowReader || $0.target == 0 })
        }
    }

    @Test func everyFaultKindIsDrawnAndLastingFaultsDoNotOverlap() {
        var drawn: [TortureStore: Set<NemesisKind>] = [:]
        for store in [TortureStore.sqlite, .postgres] {
            for seed in UInt64(1)...20 {
                let plan = TorturePlan(seed: seed, seconds: 3_600, store: store, instances: 3)
                drawn[store, default: []].formUnion(plan.nemeses.map(\.kind))
                // The harness fires faults one after another: a lasting one ends before the next starts.
                for (event, next) in zip(plan.nemeses, plan.nemeses.dropFirst()) {
                    #expect(event.at + (event.kind.lasts ? event.duration : 0) <= next.at)
                }
            }
        }
        #expect(drawn[.sqlite] == Set(NemesisKind.kinds(for: .sqlite)))
        #expect(drawn[.postgres] == Set(NemesisKind.kinds(for: .postgres)))
        #expect(NemesisKind.kinds(for: .sqlite).contains(.partitionClients))
        #expect(!NemesisKind.kinds(for: .sqlite).contains(.partitionStore))
        #expect(NemesisKind.kinds(for: .postgres).contains(.partitionStore))
        #expect(NemesisKind.kinds(for: .postgres).contains(.slowLink))
    }

    @Test func aViolationIsPrintedWithTheHistoryOfItsListFollowerAndFaultsInTheWindowBefore() throws {
        let history = History(window: 10)
        history.record("t0", at: 1, actor: "writer 0", "POST insert-a sent")  // before the window
        history.record("t0", at: 12, actor: "writer 0", "POST insert-b sent")
        history.record("t1", at: 13, actor: "writer 1", "POST insert-c sent")  // another list
        history.record("t1", at: 14, actor: "long-poll 2", "answer 3→4 applied to 3")  // the follower, elsewhere
        history.record("t0", at: 15, actor: "ledger", "v7 acknowledged to insert-b")
        history.record("t0", at: 25, actor: "writer 0", "POST insert-d sent")  // after the violation
        history.fault("t+5.0s kill target=0 for 0.0s", from: 5, to: 5)  // before the window
        history.fault("t+8.0s partitionStore target=1 for 4.0s", from: 8, to: 12)  // overlaps it
        let lines = history.witness(of: "long-poll 2: held t0@6, answer 7→8", at: 20)
        #expect(
            lines == [
                "t+8.0s fault: t+8.0s partitionStore target=1 for 4.0s",
                "t+12.0s writer 0: POST insert-b sent",
                "t+14.0s long-poll 2: answer 3→4 applied to 3",
                "t+15.0s ledger: v7 acknowledged to insert-b",
            ])
        #expect(history.witness(of: "no list named here", at: 20).isEmpty)
        #expect(history.witness(of: "t0", at: 20, limit: 2).count == 2)

        let ledger = Ledger()
        ledger.acknowledged(list: "t0", version: 2, label: "insert-x")
        ledger.acknowledged(list: "t0", version: 2, label: "insert-y")
        let first = try #require(ledger.firstViolationHistory)
        #expect(first.message.contains("t0@2 acknowledged to both insert-x and insert-y"))
        #expect(first.lines.count == 2)
        #expect(first.lines.last?.hasSuffix("ledger: v2 acknowledged to insert-y") == true)
    }

    @Test func twoStatesAtOneVersionAreAViolation() throws {
        let ledger = Ledger()
        ledger.observe(try state("l", version: 3, items: [("a", #"{"p":"x","r":0}"#)]), source: "one")
        ledger.observe(try state("l", version: 3, items: [("a", #"{"p":"x","r":0}"#)]), source: "two")
        #expect(ledger.violationCount == 0)
        ledger.observe(try state("l", version: 3, items: [("a", #"{"p":"x","r":1}"#)]), source: "three")
        #expect(ledger.violationCount == 1)
        #expect(ledger.summary.last == "\(Invariant.allCases.count - 1) passed, 1 failed")
    }

    @Test func aVersionAcknowledgedTwiceOrAGapIsAViolation() throws {
        let ledger = Ledger()
        ledger.created(list: "l", epoch: "e1", version: 1)
        ledger.acknowledged(list: "l", version: 2, label: "a")
        ledger.acknowledged(list: "l", version: 3, label: "b")
        ledger.checkVersions(final: try state("l", version: 3, items: []))
        #expect(ledger.violationCount == 0)
        ledger.acknowledged(list: "l", version: 3, label: "c")
        #expect(ledger.violationCount == 1)
        // Two acknowledged writes but the list went up by one: one write lost.
        let other = Ledger()
        other.created(list: "m", epoch: "e1", version: 1)
        other.acknowledged(list: "m", version: 2, label: "a")
        other.acknowledged(list: "m", version: 3, label: "b")
        other.checkVersions(final: try state("m", version: 2, items: []))
        #expect(other.violationCount >= 1)
    }

    @Test func anAcknowledgedWriteMissingOrDoubledInTheFinalStateIsAViolation() throws {
        let model = #"{"p":"w0-1","r":0}"#
        let good = Ledger()
        FinalCheck.check(
            expected: ["w0-1": .present(model: model), "w0-2": .absent, "w0-3": .uncertain],
            lists: [try state("l", version: 5, items: [("i1", model)])], ledger: good)
        #expect(good.violationCount == 0)
        let doubled = Ledger()
        FinalCheck.check(
            expected: ["w0-1": .present(model: model)],
            lists: [try state("l", version: 5, items: [("i1", model), ("i2", model)])], ledger: doubled)
        #expect(doubled.violationCount == 1)
        let missing = Ledger()
        FinalCheck.check(
            expected: ["w0-1": .present(model: model)], lists: [try state("l", version: 5, items: [])], ledger: missing)
        #expect(missing.violationCount == 1)
        let phantom = Ledger()
        FinalCheck.check(
            expected: [:], lists: [try state("l", version: 5, items: [("i9", #"{"p":"nobody","r":0}"#)])],
            ledger: phantom)
        #expect(phantom.violationCount == 1)
    }

    @Test func anAnswerOneVersionShortOrFromTheWrongVersionIsAViolation() throws {
        let held = try state("l", version: 4, items: [("a", #"{"p":"x","r":0}"#)])
        let skipped = try ChangeAnswer(
            json: JSONValue(parsing: #"{"list":"l","epoch":"e1","from":3,"to":5,"stages":[]}"#))
        let ledger = Ledger()
        #expect(FollowCheck.apply(skipped, to: held, ledger: ledger, source: "test") == nil)
        #expect(ledger.violationCount == 1)
        // A stage that inserts past the end does not apply.
        let invalid = try ChangeAnswer(
            json: JSONValue(
                parsing:
                    #"{"list":"l","epoch":"e1","from":4,"to":5,"stages":[{"itemInserted":[{"at":[0,5],"item":{"id":"b","model":{}}}]}]}"#
            ))
        let other = Ledger()
        #expect(FollowCheck.apply(invalid, to: held, ledger: other, source: "test") == nil)
        #expect(other.violationCount == 1)
        // A reset without a reason (the history is long, the epoch the same).
        let reset = try ChangeAnswer(
            json: JSONValue(
                parsing:
                    #"{"list":"l","epoch":"e1","from":4,"to":5,"reset":true,"stages":[],"snapshot":{"id":"l","name":"l","epoch":"e1","version":5,"sections":[]}}"#
            ))
        let third = Ledger()
        #expect(FollowCheck.apply(reset, to: held, ledger: third, source: "test") != nil)
        #expect(third.violationCount == 1)
        let pruned = Ledger()
        pruned.pruned(keeping: 1)
        _ = FollowCheck.apply(reset, to: held, ledger: pruned, source: "test")
        #expect(pruned.violationCount == 0)
    }

    @Test func aSectionUpdateBesideAnItemChangeInItCannotBeReloadSections() {
        let entry = JSONEntry(id: "x", model: JSONText("{}"))
        var stage = ListStage()
        stage.sectionUpdated = [.init(at: 1, model: JSONEntry(id: "s1", model: JSONText(#"{"t":1}"#)))]
        #expect(FollowCheck.reloadProblem(stage) == nil)
        stage.itemInserted = [.init(at: ElementPath(element: 0, section: 0), item: entry)]
        #expect(FollowCheck.reloadProblem(stage) == nil)
        stage.itemInserted = [.init(at: ElementPath(element: 0, section: 1), item: entry)]
        #expect(FollowCheck.reloadProblem(stage) != nil)
        // Section 0 deleted: the updated section 1 is at 0 after the stage.
        stage.sectionDeleted = [0]
        stage.itemInserted = [.init(at: ElementPath(element: 0, section: 0), item: entry)]
        #expect(FollowCheck.reloadProblem(stage) != nil)
        stage.itemInserted = []
        stage.itemDeleted = [ElementPath(element: 2, section: 1)]
        #expect(FollowCheck.reloadProblem(stage) != nil)
    }
}
