/// Byte-level helpers shared by the canonicalizer, the serializer and the writer.
///
/// Canonical strings are escaped one way only: `\"` `\\` `\b` `\f` `\n` `\r` `\t`,
/// other control characters as `\u00xx` in lower-case hex, everything else literal.
enum JSONEscaping {
    /// Whether a byte must be escaped in a canonical string: controls, `"` and `\`.
    @inline(__always)
    static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends the canonical escape of one byte that ``needsEscape(_:)``.
    @inline(__always)
    static func appendEscape(of byte: UInt8, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""): out.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\"))
        case 0x08: out.append(UInt8(ascii: "b"))
        case 0x0C: out.append(UInt8(ascii: "f"))
        case 0x0A: out.append(UInt8(ascii: "n"))
        case 0x0D: out.append(UInt8(ascii: "r"))
        case 0x09: out.append(UInt8(ascii: "t"))
        default:
            out.append(UInt8(ascii: "u"))
            out.append(UInt8(ascii: "0"))
            out.append(UInt8(ascii: "0"))
            out.append(hexDigits[Int(byte >> 4)])
            out.append(hexDigits[Int(byte & 0x0F)])
        }
    }

    /// Appends valid UTF-8 `bytes` escaped canonically (without quotes).
    ///
    /// - Complexity: O(n); runs of literal bytes are copied in bulk.
    static func appendEscaped(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        var runStart = 0
        var index = 0
        let count = bytes.count
        while index < count {
            let byte = bytes[index]
            if needsEscape(byte) {
                if runStart < index {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                }
                appendEscape(of: byte, to: &out)
                runStart = index + 1
            }
            index += 1
        }
        if runStart < count {
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<count]))
        }
    }

    /// Appends `string` as a canonical JSON string literal, quotes included.
    static func appendQuoted(_ string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { appendEscaped($0, to: &out) }
        out.append(UInt8(ascii: "\""))
    }

    /// Appends the UTF-8 encoding of a Unicode scalar value (not a surrogate).
    @inline(__always)
    static func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
        if scalar < 0x80 {
            out.append(UInt8(truncatingIfNeeded: scalar))
        } else if scalar < 0x800 {
            out.append(UInt8(truncatingIfNeeded: 0xC0 | (scalar >> 6)))
            out.append(UInt8(truncatingIfNeeded: 0x80 | (scalar & 0x3F)))
        } else if scalar < 0x10000 {
            out.append(UInt8(truncatingIfNeeded: 0xE0 | (scalar >> 12)))
            out.append(UInt8(truncatingIfNeeded: 0x80 | ((scalar >> 6) & 0x3F)))
            out.append(UInt8(truncatingIfNeeded: 0x80 | (scalar & 0x3F)))
        } else {
            out.append(UInt8(truncatingIfNeeded: 0xF0 | (scalar >> 18)))
            out.append(UInt8(truncatingIfNeeded: 0x80 | ((scalar >> 12) & 0x3F)))
            out.append(UInt8(truncatingIfNeeded: 0x80 | ((scalar >> 6) & 0x3F)))
            out.append(UInt8(truncatingIfNeeded: 0x80 | (scalar & 0x3F)))
        }
    }

    /// Three-way comparison of two byte strings: negative, zero or positive.
    @inline(__always)
    static func compare(_ lhs: UnsafeBufferPointer<UInt8>, _ rhs: UnsafeBufferPointer<UInt8>) -> Int {
        let shared = min(lhs.count, rhs.count)
        var index = 0
        while index < shared {
            let a = lhs[index]
            let b = rhs[index]
            if a != b { return a < b ? -1 : 1 }
            index += 1
        }
        return lhs.count - rhs.count
    }

    /// Three-way comparison of two strings by their UTF-8 bytes.
    ///
    /// Swift's `<` and `==` on `String` follow Unicode canonical equivalence, so "é"
    /// precomposed equals "e" + U+0301; canonical JSON compares bytes instead.
    @inline(__always)
    static func compare(_ lhs: String, _ rhs: String) -> Int {
        var lhs = lhs
        var rhs = rhs
        return lhs.withUTF8 { a in rhs.withUTF8 { b in compare(a, b) } }
    }

    /// Whether two strings have the same UTF-8 bytes.
    @inline(__always)
    static func bytesEqual(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.count == rhs.utf8.count && compare(lhs, rhs) == 0
    }
}

extension [UInt8] {
    /// Appends the bytes of a static ASCII literal such as `true`.
    @inline(__always)
    mutating func appendLiteral(_ literal: StaticString) {
        append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }
}
