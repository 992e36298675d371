import JSON
import ListModel
import Testing

@Suite struct IdentifierTests {
    @Test(arguments: ["a", "A-z_0.9~", String(repeating: "x", count: 128), "...", ".a", "a.", "..a"])
    func validIdsAreAccepted(_ text: String) {
        #expect(Identifier(text)?.rawValue == text)
        #expect(Identifier.validationFailure(text) == nil)
    }

    @Test(arguments: ["", "a b", "ä", "a/b", String(repeating: "x", count: 129), ".", ".."])
    func invalidIdsAreRefusedWithAReason(_ text: String) {
        #expect(Identifier(text) == nil)
        #expect(Identifier.validationFailure(text) != nil)
    }

    @Test func generatedIdsAreValidAndSortByTime() {
        var generator = SystemRandomNumberGenerator()
        let earlier = Identifier.generate(milliseconds: 1_000, using: &generator)
        let later = Identifier.generate(milliseconds: 2_000, using: &generator)
        #expect(earlier < later)
        #expect(Identifier(earlier.rawValue) == earlier)
        #expect(earlier.rawValue.count == 26)
    }

    @Test func aLiteralIsAnId() {
        let id: Identifier = "apple"
        #expect(id.rawValue == "apple")
    }
}

@Suite struct ModelTests {
    @Test func modelsAreKeptInCanonicalText() {
        let model = Model(["b": 1, "a": [true, .null, "x"]])
        #expect(model.canonicalText == #"{"a":[true,null,"x"],"b":1}"#)
        #expect(model == Model(["a": [true, .null, "x"], "b": 1]))
    }

    @Test func literalsAreModels() {
        let number: Model = 3
        let text: Model = "three"
        let object: Model = ["qty": 3]
        #expect(number.canonicalText == "3")
        #expect(text.canonicalText == #""three""#)
        #expect(object.canonicalText == #"{"qty":3}"#)
        #expect(Model.emptyObject.canonicalText == "{}")
    }

    @Test func aModelReadsBackAsItsValue() throws {
        let value: JSONValue = ["qty": 2, "tags": ["red"]]
        #expect(try Model(value).jsonValue() == value)
        #expect(Model(value).byteCount == Model(value).canonicalText.utf8.count)
    }
}

@Suite struct ListOperationTests {
    @Test func everyOperationHasItsAPIName() {
        let operations: [ListOperation] = [
            .insertSection(NewSection(id: "s"), at: nil), .updateSection(id: "s", model: 1),
            .moveSection(id: "s", to: 0), .deleteSection(id: "s"),
            .insertItem(section: "s", item: NewItem(), at: 0), .updateItem(id: "i", model: 2),
            .moveItem(id: "i", section: nil, to: 1), .deleteItem(id: "i"),
        ]
        #expect(
            operations.map(\.name) == [
                "insertSection", "updateSection", "moveSection", "deleteSection",
                "insertItem", "updateItem", "moveItem", "deleteItem",
            ])
    }

    @Test func aBatchWrittenByHandReadsAsTheContractSpellsIt() {
        let batch: [ListOperation] = [
            .insertSection(id: "fruit", model: ["title": "Fruit"]),
            .insertItem(section: "fruit", id: "apple", model: ["qty": 3, "done": false]),
            .moveItem(id: "apple", to: 0),
        ]
        #expect(
            batch == [
                .insertSection(NewSection(id: "fruit", model: ["title": "Fruit"], items: []), at: nil),
                .insertItem(section: "fruit", item: NewItem(id: "apple", model: ["done": false, "qty": 3]), at: nil),
                .moveItem(id: "apple", section: nil, to: 0),
            ])
    }
}
