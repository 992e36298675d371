/// Builds a ``JSONValue`` tree with the same grammar, checks and error positions
/// as the streaming ``Canonicalizer``.
struct TreeParser {
    var scanner: Scanner
    /// Reused for decoded strings and number text.
    var scratch: [UInt8] = []
    /// The input offsets of the keys of every open object, innermost last; only
    /// needed to report a duplicate key, so shared rather than one array per object.
    var keyOffsets: [Int] = []

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
        let base = keyOffsets.count
        defer { keyOffsets.removeSubrange(base...) }
        scanner.skipWhitespace()
        if scanner.current == UInt8(ascii: "}") {
            scanner.position += 1
        } else {
            var expectation = JSONError.Expectation.keyOrEndOfObject
            while true {
                guard scanner.current == UInt8(ascii: "\"") else { throw scanner.unexpected(expectation) }
                keyOffsets.append(scanner.position)
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
                offset: { keyOffsets[base + $0] })
            {
                throw scanner.error(.duplicateKey(members[repeated].key), at: keyOffsets[base + repeated])
            }
            members = order.map { members[$0] }
        }
        return .object(JSONObject(sortedUniqueMembers: members))
    }
}
