import Foundation
import JSON
import ListModel

/// Where an item sits in the list: its section's position and its own
/// position in that section, as any keys ordered as the list is (the store's
/// position keys, or plain indices).
public struct ListPosition: Sendable, Hashable, Comparable {
    /// The section's position among the list's sections.
    public var section: Int64
    /// The item's position among its section's items.
    public var item: Int64

    /// Creates a position.
    public init(section: Int64, item: Int64) {
        self.section = section
        self.item = item
    }

    /// Section first, then item.
    public static func < (lhs: ListPosition, rhs: ListPosition) -> Bool {
        (lhs.section, lhs.item) < (rhs.section, rhs.item)
    }
}

/// An item's place in a view's order as bytes: comparing two keys of one
/// view bytewise (`memcmp`, shorter first on a common prefix) gives exactly
/// the view's order, sections first. What an order-statistics structure of a
/// view's members (``ViewMembers``) is keyed by.
///
/// A key is three parts, each a self-delimiting encoding (no part's
/// encoding is a prefix of another's of the same kind), so a later part
/// decides only between keys whose earlier parts are equal:
///
/// 1. the section: with `group`, the group value (ascending, always);
///    without, the section's list position;
/// 2. the order: with `order`, the order value (missing = null), every byte
///    inverted when descending, which reverses the order of self-delimiting
///    encodings; without, the list position (section, item);
/// 3. the item id's bytes, never inverted: ties by id ascending in both
///    directions.
///
/// Values are encoded as ``ValueOrder`` orders them:
///
/// | value | bytes |
/// |---|---|
/// | null, missing | `05` |
/// | false, true | `10`, `11` |
/// | negative number | `20`, then exponent and digits as for a positive, every byte inverted, then the form byte |
/// | zero | `21`, form byte |
/// | positive number | `22`, exponent (8 bytes, big-endian, sign bit flipped), ASCII digits (no leading or trailing zero), `00`, form byte (`01` written out, `02` with an exponent) |
/// | string | `30`, UTF-8 with `00` as `00 FF`, then `00 01` |
/// | array | `40`, each element, then `00` |
/// | object | `50`, each member as `01`, key (as a string, no tag), value; then `00` |
/// | list position | `60`, 8 bytes big-endian, sign bit flipped |
///
/// Every part starts with a tag byte that is neither `00` nor `FF`, inverted
/// or not, which is what makes ``lowerBound(group:)`` and the other bounds work.
public struct ViewKey: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The encoded key.
    public let bytes: [UInt8]

    /// Wraps encoded bytes.
    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Bytewise order, a shorter key first on a common prefix.
    public static func < (lhs: ViewKey, rhs: ViewKey) -> Bool {
        compare(lhs.bytes, rhs.bytes) < 0
    }

    /// Three-way bytewise comparison (negative, zero, positive).
    public static func compare(_ lhs: [UInt8], _ rhs: [UInt8]) -> Int {
        lhs.withUnsafeBufferPointer { a in
            rhs.withUnsafeBufferPointer { b in
                let shared = min(a.count, b.count)
                if shared > 0, let x = a.baseAddress, let y = b.baseAddress {
                    let order = memcmp(x, y, shared)
                    if order != 0 { return Int(order) }
                }
                return a.count - b.count
            }
        }
    }

    /// The key in hex, for test failures and logs.
    public var description: String {
        let hex = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes {
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Below every key of a grouped view's items in group `value`, and above
    /// every key of an earlier group: `rank(of:)` of it counts the items of
    /// the groups before.
    public static func lowerBound(group value: JSONValue) -> ViewKey {
        var writer = KeyWriter()
        writer.value(value, descending: false)
        return ViewKey(bytes: writer.bytes)
    }

    /// Above every key of a grouped view's items in group `value`, and below
    /// every key of a later group.
    public static func upperBound(group value: JSONValue) -> ViewKey {
        ViewKey(bytes: lowerBound(group: value).bytes + [0xFF])
    }

    /// Below every key of an ungrouped view's items in the section at list
    /// position `section`, and above every key of an earlier section.
    public static func lowerBound(section: Int64) -> ViewKey {
        var writer = KeyWriter()
        writer.position(section)
        return ViewKey(bytes: writer.bytes)
    }

    /// Above every key of an ungrouped view's items in the section at list
    /// position `section`, and below every key of a later section.
    public static func upperBound(section: Int64) -> ViewKey {
        ViewKey(bytes: lowerBound(section: section).bytes + [0xFF])
    }

    /// The encoding of one value alone (``ValueOrder``'s order, bytewise), ascending or descending.
    public static func encoding(of value: JSONValue?, descending: Bool = false) -> [UInt8] {
        var writer = KeyWriter()
        writer.value(value, descending: descending)
        return writer.bytes
    }
}

extension ViewSpec {
    /// The key of an item in this view's order (see ``ViewKey``): two items
    /// of the view are in the order of their keys' bytes.
    ///
    /// - Parameters:
    ///   - model: the item's model.
    ///   - id: the item's id.
    ///   - position: the item's place in the list. Without `group` the key
    ///     starts with its section, and without `order` it holds both; so
    ///     moving an item, or renumbering or moving its section, changes its
    ///     key in such views, and an engine keyed so re-keys the items moved.
    /// - Complexity: O(size of the group and order values).
    public func key(of model: JSONValue, id: Identifier, at position: ListPosition) -> ViewKey {
        var writer = KeyWriter()
        if let group {
            writer.value(model.value(atPath: group), descending: false)
        } else {
            writer.position(position.section)
        }
        if let order {
            writer.value(model.value(atPath: order.path), descending: order.descending)
        } else {
            writer.position(position.section)
            writer.position(position.item)
        }
        writer.bytes.append(contentsOf: id.rawValue.utf8)
        return ViewKey(bytes: writer.bytes)
    }
}

/// Appends the parts of a ``ViewKey``.
struct KeyWriter {
    var bytes: [UInt8] = []

    enum Tag {
        static let null: UInt8 = 0x05
        static let `false`: UInt8 = 0x10
        static let `true`: UInt8 = 0x11
        static let negative: UInt8 = 0x20
        static let zero: UInt8 = 0x21
        static let positive: UInt8 = 0x22
        static let string: UInt8 = 0x30
        static let array: UInt8 = 0x40
        static let object: UInt8 = 0x50
        static let position: UInt8 = 0x60
        static let member: UInt8 = 0x01
        static let end: UInt8 = 0x00
    }

    mutating func position(_ position: Int64) {
        bytes.append(Tag.position)
        appendBiased(position)
    }

    mutating func value(_ value: JSONValue?, descending: Bool) {
        let start = bytes.count
        append(value ?? .null)
        if descending {
            for index in start..<bytes.count { bytes[index] = ~bytes[index] }
        }
    }

    private mutating func appendBiased(_ value: Int64) {
        let biased = UInt64(bitPattern: value) ^ (1 << 63)
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: biased >> shift)) }
    }

    private mutating func append(_ value: JSONValue) {
        switch value {
        case .null:
            bytes.append(Tag.null)
        case .bool(let bool):
            bytes.append(bool ? Tag.true : Tag.false)
        case .number(let number):
            appendNumber(DecimalNumber(number))
        case .string(let string):
            bytes.append(Tag.string)
            appendString(string)
        case .array(let elements):
            bytes.append(Tag.array)
            for element in elements { append(element) }
            bytes.append(Tag.end)
        case .object(let object):
            bytes.append(Tag.object)
            for member in object.members {
                bytes.append(Tag.member)
                appendString(member.key)
                append(member.value)
            }
            bytes.append(Tag.end)
        }
    }

    private mutating func appendNumber(_ number: DecimalNumber) {
        let form: UInt8 = number.exponentForm ? 0x02 : 0x01
        guard number.sign != 0 else {
            bytes.append(Tag.zero)
            bytes.append(form)
            return
        }
        bytes.append(number.sign < 0 ? Tag.negative : Tag.positive)
        let start = bytes.count
        appendBiased(Int64(number.exponent))
        bytes.append(contentsOf: number.digits)
        bytes.append(Tag.end)
        if number.sign < 0 {
            for index in start..<bytes.count { bytes[index] = ~bytes[index] }
        }
        bytes.append(form)
    }

    /// The string's UTF-8 with `00` escaped as `00 FF`, then `00 01`: a
    /// prefix-free encoding in code point order.
    private mutating func appendString(_ string: String) {
        for byte in string.utf8 {
            bytes.append(byte)
            if byte == 0 { bytes.append(0xFF) }
        }
        bytes.append(0x00)
        bytes.append(0x01)
    }
}
