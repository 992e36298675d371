extension JSONValue {
    /// Parses a JSON text strictly (RFC 8259), within `limits`.
    ///
    /// Rejects: invalid UTF-8 (overlongs, encoded surrogates, above U+10FFFF), `\u`
    /// escapes of unpaired surrogates, raw control characters in strings, leading
    /// zeros, trailing commas, anything after the value, `NaN` and `Infinity`,
    /// numbers that overflow a Double, duplicate keys in one object (reported at
    /// the second occurrence, once the object has been read to its end), nesting
    /// deeper than `limits.maxDepth` and texts longer than `limits.maxBytes`.
    ///
    /// - Throws: ``JSONError`` naming the problem and its position.
    /// - Complexity: O(n log m) for n bytes and objects of at most m members.
    public init(parsing bytes: some Collection<UInt8>, limits: JSONLimits = JSONLimits()) throws(JSONError) {
        self = try withContiguousBytes(bytes) { (buffer) throws(JSONError) -> JSONValue in
            try Self.parse(buffer, limits: limits)
        }
    }

    /// Parses a JSON text strictly; the array fast path of
    /// ``init(parsing:limits:)-(Collection<UInt8>,_)``.
    public init(parsing bytes: [UInt8], limits: JSONLimits = JSONLimits()) throws(JSONError) {
        let result = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(JSONError) -> JSONValue in try Self.parse(buffer, limits: limits) }
        }
        self = try result.get()
    }

    /// Parses a JSON text strictly; see ``init(parsing:limits:)-(Collection<UInt8>,_)``.
    public init(parsing text: String, limits: JSONLimits = JSONLimits()) throws(JSONError) {
        var text = text
        let result = text.withUTF8 { buffer in
            Result { () throws(JSONError) -> JSONValue in try Self.parse(buffer, limits: limits) }
        }
        self = try result.get()
    }

    /// Parses JSON text in raw memory strictly; see ``init(parsing:limits:)-(Collection<UInt8>,_)``.
    public init(parsing bytes: UnsafeRawBufferPointer, limits: JSONLimits = JSONLimits()) throws(JSONError) {
        let result = bytes.withMemoryRebound(to: UInt8.self) { buffer in
            Result { () throws(JSONError) -> JSONValue in try Self.parse(buffer, limits: limits) }
        }
        self = try result.get()
    }

    static func parse(_ buffer: UnsafeBufferPointer<UInt8>, limits: JSONLimits) throws(JSONError) -> JSONValue {
        var parser = TreeParser(Scanner(buffer, limits: limits))
        return try parser.run()
    }
}

/// Builds a ``JSONValue`` tree with the same grammar, checks and error positions
/// as the streaming ``Canonicalizer``.
struct TreeParser {
    var scanner: Scanner
    /// Reused for decoded strings and number text.
    var scratch: [UInt8] = []

    init(_ scanner: Scanner) {
        self.scanner = scanner
    }

    mutating func run() throws(JSONError) -> JSONValue {
        try scanner.checkSize()
        scanner.skipWhitespace()
        let value = try value(expecting: .value)
        try scanner.finishDocument()
        return value
    }

    mutating func string() throws(JSONError) -> String {
        scratch.removeAll(keepingCapacity: true)
        _ = try scanner.scanString(into: &scratch, canonical: false)
        return String(decoding: scratch, as: UTF8.self)
    }

    mutating func value(expecting expectation: JSONError.Expectation) throws(JSONError) -> JSONValue {
        guard let byte = scanner.current else { throw scanner.unexpected(expectation) }
        switch byte {
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "{"):
            return try object()
        case UInt8(ascii: "["):
            return try array()
        case UInt8(ascii: "t"):
            try scanner.scanLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try scanner.scanLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try scanner.scanLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            scratch.removeAll(keepingCapacity: true)
            try scanner.scanNumber(into: &scratch)
            return .number(JSONNumber(canonicalText: String(decoding: scratch, as: UTF8.self)))
        default:
            throw scanner.unexpected(expectation)
        }
    }

    mutating func array() throws(JSONError) -> JSONValue {
        try scanner.enterContainer()
        var elements: [JSONValue] = []
        scanner.skipWhitespace()
        if scanner.current == UInt8(ascii: "]") {
            scanner.position += 1
        } else {
            var expectation = JSONError.Expectation.valueOrEndOfArray
            while true {
                elements.append(try value(expecting: expectation))
                scanner.skipWhitespace()
                guard let byte = scanner.current else { throw scanner.unexpected(.commaOrEndOfArray) }
                if byte == UInt8(ascii: ",") {
                    scanner.position += 1
                    scanner.skipWhitespace()
                    if scanner.current == UInt8(ascii: "]") {
                        throw scanner.error(.trailingComma, at: scanner.position)
                    }
                    expectation = .value
                } else if byte == UInt8(ascii: "]") {
                    scanner.position += 1
                    break
                } else {
                    throw scanner.unexpected(.commaOrEndOfArray)
                }
            }
        }
        scanner.depth -= 1
        return .array(elements)
    }

    mutating func object() throws(JSONError) -> JSONValue {
        try scanner.enterContainer()
        var members: [(key: String, value: JSONValue)] = []
        var offsets: [Int] = []
        scanner.skipWhitespace()
        if scanner.current == UInt8(ascii: "}") {
            scanner.position += 1
        } else {
            var expectation = JSONError.Expectation.keyOrEndOfObject
            while true {
                guard scanner.current == UInt8(ascii: "\"") else { throw scanner.unexpected(expectation) }
                offsets.append(scanner.position)
                let key = try string()
                scanner.skipWhitespace()
                guard scanner.current == UInt8(ascii: ":") else { throw scanner.unexpected(.colon) }
                scanner.position += 1
                scanner.skipWhitespace()
                members.append((key, try value(expecting: .value)))
                scanner.skipWhitespace()
                guard let byte = scanner.current else { throw scanner.unexpected(.commaOrEndOfObject) }
                if byte == UInt8(ascii: ",") {
                    scanner.position += 1
                    scanner.skipWhitespace()
                    if scanner.current == UInt8(ascii: "}") {
                        throw scanner.error(.trailingComma, at: scanner.position)
                    }
                    expectation = .key
                } else if byte == UInt8(ascii: "}") {
                    scanner.position += 1
                    break
                } else {
                    throw scanner.unexpected(.commaOrEndOfObject)
                }
            }
        }
        scanner.depth -= 1
        var ordered = true
        for index in members.indices.dropFirst()
        where JSONEscaping.compare(members[index - 1].key, members[index].key) >= 0 {
            ordered = false
            break
        }
        if !ordered {
            var order = Array(members.indices)
            order.sort { JSONEscaping.compare(members[$0].key, members[$1].key) < 0 }
            if let repeated = earliestRepeatedKey(
                order, sameKey: { JSONEscaping.bytesEqual(members[$0].key, members[$1].key) },
                offset: { offsets[$0] })
            {
                throw scanner.error(.duplicateKey(members[repeated].key), at: offsets[repeated])
            }
            members = order.map { members[$0] }
        }
        return .object(JSONObject(sortedUniqueMembers: members))
    }
}
