import Foundation

/// The id of a list, a section or an item: 1 to 128 characters of
/// `A-Z a-z 0-9 . _ ~ -` (the URL-safe "unreserved" set of RFC 3986, so an id
/// never needs percent-encoding in a path), other than `.` and `..`: those
/// are dot segments, which a URL's path cannot name (RFC 3986, section 5.2.4
/// removes them), so an entity with such an id could never be addressed.
public struct Identifier: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The id's text, already validated.
    public let rawValue: String

    /// The most characters an id may have.
    public static let maxLength = 128

    /// Validates `text` as an id, or returns `nil`.
    public init?(_ text: String) {
        guard Identifier.validationFailure(text) == nil else { return nil }
        self.rawValue = text
    }

    /// Why `text` is not a valid id, in words fit for a client, or `nil` when it is valid.
    public static func validationFailure(_ text: String) -> String? {
        let utf8 = text.utf8
        if utf8.isEmpty { return "an id must not be empty" }
        if utf8.count > maxLength {
            return "an id has at most \(maxLength) characters, this one has \(text.count)"
        }
        if let bad = utf8.firstIndex(where: { !isAllowed($0) }) {
            let offset = utf8.distance(from: utf8.startIndex, to: bad)
            return "an id may hold only A-Z a-z 0-9 . _ ~ -, found a disallowed character at offset \(offset)"
        }
        if text == "." || text == ".." {
            return "an id may not be \"\(text)\": \".\" and \"..\" are dot segments, which no URL path can name"
        }
        return nil
    }

    /// A fresh id for an entity created without one: 26 characters, a
    /// millisecond timestamp then 80 random bits, in lower-case Crockford base 32,
    /// so ids made later sort later and two ids never collide in practice.
    /// ("Later" within one clock: ids made in the same millisecond sort randomly.)
    public static func generate() -> Identifier {
        var generator = SystemRandomNumberGenerator()
        return generate(milliseconds: currentMilliseconds(), using: &generator)
    }

    /// A fresh id from a given time and random source; see ``generate()``.
    public static func generate(
        milliseconds: UInt64,
        using generator: inout some RandomNumberGenerator
    ) -> Identifier {
        let alphabet = Array("0123456789abcdefghjkmnpqrstvwxyz".utf8)
        var bytes = [UInt8](repeating: 0, count: 26)
        var time = milliseconds
        for index in stride(from: 9, through: 0, by: -1) {
            bytes[index] = alphabet[Int(time & 31)]
            time >>= 5
        }
        var random = generator.next() as UInt64
        var more = generator.next() as UInt64
        for index in 10..<26 {
            bytes[index] = alphabet[Int(random & 31)]
            random >>= 5
            if index == 21 { random = more; more = 0 }
        }
        return Identifier(unchecked: String(decoding: bytes, as: UTF8.self))
    }

    private init(unchecked: String) { self.rawValue = unchecked }

    /// An id read back from a store, which holds only validated ids.
    package init(storedText: String) { self.rawValue = storedText }

    private static func currentMilliseconds() -> UInt64 {
        UInt64(max(0, Date().timeIntervalSince1970 * 1000))
    }

    @inline(__always)
    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    public static func < (lhs: Identifier, rhs: Identifier) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { rawValue }
}

/// An id written in source, as in `.deleteItem(id: "apple")`.
///
/// A literal is the programmer's, not input: one that is not a valid id is a
/// mistake in the program and stops it with the reason. Ids that come from
/// input go through ``Identifier/init(_:)``, which returns `nil` instead.
extension Identifier: ExpressibleByStringLiteral {
    public init(stringLiteral text: String) {
        guard let id = Identifier(text) else {
            preconditionFailure(
                "\"\(text)\" is not an id: \(Identifier.validationFailure(text) ?? "invalid")")
        }
        self = id
    }
}
