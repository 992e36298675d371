import HTTP
import JSON
import ListModel
import ListStore
import ListWire
import ListdTestSupport
import Testing

@testable import ListAPI

/// Routes that answer through the responder themselves (`.custom`: the
/// snapshot GET, long-polls, event streams) are cancelled like the others
/// when their client goes away: the store skips the calls they have not
/// started. Each case holds the route's store call (``GatedStore``), the
/// client leaves, the call goes on, and the store must refuse it as cancelled.
@Suite(.serialized) struct RouteCancellationTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var method: HTTPMethod
        var target: String
        var body: String?
        /// The store call the route makes first, which the test holds.
        var call: GatedStore.Call
        /// Whether the service has heard of the list's head before the request.
        var headKnown = false

        var testDescription: String { "\(method) \(target) (\(call))" }
    }

    static let cases: [Case] = [
        Case(method: .get, target: "/lists/l", call: .snapshot),
        Case(method: .get, target: "/lists/l/changes?since=1&timeout=30", call: .head),
        Case(method: .get, target: "/lists/l/changes?since=1&timeout=30", call: .changes, headKnown: true),
        Case(method: .post, target: "/changes", body: #"{"lists":{"l":1},"timeout":30}"#, call: .head),
        Case(method: .get, target: "/lists/l/events?since=1", call: .head),
    ]

    /// List `l` at version 2, written before the service exists: it knows no
    /// head and caches no snapshot, so every route must ask the store.
    static func make() async throws -> InProcessService {
        try await InProcessService.make(prepare: { store in
            let list = Identifier("l")
            let section = Identifier("s")
            _ = try await store.createList(id: list, name: "L", sections: [NewSection(id: section)])
            _ = try await store.apply(
                [.insertItem(section: section, item: NewItem(id: Identifier("a")), at: nil)], to: list,
                expectedVersion: nil)
        })
    }

    @Test(arguments: cases) func aCustomRouteWhoseClientLeftMakesNoStoreCall(_ route: Case) async throws {
        let app = try await Self.make()
        if route.headKnown {
            _ = try await app.json(.get, "/lists/l/changes?since=2&timeout=0")
            #expect(app.service.router.head(of: Identifier("l"))?.version == 2)
        }
        app.gated.hold(route.call)
        let exchange = app.send(route.method, route.target, json: route.body)
        try await waitUntil("the route's \(route.call) call is held") { app.gated.held(route.call) == 1 }
        exchange.disconnect()
        app.gated.release(route.call)
        try await waitUntil("the store refused the \(route.call) call of the client that left") {
            app.gated.cancelled(route.call) == 1
        }
        #expect(exchange.answered == nil)
        // The service goes on answering others.
        let snapshot = try ListState(json: try await app.json(.get, "/lists/l"))
        #expect(snapshot.version == 2)
        await app.close()
    }

    /// Two polls ask the same question; the one whose task computes it
    /// leaves. The other is answered all the same (it asks again), not
    /// failed with the first one's cancellation.
    @Test func aPollSharingAComputationWithAClientWhoLeftIsAnswered() async throws {
        let app = try await Self.make()
        _ = try await app.json(.get, "/lists/l/changes?since=2&timeout=0")
        let question = ChangeComputer.Question(list: Identifier("l"), from: 1, epoch: nil)
        app.gated.hold(.changes)
        let leaving = app.send(.get, "/lists/l/changes?since=1&timeout=30")
        try await waitUntil("the first poll computes") { app.gated.held(.changes) == 1 }
        let staying = app.send(.get, "/lists/l/changes?since=1&timeout=30")
        try await waitUntil("the second poll waits for the first's computation") {
            app.service.computer.waiting(for: question) == 1
        }
        leaving.disconnect()
        app.gated.release(.changes)
        let response = try await staying.response()
        #expect(response.status.code == 200, "\(String(decoding: response.body, as: UTF8.self))")
        let answer = try ChangeAnswer(json: try JSONValue(parsing: response.body))
        #expect(answer.from == 1 && answer.to == 2)
        #expect(app.gated.cancelled(.changes) == 1)
        #expect(leaving.answered == nil)
        await app.close()
    }
}
