import HTTP
import JSON
import ListStore
import ListWire
import ListdTestSupport
import Testing

@testable import ListAPI

/// A view's follower behind its list: the change hub records which commits
/// touched each view watch key, so a follower whose view no commit since its
/// version touched parks (at the last commit heard) instead of being answered
/// an empty change and asking again; one whose view did change, or after a
/// commit that changed the sections, is answered at once. The answer a parked
/// follower gets later starts at the version it holds and applies to its view.
@Suite(.serialized) struct ViewParkingTests {
    static let createBody = """
        {"id":"l","name":"L","sections":[{"id":"s","model":{},"items":[
        {"id":"a","model":{"o":"x","n":1}},{"id":"b","model":{"o":"y","n":2}}]}]}
        """

    static func update(_ item: String, owner: String, _ n: Int) -> String {
        #"{"ops":[{"op":"updateItem","id":"\#(item)","model":{"o":"\#(owner)","n":\#(n)}}]}"#
    }

    /// The service with a follower of `where=o:x` parked at version 1, so the hub records its key from there.
    static func followed() async throws -> (InProcessService, InProcessExchange, ListState) {
        let app = try await InProcessService.make()
        _ = try await app.json(.post, "/lists", json: Self.createBody, status: 201)
        let view = try ListState(json: try await app.json(.get, "/lists/l?where=o:x"))
        let first = app.send(.get, "/lists/l/changes?since=1&timeout=30&where=o:x")
        try await waitUntil("the first follower is parked") { app.service.parkedWaiters == 1 }
        return (app, first, view)
    }

    @Test func aFollowerBehindWhoseViewNoCommitTouchedParks() async throws {
        let (app, first, view) = try await Self.followed()
        _ = try await app.json(.patch, "/lists/l", json: Self.update("b", owner: "y", 3))
        _ = try await app.json(.patch, "/lists/l", json: Self.update("b", owner: "y", 4))
        // The list is at 3; the view of o:x is as it was at 1: the second follower
        // parks with no answer computed (none to send, and none to ask again from).
        let computed = app.service.computer.computationCount
        let second = app.send(.get, "/lists/l/changes?since=1&timeout=30&where=o:x")
        try await waitUntil("the second follower is parked too") { app.service.parkedWaiters == 2 }
        #expect(first.answered == nil && second.answered == nil)
        #expect(app.service.computer.computationCount == computed)
        // A write to its view wakes both, each answered from the version it holds.
        _ = try await app.json(.patch, "/lists/l", json: Self.update("a", owner: "x", 5))
        for poll in [first, second] {
            let answer = try ChangeAnswer(json: try JSONValue(parsing: try await poll.response().body))
            #expect(answer.from == 1 && answer.to == 4)
            #expect(view.version == 1)
            let after = try answer.applied(to: view).last?.sections
            #expect(after?.first?.items.map(\.model.text) == [#"{"n":5,"o":"x"}"#])
        }
        #expect(app.service.parkedWaiters == 0)
        await app.close()
    }

    /// Views on two condition paths of one list: a commit is looked at for both,
    /// and wakes only the follower whose value it touched.
    @Test func followersOfTwoPathsAreEachWokenByTheirOwnValue() async throws {
        let (app, byOwner, _) = try await Self.followed()
        let byNumber = app.send(.get, "/lists/l/changes?since=1&timeout=30&where=n:2")
        try await waitUntil("both followers are parked") { app.service.parkedWaiters == 2 }
        // b held n = 2: its follower is woken; a's owner view is left alone.
        _ = try await app.json(.patch, "/lists/l", json: Self.update("b", owner: "y", 9))
        let numbered = try ChangeAnswer(json: try JSONValue(parsing: try await byNumber.response().body))
        #expect(numbered.from == 1 && numbered.to == 2 && !numbered.stages.isEmpty)
        #expect(byOwner.answered == nil)
        _ = try await app.json(.patch, "/lists/l", json: Self.update("a", owner: "x", 10))
        let owned = try ChangeAnswer(json: try JSONValue(parsing: try await byOwner.response().body))
        #expect(owned.to == 3 && !owned.stages.isEmpty)
        await app.close()
    }

    @Test func aFollowerBehindWhoseViewChangedIsAnsweredAtOnce() async throws {
        let (app, first, _) = try await Self.followed()
        _ = try await app.json(.patch, "/lists/l", json: Self.update("a", owner: "x", 7))
        _ = try await first.response()
        _ = try await app.json(.patch, "/lists/l", json: Self.update("b", owner: "y", 8))
        // From 1 the view changed (at 2): answered at once, to the list's head.
        let answer = try ChangeAnswer(json: try await app.json(.get, "/lists/l/changes?since=1&timeout=30&where=o:x"))
        #expect(answer.from == 1 && answer.to == 3 && !answer.stages.isEmpty)
        #expect(app.service.parkedWaiters == 0)
        await app.close()
    }

    @Test func aFollowerBehindASectionChangeIsAnsweredAtOnce() async throws {
        let (app, first, _) = try await Self.followed()
        // A new section is in every view without `group`: every key counts as touched.
        _ = try await app.json(
            .patch, "/lists/l", json: #"{"ops":[{"op":"insertSection","section":{"id":"t","model":{}},"at":1}]}"#)
        let answer = try ChangeAnswer(json: try await app.json(.get, "/lists/l/changes?since=1&timeout=30&where=o:x"))
        #expect(answer.from == 1 && answer.to == 2 && !answer.stages.isEmpty)
        // The first follower, parked at 1, is woken by it too.
        let woken = try ChangeAnswer(json: try JSONValue(parsing: try await first.response().body))
        #expect(woken.from == 1 && woken.to == 2)
        #expect(app.service.parkedWaiters == 0)
        await app.close()
    }
}
