import Testing

@testable import JSON

@Suite struct WriterTests {
    @Test func insertsCommasAndSplicesRawText() throws {
        let model = try CanonicalJSON.canonicalBytes(Array("{ \"qty\": 3, \"done\": false }".utf8))
        var writer = JSONWriter(capacity: 256)
        writer.beginObject()
        writer.key("id")
        writer.string("groceries")
        writer.key("version")
        writer.int(42)
        writer.key("sections")
        writer.beginArray()
        for index in 0..<2 {
            writer.beginObject()
            writer.key("id")
            writer.string("s\(index)")
            writer.key("model")
            writer.raw(model)
            writer.key("items")
            writer.beginArray()
            writer.endArray()
            writer.endObject()
        }
        writer.endArray()
        writer.key("reset")
        writer.bool(true)
        writer.key("epoch")
        writer.null()
        writer.endObject()
        #expect(
            writer.text
                == "{\"id\":\"groceries\",\"version\":42,\"sections\":["
                + "{\"id\":\"s0\",\"model\":{\"done\":false,\"qty\":3},\"items\":[]},"
                + "{\"id\":\"s1\",\"model\":{\"done\":false,\"qty\":3},\"items\":[]}],\"reset\":true,\"epoch\":null}")
        #expect(try JSONValue(parsing: writer.bytes)["sections"]?[1]?["model"]?["qty"] == 3)
    }

    /// Integers are written as Swift prints them: every digit count, both signs,
    /// each power of ten and its neighbours, the extremes, and random ones.
    @Test func integersAreWrittenAsSwiftPrintsThem() {
        var values: [Int64] = [0, 1, -1, 9, 10, -10, Int64.max, Int64.min, Int64.min + 1]
        var power: Int64 = 1
        for _ in 0..<18 {
            power *= 10
            values += [power - 1, power, power + 1, -(power - 1), -power, -(power + 1)]
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 { values.append(Int64.random(in: .min ... .max, using: &generator)) }
        var writer = JSONWriter()
        writer.array { array in
            for value in values { array.int64(value) }
        }
        #expect(writer.text == "[" + values.map(String.init).joined(separator: ",") + "]")
    }

    @Test func closureFormsNestAndEscapeKeysAndStrings() throws {
        var writer = JSONWriter()
        writer.array { array in
            array.int64(Int64.min)
            array.double(1.5)
            array.double(.infinity)
            array.number(JSONNumber(parsing: "1e2") ?? 0)
            array.value(["b": 1, "a": [true]])
            array.raw("\"spliced\"")
            array.object { object in
                object.key("quote\"and\\newline\n")
                object.string("tab\t\u{1}é/")
            }
            array.array { _ in }
        }
        #expect(
            writer.text
                == "[-9223372036854775808,1.5,null,100,{\"a\":[true],\"b\":1},\"spliced\","
                + "{\"quote\\\"and\\\\newline\\n\":\"tab\\t\\u0001é/\"},[]]")
        _ = try JSONValue(parsing: writer.bytes)
    }

    @Test func prettyPrintsWithTwoSpaces() {
        let compact = "{\"a\":[1,{\"b\":\"x, y: [z]\"},[],{}],\"c\":\"q\\\"{\",\"d\":{\"e\":null}}"
        let expected = """
            {
              "a": [
                1,
                {
                  "b": "x, y: [z]"
                },
                [],
                {}
              ],
              "c": "q\\"{",
              "d": {
                "e": null
              }
            }
            """
        #expect(String(decoding: prettyPrinted(Array(compact.utf8)), as: UTF8.self) == expected)
        #expect(prettyPrinted(Array("7".utf8)) == Array("7".utf8))
        #expect(prettyPrinted(Array("[ ]".utf8)) == Array("[]".utf8))
        // Not JSON: still returns.
        #expect(!prettyPrinted(Array("]]}{\"".utf8)).isEmpty)
    }

    @Test func serializesCanonically() {
        let value: JSONValue = ["z": "é\u{0}", "a": [1.0, -0.0, .null, false], "m": ["y": 1, "x": 2]]
        #expect(value.canonicalText == "{\"a\":[1,0,null,false],\"m\":{\"x\":2,\"y\":1},\"z\":\"é\\u0000\"}")
        #expect(value.serialized() == Array(value.canonicalText.utf8))
    }
}

@Suite struct ValueAccessTests {
    static let document: JSONValue = [
        "done": false,
        "qty": 3,
        "price": 2.5,
        "name": "leek",
        "tags": ["red", "green"],
        "nested": ["0": "key zero", "list": [["deep": true]]],
        "nothing": .null,
    ]

    @Test func pathsFollowKeysAndArrayIndexes() {
        let document = Self.document
        #expect(document.value(atPath: ["done"]) == false)
        #expect(document.value(atPath: ["tags", "0"]) == "red")
        #expect(document.value(atPath: ["tags", "1"]) == "green")
        #expect(document.value(atPath: ["tags", "2"]) == nil)
        #expect(document.value(atPath: ["tags", "01"]) == nil, "leading zeros are not indexes")
        #expect(document.value(atPath: ["tags", "-1"]) == nil)
        #expect(document.value(atPath: ["tags", "x"]) == nil)
        #expect(document.value(atPath: ["tags", "99999999999999999999999"]) == nil)
        #expect(document.value(atPath: ["nested", "0"]) == "key zero", "in an object a digit is a key")
        #expect(document.value(atPath: ["nested", "list", "0", "deep"]) == true)
        #expect(document.value(atPath: ["done", "x"]) == nil)
        #expect(document.value(atPath: ["nothing"]) == .null)
        #expect(document.value(atPath: ["missing"]) == nil)
        #expect(document.value(atPath: []) == document)
    }

    @Test func accessorsDecodeRequestBodiesByHand() {
        let document = Self.document
        #expect(document["qty"]?.intValue == 3)
        #expect(document["qty"]?.int64Value == 3)
        #expect(document["price"]?.intValue == nil)
        #expect(document["price"]?.doubleValue == 2.5)
        #expect(document["name"]?.stringValue == "leek")
        #expect(document["name"]?.intValue == nil)
        #expect(document["done"]?.boolValue == false)
        #expect(document["nothing"]?.isNull == true)
        #expect(document["tags"]?.arrayValue?.count == 2)
        #expect(document["tags"]?[5] == nil)
        #expect(document["tags"]?[-1] == nil)
        #expect(document[0] == nil)
        #expect(document["tags"]?["x"] == nil)
        #expect(document.objectValue?.keys == ["done", "name", "nested", "nothing", "price", "qty", "tags"])
    }

    @Test func objectsEditByKey() {
        var object: JSONObject = ["b": 1]
        object["a"] = "x"
        object["c"] = nil
        object["b"] = 2
        #expect(object.keys == ["a", "b"])
        object["a"] = nil
        #expect(JSONValue.object(object).canonicalText == "{\"b\":2}")
        let fromDictionary = JSONObject(["k": true, "j": false])
        #expect(fromDictionary.keys == ["j", "k"])
        let lastWins = JSONObject([("k", JSONValue(1)), ("k", JSONValue(2))])
        #expect(lastWins["k"] == 2)
        #expect(lastWins.count == 1)
    }
}
