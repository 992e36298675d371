import HTTP
import JSON
import ListStore
import ListWire
import ListdTestSupport
import Server
import Testing

@testable import ListAPI

/// The change hub, the change computer, the commit router and cancellation,
/// tested through the service with no sockets (``InProcessService``).
@Suite(.serialized) struct ServiceInProcessTests {
    static let createBody = #"{"id":"l","name":"L","sections":[{"id":"s","model":{},"items":[{"id":"a","model":1}]}]}"#

    static func insert(_ item: String) -> String {
        #"{"ops":[{"op":"insertItem","section":"s","item":{"id":"\#(item)","model":0}}]}"#
    }

    @Test func aCommitWakesAParkedPollWithStagesThatApply() async throws {
        let app = try await InProcessService.make()
        let created = try ListState(json: try await app.json(.post, "/lists", json: Self.createBody, status: 201))
        let poll = app.send(.get, "/lists/l/changes?since=\(created.version)&timeout=30")
        try await waitUntil("the poll is parked") { app.service.parkedWaiters == 1 }
        #expect(poll.answered == nil)
        let write = app.send(.patch, "/lists/l", json: Self.insert("b"))
        #expect(try await write.response().status.code == 200)
        let response = try await poll.response()
        #expect(response.status.code == 200)
        // The write's own answer goes ahead of the burst of long-poll answers its commit gives.
        #expect(write.answeredUrgency == .direct)
        #expect(poll.answeredUrgency == .bulk)
        let answer = try ChangeAnswer(json: try JSONValue(parsing: response.body))
        #expect(answer.from == created.version && answer.to == created.version + 1)
        let after = try answer.applied(to: created).last?.sections
        #expect(after?.first?.items.map(\.id) == ["a", "b"])
        #expect(app.service.parkedWaiters == 0)
        await app.close()
    }

    @Test func aPollBehindTheHeadIsAnsweredAtOnceNotParked() async throws {
        let app = try await InProcessService.make()
        _ = try await app.json(.post, "/lists", json: Self.createBody, status: 201)
        _ = try await app.json(.patch, "/lists/l", json: Self.insert("b"))
        _ = try await app.json(.patch, "/lists/l", json: Self.insert("c"))
        // The commit router has heard of version 3 before the PATCH answered, so a
        // poll from 1 must get both writes, never park behind them.
        let answer = try ChangeAnswer(json: try await app.json(.get, "/lists/l/changes?since=1&timeout=30"))
        #expect(answer.from == 1 && answer.to == 3)
        #expect(app.service.parkedWaiters == 0)
        await app.close()
    }

    @Test func manyWaitersOfOneQuestionShareOneAnswer() async throws {
        let app = try await InProcessService.make()
        _ = try await app.json(.post, "/lists", json: Self.createBody, status: 201)
        let polls = (0..<50).map { _ in app.send(.get, "/lists/l/changes?since=1&timeout=30") }
        try await waitUntil("every poll is parked") { app.service.parkedWaiters == 50 }
        _ = try await app.json(.patch, "/lists/l", json: Self.insert("b"))
        var bodies = Set<[UInt8]>()
        for poll in polls { bodies.insert(try await poll.response().body) }
        #expect(bodies.count == 1, "every waiter gets the same bytes")
        await app.close()
    }

    @Test func aParkedPollTimesOutUnchanged() async throws {
        let app = try await InProcessService.make(tick: .milliseconds(10))
        _ = try await app.json(.post, "/lists", json: Self.createBody, status: 201)
        let answer = try ChangeAnswer(json: try await app.json(.get, "/lists/l/changes?since=1&timeout=0.05"))
        #expect(answer.from == 1 && answer.to == 1 && answer.stages.isEmpty)
        #expect(app.service.parkedWaiters == 0)
        await app.close()
    }

    @Test func aPollWhoseClientLeftIsDropped() async throws {
        let app = try await InProcessService.make()
        _ = try await app.json(.post, "/lists", json: Self.createBody, status: 201)
        let poll = app.send(.get, "/lists/l/changes?since=1&timeout=30")
        try await waitUntil("the poll is parked") { app.service.parkedWaiters == 1 }
        poll.disconnect()
        try await waitUntil("the poll is dropped") { app.service.parkedWaiters == 0 }
        _ = try await app.json(.patch, "/lists/l", json: Self.insert("b"))
        #expect(poll.answered == nil)
        await app.close()
    }

    @Test func shutdownAnswersParkedPollsUnchanged() async throws {
        let app = try await InProcessService.make()
        _ = try await app.json(.post, "/lists", json: Self.createBody, status: 201)
        let poll = app.send(.get, "/lists/l/changes?since=1&timeout=30")
        try await waitUntil("the poll is parked") { app.service.parkedWaiters == 1 }
        app.service.shutdown()
        let answer = try ChangeAnswer(json: try JSONValue(parsing: try await poll.response().body))
        #expect(answer.to == 1 && answer.stages.isEmpty)
        await app.close()
    }

    /// The client of a write queued behind another leaves: its handler's task is
    /// cancelled, the store skips the write, the other write is unaffected.
    @Test func aQueuedWriteWhoseClientLeftIsNotApplied() async throws {
        let app = try await InProcessService.make()
        _ = try await app.json(.post, "/lists", json: Self.createBody, status: 201)
        app.gate.arm()
        let first = app.send(.patch, "/lists/l", json: Self.insert("b"))
        try await waitUntil("the first write committed and the writer waits") { app.gate.isHolding }
        let second = app.send(.patch, "/lists/l", json: Self.insert("c"))
        try await waitUntil("the second write is queued") { app.store.queuedWrites == 1 }
        second.disconnect()
        app.gate.open()
        #expect(try await first.response().status.code == 200)
        let snapshot = try ListState(json: try await app.json(.get, "/lists/l"))
        #expect(snapshot.version == 2)
        #expect(snapshot.sections.first?.items.map(\.id) == ["a", "b"])
        #expect(second.answered == nil)
        await app.close()
    }
}
