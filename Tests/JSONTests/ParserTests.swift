import Testing

@testable import JSON

/// One rejected document and where and why it must fail.
struct Rejection: CustomTestStringConvertible, Sendable {
    var bytes: [UInt8]
    var kind: JSONError.Kind
    var offset: Int
    var note: String

    init(_ text: String, _ kind: JSONError.Kind, at offset: Int, _ note: String = "") {
        self.bytes = Array(text.utf8)
        self.kind = kind
        self.offset = offset
        self.note = note
    }

    init(bytes: [UInt8], _ kind: JSONError.Kind, at offset: Int, _ note: String) {
        self.bytes = bytes
        self.kind = kind
        self.offset = offset
        self.note = note
    }

    var testDescription: String { note.isEmpty ? String(decoding: bytes, as: UTF8.self) : note }
}

@Suite struct ParserTests {
    static let accepted: [String] = [
        "null", "true", "false", "0", "-0", "1", "-1", "1.5", "-1.5e-3", "1E5", "1e+5", "0e0", "0.0",
        "123456789012345678901234567890", "\"\"", "\"a\"", "[]", "{}", " [ ] ", "\t\r\n{ }\n",
        "[1,2,3]", "{\"a\":1,\"b\":[true,false,null]}", "[[[[]]]]", "{\"a\":{\"b\":{\"c\":{}}}}",
        "\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"", "\"\\u0000\"", "\"\\uD83D\\uDE00\"", "\"\\ud83d\\ude00\"",
        "\"é 😀 \u{7F} \u{2028}\"", "{\"é\":1,\"e\u{301}\":2}", "1e-400", "5e-324", "1.7976931348623157e308",
        "{\"\":0}", "[\"\\u00e9\"]",
    ]

    @Test(arguments: accepted)
    func accepts(_ text: String) throws {
        let result = parseBothWays(text)
        _ = try result.get()
    }

    static let rejected: [Rejection] = [
        Rejection("", .unexpectedEnd(.value), at: 0, "empty document"),
        Rejection("   ", .unexpectedEnd(.value), at: 3, "only white space"),
        Rejection("[1,]", .trailingComma, at: 3),
        Rejection("{\"a\":1,}", .trailingComma, at: 7),
        Rejection("[1 2]", .unexpectedCharacter(.commaOrEndOfArray), at: 3),
        Rejection("{\"a\" 1}", .unexpectedCharacter(.colon), at: 5),
        Rejection("{\"a\":1 \"b\":2}", .unexpectedCharacter(.commaOrEndOfObject), at: 7),
        Rejection("{1:2}", .unexpectedCharacter(.keyOrEndOfObject), at: 1),
        Rejection("{\"a\":1,2}", .unexpectedCharacter(.key), at: 7),
        Rejection("[,1]", .unexpectedCharacter(.valueOrEndOfArray), at: 1),
        Rejection("[", .unexpectedEnd(.valueOrEndOfArray), at: 1),
        Rejection("[1", .unexpectedEnd(.commaOrEndOfArray), at: 2),
        Rejection("{", .unexpectedEnd(.keyOrEndOfObject), at: 1),
        Rejection("{\"a\"", .unexpectedEnd(.colon), at: 4),
        Rejection("{\"a\":", .unexpectedEnd(.value), at: 5),
        Rejection("{\"a\":1", .unexpectedEnd(.commaOrEndOfObject), at: 6),
        Rejection("1 2", .trailingCharacters, at: 2),
        Rejection("[] x", .trailingCharacters, at: 3),
        Rejection("truex", .trailingCharacters, at: 4),
        Rejection("{}}", .trailingCharacters, at: 2),
        Rejection("01", .invalidNumber(.leadingZero), at: 0),
        Rejection("-01", .invalidNumber(.leadingZero), at: 1),
        Rejection("00.5", .invalidNumber(.leadingZero), at: 0),
        Rejection("-", .invalidNumber(.missingIntegerDigits), at: 1),
        Rejection("-a", .invalidNumber(.missingIntegerDigits), at: 1),
        Rejection("1.", .invalidNumber(.missingFractionDigits), at: 2),
        Rejection("1.e5", .invalidNumber(.missingFractionDigits), at: 2),
        Rejection("1e", .invalidNumber(.missingExponentDigits), at: 2),
        Rejection("1e+", .invalidNumber(.missingExponentDigits), at: 3),
        Rejection("[1E-]", .invalidNumber(.missingExponentDigits), at: 4),
        Rejection(".5", .unexpectedCharacter(.value), at: 0),
        Rejection("+1", .unexpectedCharacter(.value), at: 0),
        Rejection("NaN", .unexpectedCharacter(.value), at: 0),
        Rejection("Infinity", .unexpectedCharacter(.value), at: 0),
        Rejection("-Infinity", .invalidNumber(.missingIntegerDigits), at: 1),
        Rejection("[0x10]", .unexpectedCharacter(.commaOrEndOfArray), at: 2),
        Rejection("1e400", .numberOutOfRange, at: 0),
        Rejection("-1e400", .numberOutOfRange, at: 0),
        Rejection("[1, 1.8e308]", .numberOutOfRange, at: 4),
        Rejection("1" + String(repeating: "0", count: 309), .numberOutOfRange, at: 0, "integer 1e309"),
        Rejection("-2" + String(repeating: "0", count: 308), .numberOutOfRange, at: 0, "integer -2e308"),
        Rejection("tru", .invalidLiteral("true"), at: 0),
        Rejection("nul", .invalidLiteral("null"), at: 0),
        Rejection("[falsy]", .invalidLiteral("false"), at: 1),
        Rejection("True", .unexpectedCharacter(.value), at: 0),
        Rejection("\"abc", .unterminatedString, at: 0),
        Rejection("[\"abc\\\"]", .unterminatedString, at: 1),
        Rejection("\"a\u{01}b\"", .controlCharacterInString, at: 2),
        Rejection("\"\t\"", .controlCharacterInString, at: 1, "raw tab in a string"),
        Rejection("\"\n\"", .controlCharacterInString, at: 1, "raw newline in a string"),
        Rejection("\"\\x\"", .invalidEscape, at: 1),
        Rejection("\"\\U0041\"", .invalidEscape, at: 1),
        Rejection("\"\\u12G4\"", .invalidEscape, at: 1),
        Rejection("\"\\u12\"", .invalidEscape, at: 1),
        Rejection("\"\\", .invalidEscape, at: 1),
        Rejection("\"\\ud800\"", .loneSurrogate, at: 1),
        Rejection("\"\\udc00\"", .loneSurrogate, at: 1),
        Rejection("\"\\ud800\\u0041\"", .loneSurrogate, at: 1),
        Rejection("\"\\ud800\\ud800\"", .loneSurrogate, at: 1),
        Rejection("\"x\\ude00\\ud83d\"", .loneSurrogate, at: 2, "surrogates in the wrong order"),
        Rejection(bytes: [0x22, 0xC0, 0x80, 0x22], .invalidUTF8, at: 1, "overlong NUL"),
        Rejection(bytes: [0x22, 0xC1, 0xBF, 0x22], .invalidUTF8, at: 1, "overlong 2-byte"),
        Rejection(bytes: [0x22, 0xE0, 0x80, 0xAF, 0x22], .invalidUTF8, at: 1, "overlong 3-byte"),
        Rejection(bytes: [0x22, 0xF0, 0x80, 0x80, 0xAF, 0x22], .invalidUTF8, at: 1, "overlong 4-byte"),
        Rejection(bytes: [0x22, 0xED, 0xA0, 0x80, 0x22], .invalidUTF8, at: 1, "UTF-8 encoded surrogate"),
        Rejection(bytes: [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], .invalidUTF8, at: 1, "above U+10FFFF"),
        Rejection(bytes: [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22], .invalidUTF8, at: 1, "lead byte F5"),
        Rejection(bytes: [0x22, 0x61, 0x80, 0x22], .invalidUTF8, at: 2, "lone continuation byte"),
        Rejection(bytes: [0x22, 0xE2, 0x82, 0x22], .invalidUTF8, at: 1, "truncated sequence"),
        Rejection(bytes: [0x22, 0xFF, 0x22], .invalidUTF8, at: 1, "byte FF"),
        Rejection(bytes: [0x22, 0xE2, 0x82], .invalidUTF8, at: 1, "truncated at the end of input"),
        Rejection(bytes: [0xEF, 0xBB, 0xBF, 0x31], .unexpectedCharacter(.value), at: 0, "byte order mark"),
        Rejection(bytes: [0x5B, 0xC3, 0xA9, 0x5D], .unexpectedCharacter(.valueOrEndOfArray), at: 1, "bare é"),
        Rejection("{\"a\":1,\"a\":2}", .duplicateKey("a"), at: 7),
        Rejection("{\"b\":1,\"a\":2,\"b\":3,\"a\":4}", .duplicateKey("b"), at: 13, "earliest repeat wins"),
        Rejection("{\"a\":1,\"b\":2,\"a\":3,\"b\":4}", .duplicateKey("a"), at: 13, "earliest repeat wins, sorted"),
        Rejection("{\"a\":1,\"\\u0061\":2}", .duplicateKey("a"), at: 7, "duplicate through an escape"),
        Rejection("{\"\\\"\":1,\"\\u0022\":2}", .duplicateKey("\""), at: 8, "duplicate quote key"),
        Rejection("[{\"x\":1,\"x\":2},", .duplicateKey("x"), at: 8, "inner object closes first"),
        Rejection("{\"a\":1,\"a\":2,]", .unexpectedCharacter(.key), at: 13, "duplicates found when the object ends"),
    ]

    @Test(arguments: rejected)
    func rejects(_ rejection: Rejection) throws {
        let result = parseBothWays(rejection.bytes)
        guard case .failure(let error) = result else {
            Issue.record("accepted \(rejection.testDescription)")
            return
        }
        #expect(error.kind == rejection.kind)
        #expect(error.offset == rejection.offset)
    }

    @Test func linesAndColumnsCountNewlinesAndScalars() throws {
        let text = "{\n  \"a\": 1\n  \"b\": 2\n}"
        let error = try #require(parseBothWays(text).failure)
        #expect(error.kind == .unexpectedCharacter(.commaOrEndOfObject))
        #expect(error.offset == 13)
        #expect(error.line == 3)
        #expect(error.column == 3)
        #expect(error.description == "invalid JSON at line 3, column 3: expected ',' or '}' after an object member")

        let wide = try #require(parseBothWays("[\"é😀\" x]").failure)
        #expect(wide.offset == 10)
        #expect(wide.column == 7)
    }

    @Test func descriptionsNameTheProblemAndPlace() throws {
        let duplicate = try #require(parseBothWays("{\"qty\":1,\"name\":\"\",\"qty\":2}").failure)
        #expect(duplicate.description == "duplicate key \"qty\" in object at line 1, column 20")

        let utf8 = try #require(parseBothWays([0x5B, 0x22, 0xC0, 0x80, 0x22, 0x5D]).failure)
        #expect(utf8.description == "invalid UTF-8 at byte offset 2")

        let deep = try #require(parseBothWays(String(repeating: "[", count: 65)).failure)
        #expect(deep.description == "nesting deeper than 64 levels at line 1, column 65")

        let end = try #require(parseBothWays("[1,").failure)
        #expect(end.description == "invalid JSON at line 1, column 4: unexpected end of input, expected a value")

        let escapedKey = try #require(parseBothWays("{\"a\\nb\":1,\"a\\nb\":2}").failure)
        #expect(escapedKey.description == "duplicate key \"a\\nb\" in object at line 1, column 11")

        let large = try #require(parseBothWays("[1,2]", limits: JSONLimits(maxBytes: 4)).failure)
        #expect(large.description == "JSON text larger than the limit of 4 bytes")
    }

    @Test func parsesIntoValues() throws {
        let value = try JSONValue(parsing: "{\"b\":[1,\"x\",null],\"a\":{\"c\":true},\"é\":-2.50}")
        #expect(value == ["a": ["c": true], "b": [1, "x", .null], "é": -2.5])
        #expect(value["b"]?[1]?.stringValue == "x")
        #expect(value["a"]?["c"]?.boolValue == true)
        #expect(value["é"]?.doubleValue == -2.5)
        #expect(value.objectValue?.keys == ["a", "b", "é"])
    }

    @Test func parsesEveryEntryPoint() throws {
        let text = "{\"a\":[1,2]}"
        let bytes = Array(text.utf8)
        let expected: JSONValue = ["a": [1, 2]]
        #expect(try JSONValue(parsing: text) == expected)
        #expect(try JSONValue(parsing: bytes) == expected)
        #expect(try JSONValue(parsing: bytes[...]) == expected)
        #expect(try JSONValue(parsing: text.utf8) == expected)
        #expect(try JSONValue(parsing: Set([UInt8(ascii: "1")])) == 1, "non-contiguous collection")
        let fromRaw = bytes.withUnsafeBytes { raw in
            (
                Result { () throws(JSONError) in try JSONValue(parsing: raw) },
                Result { () throws(JSONError) in try CanonicalJSON.canonicalBytes(raw) }
            )
        }
        #expect(try fromRaw.0.get() == expected)
        #expect(try fromRaw.1.get() == bytes)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
