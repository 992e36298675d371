import JSON
import ListWire
import SectionDiff

/// The checks every follower runs on every answer it applies.
public enum FollowCheck {
    /// Applies `answer` to `held` (the follower's state at the version it asked from),
    /// checking order, resets, stages and the state reached; returns the state at
    /// `answer.to`, or nil when the answer could not be applied (a violation was recorded).
    /// With `view`, `held` and the answer are that view's: the states reached are
    /// checked against the view oracle too (``Ledger/observe(_:source:view:)``).
    public static func apply(
        _ answer: ChangeAnswer, to held: ListState, ledger: Ledger, source: String, view: ViewOracle? = nil
    ) -> ListState? {
        ledger.history.record(
            held.id, at: ledger.now, actor: source,
            answer.snapshot != nil
                ? "reset from \(held.version) to \(answer.to)"
                : "answer \(answer.from)→\(answer.to) (\(answer.stages.count) stages) applied to \(held.version)")
        guard answer.list == held.id else {
            ledger.violated(.answersOrdered, "\(source): an answer for \(answer.list) on \(held.id)'s stream")
            return nil
        }
        if let snapshot = answer.snapshot {
            ledger.count("resets")
            ledger.check(
                .resetsJustified,
                ledger.resetJustified(
                    list: held.id, since: held.version, to: answer.to, heldEpoch: held.epoch, epoch: answer.epoch),
                "\(source): reset of \(held.id) from \(held.version) to \(answer.to) with the history kept")
            ledger.check(
                .answersOrdered, snapshot.version == answer.to && answer.to >= held.version,
                "\(source): reset of \(held.id) from \(held.version) to \(answer.to) (snapshot \(snapshot.version))")
            ledger.observe(snapshot, source: source, view: view)
            return snapshot
        }
        guard answer.from == held.version, answer.to >= answer.from, answer.epoch == held.epoch else {
            ledger.violated(
                .answersOrdered,
                "\(source): held \(held.id)@\(held.version) (epoch \(held.epoch)), answer \(answer.from)→\(answer.to) "
                    + "epoch \(answer.epoch)")
            return nil
        }
        ledger.passed(.answersOrdered)
        if answer.to == answer.from {
            ledger.check(
                .answersOrdered, answer.stages.isEmpty,
                "\(source): \(held.id) answer \(answer.from)→\(answer.to) carries \(answer.stages.count) stages")
            return held
        }
        let applied: [AppliedStage]
        do {
            applied = try answer.applied(to: held)
        } catch {
            ledger.violated(.stagesValid, "\(source): \(held.id) \(answer.from)→\(answer.to): \(error)")
            return nil
        }
        for (index, stage) in applied.enumerated() {
            if let problem = reloadProblem(stage.stage) {
                ledger.violated(
                    .stagesValid, "\(source): \(held.id) \(answer.from)→\(answer.to) stage \(index): \(problem)")
            } else {
                ledger.passed(.stagesValid)
            }
        }
        var next = held
        next.version = answer.to
        if let last = applied.last { next.sections = last.sections }
        ledger.observe(next, source: source, view: view)
        return next
    }

    /// Why `stage` cannot be applied with its section updates as `reloadSections`
    /// (an item deleted, updated, inserted or moved into or out of an updated
    /// section in the same stage), or nil when it can.
    public static func reloadProblem<Model, Item>(_ stage: Stage<Model, Item>) -> String? {
        guard !stage.sectionUpdated.isEmpty else { return nil }
        // Where each section before the stage is after it.
        let deleted = Set(stage.sectionDeleted)
        let movedTo = Dictionary(stage.sectionMoved.map { ($0.from, $0.to) }, uniquingKeysWith: { first, _ in first })
        let taken = Set(stage.sectionInserted.map(\.at)).union(stage.sectionMoved.map(\.to))
        var afterOf: [Int: Int] = [:]
        let updated = Set(stage.sectionUpdated.map(\.at))
        let highest = (Array(updated) + stage.sectionDeleted + stage.sectionMoved.map(\.from)).max() ?? 0
        var slot = 0
        for before in 0...highest where !deleted.contains(before) {
            if let to = movedTo[before] {
                afterOf[before] = to
                continue
            }
            while taken.contains(slot) { slot += 1 }
            afterOf[before] = slot
            slot += 1
        }
        for section in updated {
            let after = afterOf[section]
            if stage.itemDeleted.contains(where: { $0.section == section })
                || stage.itemUpdated.contains(where: { $0.at.section == section })
                || stage.itemMoved.contains(where: { $0.from.section == section })
                || stage.itemInserted.contains(where: { $0.at.section == after })
                || stage.itemMoved.contains(where: { $0.to.section == after })
            {
                return "section \(section) is updated (reloadSections) beside an item change in it"
            }
        }
        return nil
    }
}
