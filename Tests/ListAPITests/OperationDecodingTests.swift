import JSON
import ListModel
import ListStore
import ListWire
import ListdTestSupport
import Testing

@testable import ListAPI

/// The server reads a client's batch as the operations it names, and holds ids
/// and models to the store's rules.
@Suite struct OperationDecodingTests {
    let decoder = RequestDecoder()

    @Test func aClientBatchBecomesTheOperationsItNames() throws {
        let text = """
            {"ops":[
            {"op":"insertSection","section":{"id":"s","model":{"t":"S"},"items":[{"id":"a","model":1},{"model":{}}]},"at":0},
            {"op":"insertItem","section":"s","item":{"model":"x"}},
            {"op":"updateSection","id":"s","model":[1,2]},
            {"op":"moveSection","id":"s","to":3},
            {"op":"updateItem","id":"a","model":null},
            {"op":"moveItem","id":"a","section":"s","to":0},
            {"op":"moveItem","id":"a","to":2},
            {"op":"deleteItem","id":"a"},
            {"op":"deleteSection","id":"s"}]}
            """
        let body = try JSONValue(parsing: Array(text.utf8))
        let operations = try decoder.operations(body)
        func id(_ text: String) throws -> Identifier { try #require(Identifier(text)) }
        let expected: [ListOperation] = [
            .insertSection(
                NewSection(
                    id: try id("s"), model: Model(["t": "S"]),
                    items: [NewItem(id: try id("a"), model: Model(1)), NewItem(id: nil, model: .emptyObject)]),
                at: 0),
            .insertItem(section: try id("s"), item: NewItem(id: nil, model: Model("x")), at: nil),
            .updateSection(id: try id("s"), model: Model([1, 2])),
            .moveSection(id: try id("s"), to: 3),
            .updateItem(id: try id("a"), model: Model(.null)),
            .moveItem(id: try id("a"), section: try id("s"), to: 0),
            .moveItem(id: try id("a"), section: nil, to: 2),
            .deleteItem(id: try id("a")),
            .deleteSection(id: try id("s")),
        ]
        #expect(operations == expected)
    }

    @Test func idsAndModelsAreHeldToTheStoresRules() throws {
        let badID = try JSONValue(
            parsing: Array(#"{"ops":[{"op":"insertItem","section":"s","item":{"id":"a b"}}]}"#.utf8))
        let idError = #expect(throws: Problem.self) { try decoder.operations(badID) }
        #expect(idError?.slug == "invalid-id")
        #expect(
            idError?.detail.hasPrefix("op 0 (insertItem).item: \"id\" \"a b\" is invalid") == true,
            "\(idError?.detail ?? "")")

        var deep: JSONValue = 1
        for _ in 0..<70 { deep = .array([deep]) }
        let deepBody = JSONValue.object([
            "ops": .array([.object(["op": "updateItem", "id": "a", "model": deep])])
        ])
        let modelError = #expect(throws: Problem.self) { try decoder.operations(deepBody) }
        #expect(modelError?.slug == "invalid-model")
        #expect(modelError?.detail.hasPrefix("op 0 (updateItem): \"model\" nests 70 levels deep") == true)

        let shape = try JSONValue(parsing: Array(#"{"ops":[{"op":"moveItem","id":"a","to":"x"}]}"#.utf8))
        let shapeError = #expect(throws: Problem.self) { try decoder.operations(shape) }
        #expect(shapeError?.slug == "invalid-request")
        #expect(shapeError?.detail == "op 0 (moveItem): \"to\" must be a whole number ≥ 0, not \"x\"")
    }
}
