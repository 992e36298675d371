import Foundation
import JSON
import ListClient
import ListdTestSupport
import Testing

/// Issue 24's optimistic reconcile, as a property test: random local writes
/// shown at once, concurrent remote writes, the follow's polls, answers lost
/// (retried later, or given up on) and writes refused (a stale `If-Match`, an
/// item someone else deleted, an id taken), against ``OracleList``. After every
/// step what shows must be the oracle's server state at the follow's version with
/// the oracle's pending writes replayed over it; every stage must pass the UIKit
/// model; an update that changes nothing visible must carry no stage; at the end,
/// with every write answered and the follow caught up, what shows is the server's
/// snapshot and nothing is pending.
@Suite struct OptimisticReconcileTests {
    /// One case: a list, then `steps` random steps, then everything delivered.
    struct Case {
        var random: SeededGenerator
        var server: OracleList
        var machine = FollowMachine(list: "l")
        var model: OptimisticList
        /// The view shown (the whole list in half the cases).
        let view: ViewSpec
        var consumer = TableConsumer()
        /// Writes shown, not yet seen by the server, in order: key, operations, If-Match.
        var unsent: [(key: String, operations: [ListOperation], ifMatch: Int64?)] = []
        /// Answers the server gave that the client has not received yet (lost, retried later).
        var lateAnswers: [(key: String, result: Result<Int64, OracleList.Refusal>)] = []
        /// The oracle's own pending list: key → (operations, version once answered).
        var pending: [(key: String, operations: [ListOperation], version: Int64?)] = []
        var nextKey = 0
        var nextID = 0
        /// Updates whose display did not change, and the stages they carried (must be 0).
        var quietUpdates = 0
        var quietStages = 0
        /// Writes confirmed (answer and echo in), and the stages emitted when they were.
        var confirmations = 0
        var confirmationStages = 0
        var rejections = 0

        init(seed: UInt64) {
            random = SeededGenerator(seed: seed)
            var sections: [OracleList.Section] = []
            for s in 0..<Int.random(in: 1...3, using: &random) {
                let items = (0..<Int.random(in: 0...4, using: &random)).map { i in
                    OracleList.Item(id: "i\(s)_\(i)", model: "{\"n\":\(i)}")
                }
                sections.append(OracleList.Section(id: "s\(s)", model: "{}", items: items))
            }
            server = OracleList(sections: sections)
            let views = [
                "", "where=n:1", "order=n", "order=-n&limit=3", "group=n", "where=n:2&group=n",
                "group=n&order=-n&limit=2",
            ]
            let query = Bool.random(using: &random) ? "" : views.randomElement(using: &random) ?? ""
            view = (try? ViewSpec(parsing: query)) ?? .wholeList
            model = OptimisticList(list: "l", view: view)
        }

        mutating func freshID(_ prefix: String) -> Identifier {
            nextID += 1
            return Identifier("\(prefix)\(nextID)") ?? "x"
        }

        /// A random operation over `sections` (mostly one that applies there).
        mutating func operation(over sections: [OracleList.Section]) -> ListOperation {
            let items = sections.flatMap { section in section.items.map(\.id) }
            let anyItem: Identifier =
                items.isEmpty || Int.random(in: 0..<10, using: &random) == 0
                ? freshID("gone") : Identifier(items.randomElement(using: &random) ?? "x") ?? "x"
            let section = sections.randomElement(using: &random)
            let sectionID = Identifier(section?.id ?? "nosection") ?? "x"
            let model = Model(
                JSONValue.object(["n": .number(JSONNumber(Int64(Int.random(in: 0..<4, using: &random))))]))
            switch Int.random(in: 0..<20, using: &random) {
            case 0..<5:
                let count = section?.items.count ?? 0
                let at: Int? = Bool.random(using: &random) ? nil : Int.random(in: 0...count + 1, using: &random)
                return .insertItem(section: sectionID, id: freshID("n"), model: model, at: at)
            case 5..<9: return .updateItem(id: anyItem, model: model)
            case 9..<13:
                let target = Bool.random(using: &random) ? nil : sections.randomElement(using: &random)
                let count = (target ?? section)?.items.count ?? 0
                return .moveItem(
                    id: anyItem, section: target.flatMap { Identifier($0.id) },
                    to: Int.random(in: 0...count, using: &random))
            case 13..<16: return .deleteItem(id: anyItem)
            case 16: return .insertSection(id: freshID("s"), model: model, items: [NewItem(id: freshID("n"))], at: nil)
            case 17: return .updateSection(id: sectionID, model: model)
            case 18: return .moveSection(id: sectionID, to: Int.random(in: 0..<max(sections.count, 1), using: &random))
            default:
                return sections.count > 1 ? .deleteSection(id: sectionID) : .updateSection(id: sectionID, model: model)
            }
        }

        /// What must show: the oracle's server state at the follow's version, the pending writes over it.
        var expected: UIKitBatchModel.State? {
            guard let version = machine.state?.version, let base = server.history[version] else { return nil }
            return OracleList.seen(OracleList.replay(pending.map(\.operations), over: base), through: view)
        }

        mutating func take(_ update: OptimisticUpdate?, _ what: String, step: Int, seed: UInt64) {
            let before = consumer.shown
            let context = "seed \(seed) step \(step) \(what)"
            let stages = consumer.take(update?.update, context: context)
            guard let expected else { return }
            if consumer.shown != expected {
                consumer.problems.append(
                    "\(context): shows \(consumer.shown.map(\.description) ?? "nil"), expected \(expected)")
            }
            if model.shown.map({ UIKitBatchModel.State($0.sections) }) != expected {
                consumer.problems.append("\(context): the model's state is not what shows")
            }
            if model.pending.keys != pending.map(\.key) {
                consumer.problems.append("\(context): pending \(model.pending.keys), expected \(pending.map(\.key))")
            }
            if let update, update.pending != model.pending || update.state != model.shown {
                consumer.problems.append("\(context): the update's pending or state is not the model's")
            }
            // Not a local write: its operations animate one by one even when they undo each other.
            if before == expected, let update {
                if case .local = update.cause { return }
                quietUpdates += 1
                quietStages += stages
                if stages > 0 {
                    consumer.problems.append("\(context): \(stages) stages for \(update.cause), which changed nothing")
                }
            }
        }

        /// The follow's poll: the server's change since the version held (a reset now and then).
        mutating func poll(step: Int, seed: UInt64) {
            guard let state = machine.state else {
                let update = machine.receive(snapshot: server.snapshot)
                dropConfirmed()
                take(model.receive(update), "snapshot", step: step, seed: seed)
                return
            }
            guard state.version != server.version else { return }
            let answer: ChangeAnswer?
            if Int.random(in: 0..<15, using: &random) == 0 {
                answer = ChangeAnswer(resetFrom: state.version, to: server.snapshot)
            } else {
                answer = server.answer(since: state.version)
            }
            guard let answer, let update = machine.receive(answer) else {
                consumer.problems.append("seed \(seed) step \(step): the follow rejected the server's answer")
                return
            }
            let confirmedBefore = pending.count
            dropConfirmed()
            let confirmed = confirmedBefore - pending.count
            let shownBefore = consumer.shown
            take(model.receive(update), "poll", step: step, seed: seed)
            if confirmed > 0 && shownBefore == consumer.shown {
                confirmations += confirmed
            }
        }

        /// The oracle's rule: a write whose answer named a version the follow holds is confirmed.
        mutating func dropConfirmed() {
            guard let held = machine.state?.version else { return }
            pending.removeAll { write in write.version.map { $0 <= held } ?? false }
        }

        /// The client hears the server's answer to `key`.
        mutating func answer(_ key: String, _ result: Result<Int64, OracleList.Refusal>, step: Int, seed: UInt64) {
            guard let index = pending.firstIndex(where: { $0.key == key }) else { return }
            switch result {
            case .success(let version):
                pending[index].version = version
                dropConfirmed()
                let shownBefore = consumer.shown
                let update = model.applied(key: key, version: version)
                take(update, "answer", step: step, seed: seed)
                if !pending.contains(where: { $0.key == key }) && shownBefore == consumer.shown {
                    confirmations += 1
                    confirmationStages += OptimisticFollowTests.stageCount(update)
                }
            case .failure(let refusal):
                pending.remove(at: index)
                rejections += 1
                let error = ListClientError(kind: .problem, status: refusal.status, detail: "\(refusal)")
                let update = model.failed(key: key, error: error)
                if update?.cause != .rejected(key: key, error) {
                    consumer.problems.append(
                        "seed \(seed) step \(step): a rejection reported as \(String(describing: update?.cause))")
                }
                take(update, "rejection", step: step, seed: seed)
            }
        }

        /// The client gives up on `key` (its retries ran out): rolled back, whatever the server did.
        mutating func giveUp(_ key: String, step: Int, seed: UInt64) {
            guard let index = pending.firstIndex(where: { $0.key == key }) else { return }
            pending.remove(at: index)
            let update = model.failed(key: key, error: ListClientError(kind: .transport, detail: "gave up"))
            take(update, "give up", step: step, seed: seed)
        }

        mutating func run(steps: Int, seed: UInt64) {
            poll(step: 0, seed: seed)
            for step in 1...steps {
                switch Int.random(in: 0..<100, using: &random) {
                case 0..<30:
                    // A local write of 1-3 operations over what shows.
                    // Over what shows; a view's sections are not the list's, so over the server's list.
                    let shownSections = view.isWholeList ? consumer.shown?.sections ?? [] : server.sections
                    let operations = (0..<Int.random(in: 1...3, using: &random)).map { _ in
                        operation(over: shownSections)
                    }
                    let ifMatch: Int64? = Int.random(in: 0..<8, using: &random) == 0 ? machine.state?.version : nil
                    nextKey += 1
                    let key = "k\(nextKey)"
                    do {
                        let update = try model.write(operations, key: key)
                        pending.append((key, operations, nil))
                        unsent.append((key, operations, ifMatch))
                        take(update, "local write", step: step, seed: seed)
                    } catch {
                        consumer.problems.append("seed \(seed) step \(step): the write was refused: \(error)")
                    }
                case 30..<52:
                    // The server takes the oldest write sent (writes go one after the other).
                    guard !unsent.isEmpty else { continue }
                    let write = unsent.removeFirst()
                    let result = server.apply(write.operations, ifMatch: write.ifMatch)
                    switch Int.random(in: 0..<10, using: &random) {
                    case 0..<6: answer(write.key, result, step: step, seed: seed)
                    case 6..<9: lateAnswers.append((write.key, result))  // lost: the retry gets the stored answer later
                    default: giveUp(write.key, step: step, seed: seed)  // lost, and the retries ran out
                    }
                case 52..<56:
                    // A write lost before the server saw it, whose retries ran out.
                    guard !unsent.isEmpty else { continue }
                    let write = unsent.removeFirst()
                    giveUp(write.key, step: step, seed: seed)
                case 56..<72:
                    // Someone else writes.
                    let operations = (0..<Int.random(in: 1...2, using: &random)).map { _ in
                        operation(over: server.sections)
                    }
                    _ = server.apply(operations)
                case 72..<92:
                    poll(step: step, seed: seed)
                default:
                    guard !lateAnswers.isEmpty else { continue }
                    let late = lateAnswers.remove(at: Int.random(in: 0..<lateAnswers.count, using: &random))
                    answer(late.key, late.result, step: step, seed: seed)
                }
            }
            // Everything sent, answered, and the follow caught up.
            while !unsent.isEmpty {
                let write = unsent.removeFirst()
                answer(write.key, server.apply(write.operations, ifMatch: write.ifMatch), step: steps + 1, seed: seed)
            }
            for late in lateAnswers { answer(late.key, late.result, step: steps + 1, seed: seed) }
            lateAnswers = []
            poll(step: steps + 2, seed: seed)
        }
    }

    @Test func reconcileAgainstTheOracle() throws {
        let seed = SeededGenerator.seed(for: "reconcileAgainstTheOracle")
        var seeds = SeededGenerator(seed: seed)
        let cases = SeededGenerator.cases(normal: 400, long: 5_000)
        var views = 0
        var totals = (writes: 0, quiet: 0, quietStages: 0, confirmations: 0, confirmationStages: 0, rejections: 0)
        for _ in 0..<cases {
            let caseSeed = seeds.next()
            var test = Case(seed: caseSeed)
            test.run(steps: Int.random(in: 10...80, using: &seeds), seed: caseSeed)
            for problem in test.consumer.problems.prefix(3) { Issue.record(Comment(rawValue: problem)) }
            guard test.consumer.problems.isEmpty else { return }
            // The end: the server's snapshot (through the view), nothing pending.
            let final = OracleList.seen(test.server.sections, through: test.view)
            #expect(test.model.shown.map { UIKitBatchModel.State($0.sections) } == final, "case seed \(caseSeed)")
            #expect(test.model.confirmed?.version == test.server.version, "case seed \(caseSeed)")
            #expect(test.model.pending.isEmpty, "case seed \(caseSeed)")
            #expect(test.consumer.shown == final, "case seed \(caseSeed)")
            if !test.view.isWholeList { views += 1 }
            totals.writes += test.nextKey
            totals.quiet += test.quietUpdates
            totals.quietStages += test.quietStages
            totals.confirmations += test.confirmations
            totals.confirmationStages += test.confirmationStages
            totals.rejections += test.rejections
        }
        print(
            "reconcileAgainstTheOracle: \(cases) cases (\(views) through a view), \(totals.writes) local writes, \(totals.rejections) rejected, "
                + "\(totals.confirmations) confirmed with nothing to show (\(totals.confirmationStages) stages), "
                + "\(totals.quiet) updates that changed nothing visible (\(totals.quietStages) stages)")
        #expect(totals.quietStages == 0)
        #expect(totals.confirmationStages == 0)
        // The generator must reach what the test is about.
        #expect(totals.confirmations > cases)
        #expect(totals.rejections > cases / 10)
        #expect(views > cases / 4)
    }
}
