import JSON
import ListStore
import ListWire
import ListdTestSupport
import Testing

@testable import ListAPI

/// The server reads what ListWire's operations write: a client's batch becomes
/// the store operations it names, and ids and models are held to the store's rules.
@Suite struct OperationDecodingTests {
    let decoder = RequestDecoder()

    @Test func aClientBatchBecomesTheStoreOperationsItNames() throws {
        let batch: [ListWire.ListOperation] = [
            .insertSection(id: "s", model: ["t": "S"], items: [(id: "a", model: 1), (id: nil, model: [:])], at: 0),
            .insertItem(section: "s", id: nil, model: "x", at: nil),
            .updateSection(id: "s", model: [1, 2]),
            .moveSection(id: "s", to: 3),
            .updateItem(id: "a", model: .null),
            .moveItem(id: "a", section: "s", to: 0),
            .moveItem(id: "a", to: 2),
            .deleteItem(id: "a"),
            .deleteSection(id: "s"),
        ]
        let body = try JSONValue(parsing: JSONValue.object(["ops": .array(batch.map(\.json))]).serialized())
        let operations = try decoder.operations(body)
        func id(_ text: String) throws -> Identifier { try #require(Identifier(text)) }
        let expected: [ListStore.ListOperation] = [
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
        let deepBody = JSONValue.object(["ops": .array([ListWire.ListOperation.updateItem(id: "a", model: deep).json])])
        let modelError = #expect(throws: Problem.self) { try decoder.operations(deepBody) }
        #expect(modelError?.slug == "invalid-model")
        #expect(modelError?.detail.hasPrefix("op 0 (updateItem): \"model\" nests 70 levels deep") == true)

        let shape = try JSONValue(parsing: Array(#"{"ops":[{"op":"moveItem","id":"a","to":"x"}]}"#.utf8))
        let shapeError = #expect(throws: Problem.self) { try decoder.operations(shape) }
        #expect(shapeError?.slug == "invalid-request")
        #expect(shapeError?.detail == "op 0 (moveItem): \"to\" must be a whole number ≥ 0, not \"x\"")
    }
}
