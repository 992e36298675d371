import Foundation
import JSON
import ListClient
import ListdTestSupport
import Testing

/// `FollowedListModel`, the SwiftUI binding of the README's ten-line example,
/// driven as SwiftUI's `.task` drives it, against a real listd.
@MainActor @Suite(.serialized) struct FollowedListModelTests {
    struct Todo: Decodable, Sendable, Equatable {
        var title: String
        var done: Bool
        var due: Int
    }

    static func model(_ title: String, done: Bool, due: Int) -> JSONValue {
        .object(["title": .string(title), "done": .bool(done), "due": .number(JSONNumber(Int64(due)))])
    }

    static func todo(_ id: String, _ title: String, done: Bool, due: Int) -> JSONEntry {
        JSONEntry(id: id, model: JSONText(model(title, done: done, due: due).canonicalText))
    }

    /// Polls `condition` on the main actor, as a view reading the model would.
    func until(_ seconds: Double, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * testWaitScale * 1000))
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }

    @Test func aModelFollowsAViewAndMovesWithTheServer() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let writer = server.client()
        _ = try await writer.createList(
            id: "todos", name: "Todos",
            sections: [
                .init(
                    model: JSONEntry(id: "s", model: JSONText("{}")),
                    items: [
                        Self.todo("a", "milk", done: false, due: 3), Self.todo("b", "bread", done: true, due: 1),
                        Self.todo("c", "eggs", done: false, due: 2),
                    ])
            ])
        let model = FollowedListModel<Todo>()
        let client = ListClient(baseURL: server.baseURL, token: nil)
        let following = Task { await model.follow(client, list: "todos", view: "where=done:false&order=due") }
        defer { following.cancel() }
        #expect(await until(20) { model.state.connection == .live })
        #expect(model.state.sections.flatMap(\.items).map(\.model.title) == ["eggs", "milk"])

        _ = try await writer.patchList(
            "todos", [.updateItem(id: "b", model: Model(Self.model("bread", done: false, due: 0)))])
        #expect(await until(20) { model.state.sections.flatMap(\.items).map(\.id) == ["b", "c", "a"] })
        #expect(model.state.error == nil)

        following.cancel()
        await following.value
        #expect(model.state.sections.flatMap(\.items).map(\.id) == ["b", "c", "a"], "the last state stays shown")
    }

    @Test func aQueryThatDoesNotParseEndsTheModelWithAnErrorNamingIt() async throws {
        let model = FollowedListModel<Todo>()
        let client = ListClient(baseURL: URL(string: "http://127.0.0.1:9")!, token: nil)
        await model.follow(client, list: "todos", view: "where=done")
        #expect(model.state.connection == .ended)
        #expect(model.state.error?.kind == .invalidRequest)
        #expect(model.state.error?.detail.contains("where=done") == true, "\(String(describing: model.state.error))")
    }
}
