import ListModel
import ListStore
import ListdTestSupport
import Testing

@testable import ListAPI

/// ChangeComputer's single flight, tested directly: the store's `changes`
/// call is held (``GatedStore``) until every asker has joined the flight, so
/// "shared" is a state the test sees, not a race it hopes to win.
///
/// The computer's commit router knows no heads, so it never answers from its
/// remembered answers: every flight that ends leaves the next question to a
/// new computation.
@Suite(.serialized) struct ChangeComputerTests {
    static let list = Identifier("l")

    /// List `l` at version 3 (created, then two inserts), seen through a GatedStore.
    static func make() async throws -> (app: InProcessService, computer: ChangeComputer) {
        let app = try await InProcessService.make(prepare: { store in
            let section = Identifier("s")
            _ = try await store.createList(id: list, name: "L", sections: [NewSection(id: section)])
            for item in ["a", "b"] {
                _ = try await store.apply(
                    [.insertItem(section: section, item: NewItem(id: Identifier(item)!), at: nil)], to: list,
                    expectedVersion: nil)
            }
        })
        return (app, ChangeComputer(store: app.gated, router: CommitRouter()))
    }

    static func question(since: Int64) -> ChangeComputer.Question {
        ChangeComputer.Question(list: list, from: since, epoch: nil)
    }

    /// Starts `count` askers of `question` in `group`.
    static func ask(
        _ computer: ChangeComputer, _ question: ChangeComputer.Question, count: Int,
        in group: inout ThrowingTaskGroup<EncodedChangeAnswer, any Error>
    ) {
        for _ in 0..<count {
            group.addTask { try await computer.answer(question) }
        }
    }

    @Test func manyConcurrentAskersOfOneQuestionCauseOneComputation() async throws {
        let (app, computer) = try await Self.make()
        let question = Self.question(since: 1)
        app.gated.hold(.changes)
        let answers = try await withThrowingTaskGroup(of: EncodedChangeAnswer.self) { group in
            Self.ask(computer, question, count: 50, in: &group)
            try await waitUntil("one asker computes and 49 wait for it") {
                app.gated.held(.changes) == 1 && computer.waiting(for: question) == 49
            }
            app.gated.release(.changes)
            var answers: [EncodedChangeAnswer] = []
            for try await answer in group { answers.append(answer) }
            return answers
        }
        #expect(answers.count == 50)
        #expect(app.gated.calls(.changes) == 1, "one store computation for 50 askers")
        #expect(computer.computationCount == 1)
        #expect(Set(answers.map(\.json)).count == 1, "every asker gets the same answer")
        #expect(answers.allSatisfy { $0.from == 1 && $0.to == 3 && !$0.reset })
        #expect(computer.waiting(for: question) == 0)
        await app.close()
    }

    @Test func aDifferentSinceIsASeparateComputation() async throws {
        let (app, computer) = try await Self.make()
        let fromOne = Self.question(since: 1)
        let fromTwo = Self.question(since: 2)
        app.gated.hold(.changes)
        let answers = try await withThrowingTaskGroup(of: EncodedChangeAnswer.self) { group in
            Self.ask(computer, fromOne, count: 10, in: &group)
            Self.ask(computer, fromTwo, count: 10, in: &group)
            try await waitUntil("two flights, each with one computing asker and nine waiting") {
                app.gated.held(.changes) == 2 && computer.waiting(for: fromOne) == 9
                    && computer.waiting(for: fromTwo) == 9
            }
            app.gated.release(.changes)
            var answers: [EncodedChangeAnswer] = []
            for try await answer in group { answers.append(answer) }
            return answers
        }
        #expect(app.gated.calls(.changes) == 2, "one store computation per question")
        #expect(computer.computationCount == 2)
        let one = answers.filter { $0.from == 1 }
        let two = answers.filter { $0.from == 2 }
        #expect(one.count == 10 && two.count == 10)
        #expect(Set(one.map(\.json)).count == 1 && Set(two.map(\.json)).count == 1)
        #expect(one.first?.json != two.first?.json)
        #expect(answers.allSatisfy { $0.to == 3 })
        await app.close()
    }

    @Test func anErrorReachesEveryWaiterOfItsFlightAndTheNextQuestionComputesAgain() async throws {
        let (app, computer) = try await Self.make()
        let question = Self.question(since: 1)
        app.gated.hold(.changes)
        app.gated.failNext(.changes, with: StoreError(.storageFailure, "the disk is on fire"))
        let outcomes = try await withThrowingTaskGroup(of: Result<EncodedChangeAnswer, StoreError>.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    do throws(StoreError) {
                        return .success(try await computer.answer(question))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            try await waitUntil("one asker computes and nine wait for it") {
                app.gated.held(.changes) == 1 && computer.waiting(for: question) == 9
            }
            app.gated.release(.changes)
            var outcomes: [Result<EncodedChangeAnswer, StoreError>] = []
            for try await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        #expect(outcomes.count == 10)
        for outcome in outcomes {
            switch outcome {
            case .success: Issue.record("an asker got an answer from a failed computation")
            case .failure(let error):
                #expect(error.kind == .storageFailure && error.detail == "the disk is on fire")
            }
        }
        #expect(app.gated.calls(.changes) == 1, "the failure is shared, not retried per asker")
        // The failed flight is over: the same question asked again is computed again.
        let again = try await computer.answer(question)
        #expect(again.from == 1 && again.to == 3)
        #expect(app.gated.calls(.changes) == 2)
        #expect(computer.computationCount == 2)
        await app.close()
    }

    /// The asker that computes leaves (its task is cancelled, so the store
    /// skips its call): the others of its flight are not failed with its
    /// `cancelled`; they ask again and one of them computes.
    @Test func anAskerWhoLeftDoesNotFailTheOthersOfItsFlight() async throws {
        let (app, computer) = try await Self.make()
        let question = Self.question(since: 1)
        app.gated.hold(.changes)
        let leaving = Task { try await computer.answer(question) }
        try await waitUntil("the first asker computes") { app.gated.held(.changes) == 1 }
        let answers = try await withThrowingTaskGroup(of: EncodedChangeAnswer.self) { group in
            Self.ask(computer, question, count: 5, in: &group)
            try await waitUntil("five askers wait for the first") { computer.waiting(for: question) == 5 }
            leaving.cancel()
            app.gated.resumeHeld(.changes)
            try await waitUntil("the first asker's call was skipped, one of the five computes and four wait") {
                app.gated.cancelled(.changes) == 1 && app.gated.held(.changes) == 1
                    && computer.waiting(for: question) == 4
            }
            app.gated.release(.changes)
            var answers: [EncodedChangeAnswer] = []
            for try await answer in group { answers.append(answer) }
            return answers
        }
        let error = await #expect(throws: StoreError.self) { try await leaving.value }
        #expect(error?.kind == .cancelled)
        #expect(answers.count == 5)
        #expect(Set(answers.map(\.json)).count == 1)
        #expect(answers.allSatisfy { $0.from == 1 && $0.to == 3 })
        #expect(app.gated.cancelled(.changes) == 1)
        #expect(app.gated.calls(.changes) == 2, "the cancelled call and one computation for the five")
        #expect(computer.computationCount == 2)
        await app.close()
    }
}
