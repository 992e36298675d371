/// The strict RFC 8259 tokenizer shared by the tree parser and the canonicalizer.
///
/// It works on a contiguous byte buffer with plain integer offsets so the hot loops
/// compile to byte compares; every function that can meet bad input throws
/// ``JSONError`` with the offset of the offending byte.
struct Scanner {
    let input: UnsafeBufferPointer<UInt8>
    let limits: JSONLimits
    var position = 0
    var depth = 0
    /// Reused for number digits so a number costs no allocation.
    var numberScratch: [UInt8] = []

    init(_ input: UnsafeBufferPointer<UInt8>, limits: JSONLimits) {
        self.input = input
        self.limits = limits
    }

    // MARK: Errors

    func error(_ kind: JSONError.Kind, at offset: Int) -> JSONError {
        JSONError.at(offset, in: input, kind)
    }

    /// The error for meeting the current byte (or the end) where `expected` was needed.
    func unexpected(_ expected: JSONError.Expectation) -> JSONError {
        if position >= input.count {
            return error(.unexpectedEnd(expected), at: position)
        }
        return error(.unexpectedCharacter(expected), at: position)
    }

    /// Rejects input over the byte limit before any work is done.
    func checkSize() throws(JSONError) {
        if input.count > limits.maxBytes {
            throw error(.tooLarge(maxBytes: limits.maxBytes), at: limits.maxBytes)
        }
    }

    // MARK: Structure

    @inline(__always)
    mutating func skipWhitespace() {
        let count = input.count
        while position < count {
            let byte = input[position]
            if byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
                position += 1
            } else {
                return
            }
        }
    }

    /// The current byte, or `nil` at the end.
    @inline(__always)
    var current: UInt8? {
        position < input.count ? input[position] : nil
    }

    /// Enters an array or object at the current `[` or `{`.
    @inline(__always)
    mutating func enterContainer() throws(JSONError) {
        depth += 1
        if depth > limits.maxDepth {
            throw error(.tooDeep(maxDepth: limits.maxDepth), at: position)
        }
        position += 1
    }

    /// Requires white space only after the top-level value.
    mutating func finishDocument() throws(JSONError) {
        skipWhitespace()
        if position < input.count {
            throw error(.trailingCharacters, at: position)
        }
    }

    /// Consumes `true`, `false` or `null` at the current position.
    mutating func scanLiteral(_ literal: StaticString) throws(JSONError) {
        let length = literal.utf8CodeUnitCount
        let start = literal.utf8Start
        for index in 0..<length where position + index >= input.count || input[position + index] != start[index] {
            throw error(.invalidLiteral(literal.description), at: position)
        }
        position += length
    }

    // MARK: Numbers

    /// Consumes a number and appends its canonical text to `out`.
    mutating func scanNumber(into out: inout [UInt8]) throws(JSONError) {
        let start = position
        let count = input.count
        var index = position
        if input[index] == UInt8(ascii: "-") { index += 1 }
        guard index < count, NumberText.isDigit(input[index]) else {
            throw error(.invalidNumber(.missingIntegerDigits), at: index)
        }
        if input[index] == UInt8(ascii: "0") {
            index += 1
            if index < count, NumberText.isDigit(input[index]) {
                throw error(.invalidNumber(.leadingZero), at: index - 1)
            }
        } else {
            while index < count, NumberText.isDigit(input[index]) { index += 1 }
        }
        var isInteger = true
        var hasExponent = false
        if index < count, input[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            let fractionStart = index
            while index < count, NumberText.isDigit(input[index]) { index += 1 }
            if index == fractionStart {
                throw error(.invalidNumber(.missingFractionDigits), at: index)
            }
        }
        if index < count, input[index] | 0x20 == UInt8(ascii: "e") {
            isInteger = false
            hasExponent = true
            index += 1
            if index < count, input[index] == UInt8(ascii: "+") || input[index] == UInt8(ascii: "-") {
                index += 1
            }
            let exponentStart = index
            while index < count, NumberText.isDigit(input[index]) { index += 1 }
            if index == exponentStart {
                throw error(.invalidNumber(.missingExponentDigits), at: index)
            }
        }
        position = index
        let literal = UnsafeBufferPointer(rebasing: input[start..<index])
        let inRange: Bool
        if isInteger {
            inRange = NumberText.appendCanonicalInteger(literal, to: &out)
        } else if !hasExponent && NumberText.appendPlainDecimal(literal, to: &out) {
            inRange = true
        } else {
            inRange = NumberText.appendCanonicalDecimal(literal, scratch: &numberScratch, to: &out)
        }
        if !inRange {
            throw error(.numberOutOfRange, at: start)
        }
    }

    // MARK: Strings

    /// The length of the well-formed UTF-8 sequence at `index` whose lead byte is
    /// at least 0x80, or `nil` (Unicode Table 3-7: no overlongs, no encoded
    /// surrogates, nothing above U+10FFFF, no truncation).
    @inline(__always)
    func utf8SequenceLength(at index: Int) -> Int? {
        let count = input.count
        let lead = input[index]
        @inline(__always) func continuation(_ offset: Int, _ low: UInt8 = 0x80, _ high: UInt8 = 0xBF) -> Bool {
            index + offset < count && input[index + offset] >= low && input[index + offset] <= high
        }
        switch lead {
        case 0xC2...0xDF:
            return continuation(1) ? 2 : nil
        case 0xE0:
            return continuation(1, 0xA0) && continuation(2) ? 3 : nil
        case 0xED:
            return continuation(1, 0x80, 0x9F) && continuation(2) ? 3 : nil
        case 0xE1...0xEF:
            return continuation(1) && continuation(2) ? 3 : nil
        case 0xF0:
            return continuation(1, 0x90) && continuation(2) && continuation(3) ? 4 : nil
        case 0xF1...0xF3:
            return continuation(1) && continuation(2) && continuation(3) ? 4 : nil
        case 0xF4:
            return continuation(1, 0x80, 0x8F) && continuation(2) && continuation(3) ? 4 : nil
        default:
            return nil
        }
    }

    @inline(__always)
    func hexValue(at index: Int) -> UInt32? {
        guard index < input.count else { return nil }
        let byte = input[index]
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    /// The four hex digits of a `\u` escape whose backslash is at `index`.
    @inline(__always)
    func unicodeEscape(at index: Int) -> UInt32? {
        guard let a = hexValue(at: index + 2), let b = hexValue(at: index + 3), let c = hexValue(at: index + 4),
            let d = hexValue(at: index + 5)
        else { return nil }
        return a << 12 | b << 8 | c << 4 | d
    }

    /// Decodes the escape whose backslash is at `index`; returns the scalar and the
    /// escape's length in bytes.
    func decodeEscape(at index: Int) throws(JSONError) -> (scalar: UInt32, length: Int) {
        guard index + 1 < input.count else { throw error(.invalidEscape, at: index) }
        switch input[index + 1] {
        case UInt8(ascii: "\""): return (0x22, 2)
        case UInt8(ascii: "\\"): return (0x5C, 2)
        case UInt8(ascii: "/"): return (0x2F, 2)
        case UInt8(ascii: "b"): return (0x08, 2)
        case UInt8(ascii: "f"): return (0x0C, 2)
        case UInt8(ascii: "n"): return (0x0A, 2)
        case UInt8(ascii: "r"): return (0x0D, 2)
        case UInt8(ascii: "t"): return (0x09, 2)
        case UInt8(ascii: "u"):
            guard let unit = unicodeEscape(at: index) else { throw error(.invalidEscape, at: index) }
            switch unit {
            case 0xD800...0xDBFF:
                guard index + 7 < input.count, input[index + 6] == UInt8(ascii: "\\"),
                    input[index + 7] == UInt8(ascii: "u"), let low = unicodeEscape(at: index + 6),
                    (0xDC00...0xDFFF).contains(low)
                else { throw error(.loneSurrogate, at: index) }
                return (0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00), 12)
            case 0xDC00...0xDFFF:
                throw error(.loneSurrogate, at: index)
            default:
                return (unit, 6)
            }
        default:
            throw error(.invalidEscape, at: index)
        }
    }

    /// Consumes a string starting at its opening quote and appends its content,
    /// without quotes, to `out`: escaped canonically when `canonical`, else as the
    /// decoded UTF-8. Returns whether anything was decoded from (raw mode) or
    /// written as (canonical mode) an escape.
    @inline(__always)
    mutating func scanString(into out: inout [UInt8], canonical: Bool) throws(JSONError) -> Bool {
        let open = position
        let count = input.count
        var index = open + 1
        var runStart = index
        var escaped = false
        while true {
            guard index < count else { throw error(.unterminatedString, at: open) }
            let byte = input[index]
            if byte >= 0x20 && byte < 0x80 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            if byte == UInt8(ascii: "\"") {
                if runStart < index {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<index]))
                }
                position = index + 1
                return escaped
            }
            if byte == UInt8(ascii: "\\") {
                if runStart < index {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<index]))
                }
                let (scalar, length) = try decodeEscape(at: index)
                if canonical {
                    if scalar < 0x80, JSONEscaping.needsEscape(UInt8(truncatingIfNeeded: scalar)) {
                        JSONEscaping.appendEscape(of: UInt8(truncatingIfNeeded: scalar), to: &out)
                        escaped = true
                    } else {
                        JSONEscaping.appendUTF8(scalar, to: &out)
                    }
                } else {
                    JSONEscaping.appendUTF8(scalar, to: &out)
                    escaped = true
                }
                index += length
                runStart = index
                continue
            }
            if byte < 0x20 {
                throw error(.controlCharacterInString, at: index)
            }
            guard let length = utf8SequenceLength(at: index) else {
                throw error(.invalidUTF8, at: index)
            }
            index += length
        }
    }
}
