/// Byte-level helpers shared by the parser, the serializer and the router.
@usableFromInline
enum ASCII {
    @usableFromInline static let cr: UInt8 = 0x0D
    @usableFromInline static let lf: UInt8 = 0x0A
    @usableFromInline static let space: UInt8 = 0x20
    @usableFromInline static let tab: UInt8 = 0x09
    @usableFromInline static let colon: UInt8 = 0x3A

    /// Lower-cases an ASCII letter and leaves every other byte alone.
    @inlinable @inline(__always)
    static func lower(_ byte: UInt8) -> UInt8 {
        (byte &- 0x41) < 26 ? byte | 0x20 : byte
    }

    @inlinable
    static func caseInsensitiveEqual(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for index in 0..<lhs.count where lower(lhs[index]) != lower(rhs[index]) { return false }
        return true
    }

    /// Whether `bytes` equals the already lower-case ASCII `lowercase`, ignoring case.
    @inlinable
    static func equalsLowercase(_ bytes: UnsafeRawBufferPointer, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let other = lowercase.utf8Start
        for index in 0..<bytes.count where lower(bytes[index]) != other[index] { return false }
        return true
    }

    /// Whether a byte is a `tchar` of RFC 9110, section 5.6.2: a character of a token.
    /// A bit mask rather than a table, so the hot loop needs no lazily initialised global.
    @inlinable @inline(__always)
    static func isToken(_ byte: UInt8) -> Bool {
        if byte < 64 { return (0x03FF_6CFA_0000_0000 as UInt64) >> UInt64(byte) & 1 == 1 }
        if byte < 128 { return (0x57FF_FFFF_C7FF_FFFE as UInt64) >> UInt64(byte &- 64) & 1 == 1 }
        return false
    }

    /// Whether a byte may appear in an origin-form request-target (RFC 9112, section 3.2.1):
    /// unreserved, sub-delims, `:`, `@`, `/`, `?` and the `%` of a percent-encoding.
    @inlinable @inline(__always)
    static func isTargetByte(_ byte: UInt8) -> Bool {
        if byte < 64 { return (0xAFFF_FFF2_0000_0000 as UInt64) >> UInt64(byte) & 1 == 1 }
        if byte < 128 { return (0x47FF_FFFE_87FF_FFFF as UInt64) >> UInt64(byte &- 64) & 1 == 1 }
        return false
    }

    /// Whether a byte may appear in a field value: HTAB, SP, VCHAR or obs-text (no CTLs, no DEL).
    @inline(__always)
    static func isFieldValueByte(_ byte: UInt8) -> Bool {
        byte == tab || (byte >= 0x20 && byte != 0x7F)
    }

    /// The value of a hexadecimal digit, or nil.
    @inline(__always)
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
