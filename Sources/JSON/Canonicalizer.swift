/// The streaming canonicalizer: writes each value's canonical text as it is read,
/// and sorts an object's members in place when it closes.
struct Canonicalizer {
    /// Where one object member landed in `output`, and where its key was in the input.
    struct Member {
        /// The offset of the key's opening quote in the output.
        var start: Int
        /// The offset of the key's closing quote in the output.
        var keyEnd: Int
        /// The offset just past the member's value in the output.
        var end: Int
        /// The offset of the key's opening quote in the input, for errors.
        var source: Int
        /// Whether the key's canonical text holds a backslash escape.
        var escaped: Bool
    }

    var scanner: Scanner
    var output: [UInt8] = []
    /// The members of every open object, innermost last.
    var members: [Member] = []
    /// Scratch space for reordering an object's content.
    var reorder: [UInt8] = []

    init(_ scanner: Scanner) {
        self.scanner = scanner
    }

    mutating func run() throws(JSONError) -> [UInt8] {
        try scanner.checkSize()
        output.reserveCapacity(scanner.input.count)
        members.reserveCapacity(16)
        scanner.skipWhitespace()
        try value(expecting: .value)
        try scanner.finishDocument()
        return output
    }

    @inline(__always)
    mutating func append(_ literal: StaticString) {
        output.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    mutating func value(expecting expectation: JSONError.Expectation) throws(JSONError) {
        guard let byte = scanner.current else { throw scanner.unexpected(expectation) }
        switch byte {
        case UInt8(ascii: "\""):
            output.append(UInt8(ascii: "\""))
            _ = try scanner.scanString(into: &output, canonical: true)
            output.append(UInt8(ascii: "\""))
        case UInt8(ascii: "{"):
            try object()
        case UInt8(ascii: "["):
            try array()
        case UInt8(ascii: "t"):
            try scanner.scanLiteral("true")
            append("true")
        case UInt8(ascii: "f"):
            try scanner.scanLiteral("false")
            append("false")
        case UInt8(ascii: "n"):
            try scanner.scanLiteral("null")
            append("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try scanner.scanNumber(into: &output)
        default:
            throw scanner.unexpected(expectation)
        }
    }

    mutating func array() throws(JSONError) {
        try scanner.enterContainer()
        output.append(UInt8(ascii: "["))
        scanner.skipWhitespace()
        if scanner.current == UInt8(ascii: "]") {
            scanner.position += 1
        } else {
            var expectation = JSONError.Expectation.valueOrEndOfArray
            while true {
                try value(expecting: expectation)
                scanner.skipWhitespace()
                guard let byte = scanner.current else { throw scanner.unexpected(.commaOrEndOfArray) }
                if byte == UInt8(ascii: ",") {
                    scanner.position += 1
                    output.append(UInt8(ascii: ","))
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
        output.append(UInt8(ascii: "]"))
        scanner.depth -= 1
    }

    mutating func object() throws(JSONError) {
        try scanner.enterContainer()
        output.append(UInt8(ascii: "{"))
        let contentStart = output.count
        let base = members.count
        scanner.skipWhitespace()
        if scanner.current == UInt8(ascii: "}") {
            scanner.position += 1
        } else {
            var expectation = JSONError.Expectation.keyOrEndOfObject
            while true {
                guard scanner.current == UInt8(ascii: "\"") else { throw scanner.unexpected(expectation) }
                let source = scanner.position
                let start = output.count
                output.append(UInt8(ascii: "\""))
                let escaped = try scanner.scanString(into: &output, canonical: true)
                let keyEnd = output.count
                output.append(UInt8(ascii: "\""))
                scanner.skipWhitespace()
                guard scanner.current == UInt8(ascii: ":") else { throw scanner.unexpected(.colon) }
                scanner.position += 1
                output.append(UInt8(ascii: ":"))
                scanner.skipWhitespace()
                try value(expecting: .value)
                members.append(
                    Member(start: start, keyEnd: keyEnd, end: output.count, source: source, escaped: escaped))
                scanner.skipWhitespace()
                guard let byte = scanner.current else { throw scanner.unexpected(.commaOrEndOfObject) }
                if byte == UInt8(ascii: ",") {
                    scanner.position += 1
                    output.append(UInt8(ascii: ","))
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
            if members.count - base > 1 {
                try sortMembers(contentStart: contentStart, base: base)
            }
            members.removeSubrange(base...)
        }
        output.append(UInt8(ascii: "}"))
        scanner.depth -= 1
    }

    /// Puts the members `members[base...]`, written from `contentStart` on, in key
    /// order, or throws for the earliest repeated key.
    mutating func sortMembers(contentStart: Int, base: Int) throws(JSONError) {
        let ordered = output.withUnsafeBufferPointer { buffer in
            members.withUnsafeBufferPointer { members in
                for index in (base + 1)..<members.count
                where Self.compareKeys(members[index - 1], members[index], buffer) >= 0 {
                    return false
                }
                return true
            }
        }
        if ordered { return }
        var list: [Member] = []
        swap(&list, &members)
        defer { swap(&list, &members) }
        let duplicate: Member? = output.withUnsafeBufferPointer { buffer in
            list[base...].sort { Self.compareKeys($0, $1, buffer) < 0 }
            return earliestRepeatedKey(
                list[base...], sameKey: { Self.compareKeys($0, $1, buffer) == 0 }, offset: { $0.source })
        }
        if let duplicate {
            let key = output.withUnsafeBufferPointer { buffer in
                Self.unescapedKey(UnsafeBufferPointer(rebasing: buffer[(duplicate.start + 1)..<duplicate.keyEnd]))
            }
            throw scanner.error(.duplicateKey(key), at: duplicate.source)
        }
        reorder.removeAll(keepingCapacity: true)
        reorder.append(contentsOf: output[contentStart...])
        output.removeSubrange(contentStart...)
        reorder.withUnsafeBufferPointer { content in
            var first = true
            for member in list[base...] {
                if !first { output.append(UInt8(ascii: ",")) }
                first = false
                output.append(
                    contentsOf: UnsafeBufferPointer(
                        rebasing: content[(member.start - contentStart)..<(member.end - contentStart)]))
            }
        }
    }

    /// Three-way comparison of two members' keys by their unescaped UTF-8 bytes.
    @inline(__always)
    static func compareKeys(_ lhs: Member, _ rhs: Member, _ output: UnsafeBufferPointer<UInt8>) -> Int {
        let a = UnsafeBufferPointer(rebasing: output[(lhs.start + 1)..<lhs.keyEnd])
        let b = UnsafeBufferPointer(rebasing: output[(rhs.start + 1)..<rhs.keyEnd])
        if !lhs.escaped && !rhs.escaped {
            return JSONEscaping.compare(a, b)
        }
        // Escaping does not preserve byte order (`"` is 0x22 but `\"` starts with 0x5C),
        // so compare what the escapes stand for.
        var i = 0
        var j = 0
        while i < a.count && j < b.count {
            let (x, xLength) = unescape(a, at: i)
            let (y, yLength) = unescape(b, at: j)
            if x != y { return x < y ? -1 : 1 }
            i += xLength
            j += yLength
        }
        if i < a.count { return 1 }
        if j < b.count { return -1 }
        return 0
    }

    /// The raw byte that canonical string text at `index` stands for, and its length.
    @inline(__always)
    static func unescape(_ text: UnsafeBufferPointer<UInt8>, at index: Int) -> (UInt8, Int) {
        let byte = text[index]
        guard byte == UInt8(ascii: "\\") else { return (byte, 1) }
        switch text[index + 1] {
        case UInt8(ascii: "b"): return (0x08, 2)
        case UInt8(ascii: "f"): return (0x0C, 2)
        case UInt8(ascii: "n"): return (0x0A, 2)
        case UInt8(ascii: "r"): return (0x0D, 2)
        case UInt8(ascii: "t"): return (0x09, 2)
        case UInt8(ascii: "u"):
            // Canonical text only uses \u00xx with lower-case hex for controls.
            func hex(_ digit: UInt8) -> UInt8 {
                digit <= UInt8(ascii: "9") ? digit - UInt8(ascii: "0") : (digit | 0x20) - UInt8(ascii: "a") + 10
            }
            return (hex(text[index + 4]) << 4 | hex(text[index + 5]), 6)
        default:
            return (text[index + 1], 2)
        }
    }

    /// Decodes a key's canonical text back to a String, for error messages.
    static func unescapedKey(_ text: UnsafeBufferPointer<UInt8>) -> String {
        var bytes: [UInt8] = []
        var index = 0
        while index < text.count {
            let (byte, length) = unescape(text, at: index)
            bytes.append(byte)
            index += length
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Finds, in members sorted by key, the earliest occurrence in the input of a key
/// already seen in the same object: the answer a one-pass parser would give.
func earliestRepeatedKey<C: RandomAccessCollection>(
    _ sorted: C, sameKey: (C.Element, C.Element) -> Bool, offset: (C.Element) -> Int
) -> C.Element? {
    var best: C.Element?
    var bestOffset = Int.max
    var runStart = sorted.startIndex
    while runStart != sorted.endIndex {
        var runEnd = sorted.index(after: runStart)
        while runEnd != sorted.endIndex && sameKey(sorted[runStart], sorted[runEnd]) {
            runEnd = sorted.index(after: runEnd)
        }
        if sorted.distance(from: runStart, to: runEnd) > 1 {
            // The repeat is the second-smallest offset in the run.
            var smallest = Int.max
            var second = Int.max
            for element in sorted[runStart..<runEnd] {
                let position = offset(element)
                if position < smallest {
                    second = smallest
                    smallest = position
                } else if position < second {
                    second = position
                }
            }
            if second < bestOffset {
                bestOffset = second
                best = sorted[runStart..<runEnd].first { offset($0) == second }
            }
        }
        runStart = runEnd
    }
    return best
}
