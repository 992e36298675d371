import JSON
import ListModel
import ListWire
import ListdTestSupport
import Testing

/// `PATCH /lists/{list}` operations: what a client writes with `json` the
/// server reads back with `init(json:index:)`, and bad shapes are refused
/// with a detail that names the op, the field and what was expected.
@Suite struct OperationWireTests {
    static func randomOperation(using generator: inout SeededGenerator) -> ListOperation {
        func id() -> Identifier { Identifier("id-\(Int.random(in: 0..<50, using: &generator))")! }
        func maybeID() -> Identifier? { Bool.random(using: &generator) ? id() : nil }
        func model() -> Model { Model(WireRoundTripTests.randomValue(using: &generator, depth: 0)) }
        func position() -> Int { Int.random(in: 0..<1000, using: &generator) }
        func maybePosition() -> Int? { Bool.random(using: &generator) ? position() : nil }
        switch Int.random(in: 0..<8, using: &generator) {
        case 0:
            let items = (0..<Int.random(in: 0...3, using: &generator)).map { _ in NewItem(id: maybeID(), model: model())
            }
            return .insertSection(NewSection(id: maybeID(), model: model(), items: items), at: maybePosition())
        case 1: return .updateSection(id: id(), model: model())
        case 2: return .moveSection(id: id(), to: position())
        case 3: return .deleteSection(id: id())
        case 4: return .insertItem(section: id(), item: NewItem(id: maybeID(), model: model()), at: maybePosition())
        case 5: return .updateItem(id: id(), model: model())
        case 6: return .moveItem(id: id(), section: maybeID(), to: position())
        default: return .deleteItem(id: id())
        }
    }

    @Test func operationsRoundTrip() throws {
        var generator = SeededGenerator(seed: SeededGenerator.seed(for: "operationsRoundTrip"))
        for _ in 0..<SeededGenerator.cases(normal: 500, long: 200_000) {
            let batch = (0..<Int.random(in: 0...5, using: &generator)).map { _ in
                Self.randomOperation(using: &generator)
            }
            let body = JSONValue.object(["ops": .array(batch.map(\.json))])
            // Through bytes, as on the wire.
            let parsed = try JSONValue(parsing: body.serialized(), limits: JSONLimits(maxDepth: 256, maxBytes: 1 << 20))
            let decoded = try ListOperation.batch(parsed)
            #expect(decoded == batch)
            #expect(decoded.map(\.name) == batch.map(\.name))
        }
    }

    @Test func leftOutModelsAreEmptyObjectsAndNullPositionsAreNone() throws {
        let value = try JSONValue(parsing: Array(#"{"op":"insertItem","section":"s","item":{},"at":null}"#.utf8))
        #expect(
            try ListOperation(json: value, index: 0)
                == .insertItem(section: "s", item: NewItem(id: nil, model: [:]), at: nil))
    }

    @Test(arguments: [
        (#"[]"#, "op 4 must be a JSON object, not an array"),
        (#"{"op":1}"#, "op 4: \"op\" must be a string"),
        (#"{}"#, "op 4 needs \"op\": one of insertSection"),
        (#"{"op":"shuffle"}"#, "op 4 (shuffle): unknown op \"shuffle\""),
        (#"{"op":"deleteItem","id":"a","at":1}"#, "op 4 (deleteItem) has an unknown field \"at\""),
        (#"{"op":"moveItem","id":"a"}"#, "op 4 (moveItem) needs \"to\" (a position, a whole number ≥ 0)"),
        (#"{"op":"moveItem","id":"a","to":-1}"#, "op 4 (moveItem): \"to\" must be a whole number ≥ 0, not -1"),
        (#"{"op":"moveSection","id":7,"to":1}"#, "op 4 (moveSection): \"id\" must be a string, not a number"),
        (#"{"op":"updateItem","id":"a"}"#, "op 4 (updateItem) needs \"model\" (any JSON value)"),
        (#"{"op":"insertSection"}"#, "op 4 (insertSection) needs \"section\""),
        (
            #"{"op":"insertSection","section":{"items":[{"x":1}]}}"#,
            "op 4 (insertSection).section.items[0] has an unknown field \"x\""
        ),
        (#"{"op":"insertItem","section":"s"}"#, "op 4 (insertItem) needs \"item\""),
    ])
    func badOperationsAreRefusedNamingTheField(text: String, detail: String) throws {
        let value = try JSONValue(parsing: Array(text.utf8))
        let error = #expect(throws: WireError.self) { try ListOperation(json: value, index: 4) }
        #expect(error?.detail.hasPrefix(detail) == true, "\(error?.detail ?? "no error")")
    }

    @Test(arguments: [
        (#"{"op":"deleteItem","id":"a b"}"#, "op 4 (deleteItem): \"id\" \"a b\" is invalid"),
        (#"{"op":"insertItem","section":"","item":{}}"#, "op 4 (insertItem): \"section\" \"\" is invalid"),
        (#"{"op":"insertSection","section":{"items":[{"id":"ä"}]}}"#, "op 4 (insertSection).section.items[0]: \"id\""),
        (#"{"op":"moveItem","id":"a","section":"x/y","to":0}"#, "op 4 (moveItem): \"section\" \"x/y\" is invalid"),
    ])
    func invalidIdsAreRefusedAsIdsNamingTheField(text: String, detail: String) throws {
        let value = try JSONValue(parsing: Array(text.utf8))
        let error = #expect(throws: WireError.self) { try ListOperation(json: value, index: 4) }
        #expect(error?.kind == .invalidID)
        #expect(error?.detail.hasPrefix(detail) == true, "\(error?.detail ?? "no error")")
    }

    @Test func aModelNestedDeeperThanTheLimitIsRefusedAsAModel() throws {
        let value = try JSONValue(parsing: Array(#"{"op":"updateItem","id":"a","model":[[[1]]]}"#.utf8))
        #expect(
            try ListOperation(json: value, index: 0, limits: ModelLimits(maxDepth: 3))
                == .updateItem(id: "a", model: [[[1]]]))
        let error = #expect(throws: WireError.self) {
            try ListOperation(json: value, index: 0, limits: ModelLimits(maxDepth: 2))
        }
        #expect(error?.kind == .invalidModel)
        #expect(error?.detail == "op 0 (updateItem): \"model\" nests 3 levels deep; at most 2 are allowed")
    }

    @Test func aBatchNeedsOps() throws {
        let error = #expect(throws: WireError.self) {
            try ListOperation.batch(try JSONValue(parsing: Array("{}".utf8)))
        }
        #expect(error?.detail == "the body needs \"ops\": an array of operations")
        #expect(throws: WireError.self) {
            try ListOperation.batch(try JSONValue(parsing: Array(#"{"ops":[],"x":1}"#.utf8)))
        }
    }
}
