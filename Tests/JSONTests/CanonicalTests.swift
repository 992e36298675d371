import Testing

@testable import JSON

/// One input text and the canonical text it must become.
struct CanonicalCase: CustomTestStringConvertible, Sendable {
    var input: String
    var canonical: String

    init(_ input: String, _ canonical: String) {
        self.input = input
        self.canonical = canonical
    }

    var testDescription: String { "\(input) → \(canonical)" }
}

@Suite struct CanonicalTests {
    static let structure: [CanonicalCase] = [
        CanonicalCase("{\"b\":1,\"a\":2}", "{\"a\":2,\"b\":1}"),
        CanonicalCase(" { \"a\" : [ 1 , 2 ] } ", "{\"a\":[1,2]}"),
        CanonicalCase("[ ]", "[]"),
        CanonicalCase("{\n}", "{}"),
        CanonicalCase("\t\"x\"\r\n", "\"x\""),
        CanonicalCase("{\"é\":1,\"z\":2,\"A\":3,\"a\":4,\"\":5}", "{\"\":5,\"A\":3,\"a\":4,\"z\":2,\"é\":1}"),
        CanonicalCase("{\"aa\":1,\"a\":2,\"ab\":3}", "{\"a\":2,\"aa\":1,\"ab\":3}"),
        // Order by the bytes escapes stand for: `"` is 0x22, before `#` (0x23).
        CanonicalCase("{\"a#\":1,\"a\\\"\":2}", "{\"a\\\"\":2,\"a#\":1}"),
        CanonicalCase(
            "{\"\\u0001\":1,\"\\u0000\":2,\"\\n\":3,\" \":4}", "{\"\\u0000\":2,\"\\u0001\":1,\"\\n\":3,\" \":4}"),
        CanonicalCase("{\"a^\":3,\"a]\":2,\"a\\\\\":1}", "{\"a\\\\\":1,\"a]\":2,\"a^\":3}"),
        // U+E000 (EE 80 80) sorts before U+10000 (F0 90 80 80) by bytes but after it in UTF-16.
        CanonicalCase("{\"\u{10000}\":1,\"\u{E000}\":2}", "{\"\u{E000}\":2,\"\u{10000}\":1}"),
        CanonicalCase("{\"e\u{301}\":1,\"é\":2}", "{\"e\u{301}\":1,\"é\":2}"),
        CanonicalCase(
            "{\"b\":{\"d\":1,\"c\":2},\"a\":[{\"z\":1,\"y\":2},{}]}",
            "{\"a\":[{\"y\":2,\"z\":1},{}],\"b\":{\"c\":2,\"d\":1}}"),
        CanonicalCase(
            "{\"z\":{\"b\":[3,{\"y\":0,\"x\":1}],\"a\":\"s\"},\"m\":null,\"a\":true}",
            "{\"a\":true,\"m\":null,\"z\":{\"a\":\"s\",\"b\":[3,{\"x\":1,\"y\":0}]}}"),
    ]

    static let strings: [CanonicalCase] = [
        CanonicalCase("\"\\/\"", "\"/\""),
        CanonicalCase("\"/\"", "\"/\""),
        CanonicalCase("\"\\u0041\"", "\"A\""),
        CanonicalCase("\"\\u00e9\\u00E9\"", "\"éé\""),
        CanonicalCase("\"\\ud83d\\ude00\"", "\"😀\""),
        CanonicalCase("\"\\u001F\\u001f\"", "\"\\u001f\\u001f\""),
        CanonicalCase("\"\\u0000\"", "\"\\u0000\""),
        CanonicalCase("\"\\b\\f\\n\\r\\t\"", "\"\\b\\f\\n\\r\\t\""),
        CanonicalCase("\"\\u0008\\u000c\\u000A\\u000d\\u0009\"", "\"\\b\\f\\n\\r\\t\""),
        CanonicalCase("\"\\u000b\"", "\"\\u000b\""),
        CanonicalCase("\"\\u007f\"", "\"\u{7F}\""),
        CanonicalCase("\"\\u2028\\u2029\"", "\"\u{2028}\u{2029}\""),
        CanonicalCase("\"\\\"\\\\\"", "\"\\\"\\\\\""),
        CanonicalCase("\"\\u0022\\u005C\\u005c\"", "\"\\\"\\\\\\\\\""),
        CanonicalCase("\"\\uFEFF\"", "\"\u{FEFF}\""),
        CanonicalCase("\"\\uDBFF\\uDFFF\"", "\"\u{10FFFF}\""),
        CanonicalCase("\"é 😀 ✓\"", "\"é 😀 ✓\""),
    ]

    static let numbers: [CanonicalCase] = [
        CanonicalCase("0", "0"),
        CanonicalCase("-0", "0"),
        CanonicalCase("-0.0", "0"),
        CanonicalCase("-0e5", "0"),
        CanonicalCase("0E+0", "0"),
        CanonicalCase("1", "1"),
        CanonicalCase("-17", "-17"),
        CanonicalCase("1.0", "1"),
        CanonicalCase("1.000", "1"),
        CanonicalCase("1e2", "100"),
        CanonicalCase("1E2", "100"),
        CanonicalCase("1e0", "1"),
        CanonicalCase("100e-2", "1"),
        CanonicalCase("0.1e1", "1"),
        CanonicalCase("-1.5E+2", "-150"),
        CanonicalCase("1E-7", "1e-7"),
        CanonicalCase("-1e-7", "-1e-7"),
        CanonicalCase("0.0000001", "1e-7"),
        CanonicalCase("1e-6", "0.000001"),
        CanonicalCase("0.000001", "0.000001"),
        CanonicalCase("0.00001234", "0.00001234"),
        CanonicalCase("0.000001230", "0.00000123"),
        CanonicalCase("-0.000000123", "-1.23e-7"),
        CanonicalCase("100.250", "100.25"),
        CanonicalCase("-0.50", "-0.5"),
        CanonicalCase("123456789012345.0", "123456789012345"),
        CanonicalCase("1234567890123456.5", "1234567890123456.5"),
        CanonicalCase("123e-20", "1.23e-18"),
        CanonicalCase("123456789012345678901234567890", "123456789012345678901234567890"),
        CanonicalCase("-123456789012345678901234567890", "-123456789012345678901234567890"),
        CanonicalCase("9007199254740993", "9007199254740993"),
        CanonicalCase("9007199254740993.0", "9007199254740992"),
        CanonicalCase("12345678901234567890.0", "12345678901234567000"),
        CanonicalCase("0.1", "0.1"),
        CanonicalCase("1.0000000000000001", "1"),
        CanonicalCase("0.10000000000000001", "0.1"),
        CanonicalCase("123456789012345.6", "123456789012345.6"),
        CanonicalCase("2.50", "2.5"),
        CanonicalCase("4.35", "4.35"),
        CanonicalCase("1.5", "1.5"),
        CanonicalCase("0.30000000000000004", "0.30000000000000004"),
        CanonicalCase("0.1000000000000000055511151231257827", "0.1"),
        CanonicalCase("1.5e300", "1.5e+300"),
        CanonicalCase("1e20", "100000000000000000000"),
        CanonicalCase("1e21", "1e+21"),
        CanonicalCase("1.2345e21", "1.2345e+21"),
        CanonicalCase("123456789012345678901.5", "123456789012345680000"),
        CanonicalCase("1e-400", "0"),
        CanonicalCase("5e-324", "5e-324"),
        CanonicalCase("2.2250738585072014e-308", "2.2250738585072014e-308"),
        CanonicalCase("1.7976931348623157e308", "1.7976931348623157e+308"),
        CanonicalCase("1e+0000000000000000000000000000001", "10"),
        CanonicalCase("0.5e-0", "0.5"),
        CanonicalCase("[1.0,-0,1e2]", "[1,0,100]"),
    ]

    static let all = structure + strings + numbers

    @Test(arguments: all)
    func canonicalizes(_ testCase: CanonicalCase) throws {
        let value = try parseBothWays(testCase.input).get()
        #expect(value.canonicalText == testCase.canonical)
        #expect(try CanonicalJSON.canonicalize(testCase.input) == testCase.canonical)
        // Idempotent, and the canonical text parses back to the same value.
        #expect(try CanonicalJSON.canonicalize(testCase.canonical) == testCase.canonical)
        #expect(try JSONValue(parsing: testCase.canonical) == value)
    }

    @Test func equalityIsCanonicalTextEquality() throws {
        #expect(try JSONValue(parsing: "1.0") == JSONValue(parsing: "1"))
        #expect(try JSONValue(parsing: "{\"a\":1,\"b\":2}") == JSONValue(parsing: "{\"b\":2,\"a\":1}"))
        // Swift's String == would call these equal (canonical equivalence); JSON does not.
        let composed: JSONValue = .string("é")
        let decomposed: JSONValue = .string("e\u{301}")
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed]).count == 2)
        let object: JSONValue = ["é": 1, "e\u{301}": 2]
        #expect(object.objectValue?.count == 2)
        #expect(object["é"] == 1)
        #expect(object["e\u{301}"] == 2)
    }

    @Test func numbersKeepCanonicalText() throws {
        #expect(JSONNumber(Int64.min).canonicalText == "-9223372036854775808")
        #expect(JSONNumber(0).canonicalText == "0")
        #expect(JSONNumber(Double(-0.0))?.canonicalText == "0")
        #expect(JSONNumber(0.1 + 0.2)?.canonicalText == "0.30000000000000004")
        #expect(JSONNumber(Double(1e21))?.canonicalText == "1e+21")
        #expect(JSONNumber(Double(100))?.canonicalText == "100")
        #expect(JSONNumber(Double.nan) == nil)
        #expect(JSONNumber(Double.infinity) == nil)
        #expect(JSONNumber(parsing: "1.50")?.canonicalText == "1.5")
        #expect(JSONNumber(parsing: "01") == nil)
        #expect(JSONNumber(parsing: "1 ") == nil)
        #expect(JSONNumber(parsing: "") == nil)
        #expect(JSONNumber(parsing: "1e999") == nil)

        let big = try #require(JSONNumber(parsing: "123456789012345678901234567890"))
        #expect(big.int64 == nil)
        #expect(big.isInteger)
        #expect(big.double == 1.2345678901234568e29)
        #expect(JSONNumber(parsing: "1e2")?.int64 == 100)
        #expect(JSONNumber(parsing: "2.5")?.int64 == nil)
        #expect(JSONNumber(parsing: "-9223372036854775808")?.int64 == Int64.min)
        #expect(JSONNumber(parsing: "9223372036854775808")?.int64 == nil)
        #expect(JSONNumber(parsing: "2.5")?.double == 2.5)
    }
}

@Suite struct LimitTests {
    static func nestedArrays(_ depth: Int) -> String {
        String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    }

    static func nestedObjects(_ depth: Int) -> String {
        String(repeating: "{\"a\":", count: depth - 1) + "{}" + String(repeating: "}", count: depth - 1)
    }

    @Test func depthAtTheLimitIsAccepted() throws {
        _ = try parseBothWays(Self.nestedArrays(64)).get()
        _ = try parseBothWays(Self.nestedObjects(64)).get()
        _ = try parseBothWays("[" + Self.nestedObjects(63) + "]").get()
    }

    @Test func depthOneOverTheLimitIsRejected() throws {
        let arrays = try #require(parseBothWays(Self.nestedArrays(65)).failure)
        #expect(arrays.kind == .tooDeep(maxDepth: 64))
        #expect(arrays.offset == 64)
        let objects = try #require(parseBothWays(Self.nestedObjects(65)).failure)
        #expect(objects.kind == .tooDeep(maxDepth: 64))
        #expect(objects.offset == 64 * 5)
        #expect(objects.column == 64 * 5 + 1)
    }

    @Test func callersChooseOtherLimits() throws {
        let shallow = JSONLimits(maxDepth: 2)
        _ = try parseBothWays("[[1]]", limits: shallow).get()
        #expect(parseBothWays("[[[1]]]", limits: shallow).failure?.kind == .tooDeep(maxDepth: 2))
        #expect(parseBothWays("1", limits: JSONLimits(maxDepth: 0)).failure == nil)
        #expect(parseBothWays("[]", limits: JSONLimits(maxDepth: 0)).failure?.kind == .tooDeep(maxDepth: 0))

        // A request body: 8 MiB, a few levels deeper than a model.
        let body = JSONLimits(maxDepth: 68, maxBytes: 8 << 20)
        let items = (0..<20_000).map { "{\"id\":\"item-\($0)\",\"model\":{\"qty\":\($0),\"done\":false}}" }
        let text = "{\"sections\":[{\"id\":\"s\",\"items\":[" + items.joined(separator: ",") + "]}]}"
        #expect(text.utf8.count > 64 * 1024)
        #expect(parseBothWays(text).failure?.kind == .tooLarge(maxBytes: 65_536))
        let value = try parseBothWays(text, limits: body).get()
        #expect(value.value(atPath: ["sections", "0", "items", "19999", "model", "qty"]) == 19_999)
        _ = try parseBothWays(Self.nestedArrays(68), limits: body).get()
    }

    @Test func sizeAtTheLimitIsAcceptedAndOneOverRejected() throws {
        let limits = JSONLimits(maxBytes: 10)
        _ = try parseBothWays("[1,2,3,44]", limits: limits).get()
        let over = try #require(parseBothWays("[1,2,3,444]", limits: limits).failure)
        #expect(over.kind == .tooLarge(maxBytes: 10))
        #expect(over.offset == 10)

        let atDefault = "\"" + String(repeating: "a", count: 65_534) + "\""
        #expect(atDefault.utf8.count == 65_536)
        _ = try parseBothWays(atDefault).get()
        let overDefault = "\"" + String(repeating: "a", count: 65_535) + "\""
        #expect(parseBothWays(overDefault).failure?.kind == .tooLarge(maxBytes: 65_536))
        // White space counts: the limit is on the text, not the value.
        #expect(parseBothWays("  " + "[1,2,3,4]", limits: limits).failure?.kind == .tooLarge(maxBytes: 10))
    }
}
