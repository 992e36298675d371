import Foundation
import JSON
import ListClient
import ListdTestSupport
import Synchronization
import Testing

/// `Codable` models (issue 26): follows and snapshots with items decoded into
/// the app's type, only changed items decoded again, and a model that does not
/// decode reported with the item, section and coding path.
@Suite struct DecodedFollowTests {
    struct Todo: Codable, Sendable, Equatable {
        var title: String
        var done: Bool
    }

    static func state(version: Int64, _ items: [(String, String)]) throws -> ListState {
        let entries = items.map { #"{"id":"\#($0.0)","model":\#($0.1)}"# }.joined(separator: ",")
        return try ListState(
            json: JSONValue(
                parsing: #"{"id":"t","name":"","epoch":"e","version":\#(version),"sections":["#
                    + #"{"id":"s","model":{"title":"S"},"items":[\#(entries)]}]}"#))
    }

    @Test func decodesEveryItemAndOnlyChangedItemsAgain() throws {
        let decodes = Atomic<Int>(0)
        var decoder = SnapshotDecoder<Todo> {
            decodes.add(1, ordering: .relaxed)
            return JSONDecoder()
        }
        let first = try decoder.decode(
            Self.state(version: 1, [("a", #"{"done":false,"title":"A"}"#), ("b", #"{"done":true,"title":"B"}"#)]))
        #expect(first.items.map(\.model) == [Todo(title: "A", done: false), Todo(title: "B", done: true)])
        #expect(first.sections.first?.id == "s" && first.version == 1)
        #expect(try first.sections.first?.decodeModel(as: [String: String].self) == ["title": "S"])
        #expect(first[section: 0, item: 1]?.id == "b" && first[section: 0, item: 2] == nil)
        #expect(decodes.load(ordering: .relaxed) == 2)
        // b changed, c is new, a is as it was: two decodes, not three.
        let second = try decoder.decode(
            Self.state(
                version: 2,
                [
                    ("a", #"{"done":false,"title":"A"}"#), ("b", #"{"done":false,"title":"B"}"#),
                    ("c", #"{"done":false,"title":"C"}"#),
                ]))
        #expect(second.items.map(\.id) == ["a", "b", "c"])
        #expect(second.items[1].model.done == false)
        #expect(decodes.load(ordering: .relaxed) == 4)
    }

    @Test func aModelThatDoesNotDecodeNamesTheItemSectionAndPath() throws {
        var decoder = SnapshotDecoder<Todo>()
        let wrongType = #expect(throws: ListClientError.self) {
            try decoder.decode(
                Self.state(version: 1, [("a", #"{"done":false,"title":"A"}"#), ("x", #"{"done":false,"title":3}"#)]))
        }
        #expect(wrongType?.kind == .decoding)
        #expect(wrongType?.modelFailure?.item == "x" && wrongType?.modelFailure?.section == "s")
        #expect(wrongType?.modelFailure?.list == "t" && wrongType?.modelFailure?.path == "title")
        #expect(wrongType?.detail.contains(#"item "x" in section "s" of list "t", at "title""#) == true)
        let missing = #expect(throws: ListClientError.self) {
            try decoder.decode(Self.state(version: 1, [("y", #"{"title":"Y"}"#)]))
        }
        #expect(missing?.modelFailure?.item == "y" && missing?.modelFailure?.path == "done")
        #expect(missing?.modelFailure?.reason == "key not found")
        #expect(missing?.isTransient == false)
    }

    static func todo(_ title: String, done: Bool) -> Model { ["title": .string(title), "done": .bool(done)] }

    /// Against a real listd: a decoded follow shows writes as decoded items, and ends with a
    /// `.decoding` error naming the item when a model no longer fits the app's type.
    @Test func aDecodedFollowOfARealServer() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let writer = server.client()
        _ = try await writer.createList(id: "todo")
        _ = try await writer.patchList(
            "todo", [.insertSection(id: "s", items: [NewItem(id: "a", model: Self.todo("Milk", done: false))])])
        let snapshot = try await writer.list("todo", as: Todo.self)
        #expect(snapshot.items == [DecodedItem(id: "a", model: Todo(title: "Milk", done: false))])

        var seen: [[Todo]] = []
        var caught: ListClientError?
        do {
            for try await update in server.client().updates(list: "todo", as: Todo.self, options: EndToEndTests.options)
            {
                let todos = update.snapshot?.items.map(\.model) ?? []
                seen.append(todos)
                if todos.count == 1 && !todos[0].done {
                    _ = try? await writer.patchList(
                        "todo", [.updateItem(id: "a", model: Self.todo("Milk", done: true))])
                } else if todos.first?.done == true && todos.count == 1 {
                    _ = try? await writer.patchList("todo", [.insertItem(section: "s", id: "bad", model: ["title": 7])])
                }
            }
        } catch {
            caught = error
        }
        #expect(seen.first == [Todo(title: "Milk", done: false)])
        #expect(seen.last == [Todo(title: "Milk", done: true)])
        #expect(caught?.kind == .decoding)
        #expect(caught?.modelFailure?.item == "bad" && caught?.modelFailure?.path == "title")
    }

    /// A view decodes as a list does: only the open todos, in the view's order.
    @Test func aDecodedViewOfARealServer() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let writer = server.client()
        _ = try await writer.createList(id: "todo")
        _ = try await writer.patchList(
            "todo",
            [
                .insertSection(
                    id: "s",
                    items: [
                        NewItem(id: "a", model: Self.todo("B", done: false)),
                        NewItem(id: "b", model: Self.todo("A", done: true)),
                        NewItem(id: "c", model: Self.todo("C", done: false)),
                    ])
            ])
        let open = try ViewSpec(parsing: "where=done:false&order=-title")
        var titles: [[String]] = []
        for try await update in server.client().updates(
            list: "todo", view: open, as: Todo.self, options: EndToEndTests.options)
        {
            titles.append(update.snapshot?.items.map(\.model.title) ?? [])
            if titles.count == 1 {
                _ = try await writer.patchList("todo", [.updateItem(id: "c", model: Self.todo("C", done: true))])
            } else {
                break
            }
        }
        #expect(titles == [["C", "B"], ["B"]])
    }
}
