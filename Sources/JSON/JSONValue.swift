/// Any JSON value.
///
/// Equality is the equality of canonical texts: numbers compare by canonical text
/// (`1.0 == 1`), strings and keys by UTF-8 bytes (not by Swift's Unicode
/// canonical equivalence), objects ignore member order. So `a == b` exactly when
/// `a.canonicalText == b.canonicalText`.
///
/// Parse with ``init(parsing:limits:)-(String,_)``, read with the subscripts and the
/// `…Value` accessors, and encode with ``serialized()`` or ``canonicalText``.
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number, kept as canonical text.
    case number(JSONNumber)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object.
    case object(JSONObject)

    /// Equal when the canonical texts are equal.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): JSONEscaping.bytesEqual(a, b)
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a == b
        default: false
        }
    }

    /// Hashes consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null:
            hasher.combine(0 as UInt8)
        case .bool(let value):
            hasher.combine(1 as UInt8)
            hasher.combine(value)
        case .number(let value):
            hasher.combine(2 as UInt8)
            hasher.combine(value)
        case .string(let value):
            hasher.combine(3 as UInt8)
            Self.hashBytes(of: value, into: &hasher)
        case .array(let value):
            hasher.combine(4 as UInt8)
            hasher.combine(value)
        case .object(let value):
            hasher.combine(5 as UInt8)
            hasher.combine(value)
        }
    }

    static func hashBytes(of string: String, into hasher: inout Hasher) {
        var string = string
        string.withUTF8 { bytes in
            hasher.combine(bytes.count)
            hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
        }
    }
}

// MARK: Reading values

extension JSONValue {
    /// The member `key` of an object; `nil` for a missing key or a non-object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let object) = self else { return nil }
        return object[key]
    }

    /// The element at `index` of an array; `nil` when out of range or not an array.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let array) = self, array.indices.contains(index) else { return nil }
        return array[index]
    }

    /// Whether this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The Bool of `true` or `false`, else `nil`.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The number, else `nil`.
    public var numberValue: JSONNumber? {
        if case .number(let value) = self { return value }
        return nil
    }

    /// An integral number that fits an Int64, else `nil` (`2.0` counts, `2.5` does not).
    public var int64Value: Int64? { numberValue?.int64 }

    /// An integral number that fits an Int, else `nil`.
    public var intValue: Int? { numberValue?.int }

    /// A number as the nearest Double, else `nil`.
    public var doubleValue: Double? { numberValue?.double }

    /// The string, else `nil`.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The elements of an array, else `nil`.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members of an object, else `nil`.
    public var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// Follows `path` through objects and arrays, as item queries do
    /// (`where=done:false` is `["done"]`, `where=tags.0:red` is `["tags", "0"]`).
    ///
    /// In an object a component is a key; in an array it must be a decimal index
    /// without leading zeros (`0`, `12`). Returns `nil` when any step is missing.
    /// An empty path returns the value itself.
    ///
    /// - Complexity: O(k log m) for k components and objects of m members.
    public func value(atPath path: [String]) -> JSONValue? {
        var current = self
        for component in path {
            switch current {
            case .object(let object):
                guard let next = object[component] else { return nil }
                current = next
            case .array(let array):
                guard let index = Self.arrayIndex(component), index < array.count else { return nil }
                current = array[index]
            default:
                return nil
            }
        }
        return current
    }

    static func arrayIndex(_ component: String) -> Int? {
        let utf8 = component.utf8
        guard let first = utf8.first, utf8.count <= 18, utf8.allSatisfy(NumberText.isDigit),
            first != UInt8(ascii: "0") || utf8.count == 1
        else { return nil }
        return Int(component)
    }
}

// MARK: Literals

// Deliberately not ExpressibleByNilLiteral: `cond ? value : nil` would then build
// `.null` where a caller meant "missing". Write `.null`.
extension JSONValue: ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    /// A Bool.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer.
    public init(integerLiteral value: Int64) { self = .number(JSONNumber(value)) }
    /// A number from a finite float literal.
    public init(floatLiteral value: Double) { self = .number(JSONNumber(floatLiteral: value)) }
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// An object; when a key repeats, the last value wins.
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(JSONObject(elements)) }
}

// MARK: Encoding

extension JSONValue {
    /// The canonical JSON text of this value (see ``CanonicalJSON``).
    public var canonicalText: String {
        String(decoding: serialized(), as: UTF8.self)
    }

    /// The canonical JSON text of this value as UTF-8 bytes.
    ///
    /// - Complexity: O(size of the text).
    public func serialized() -> [UInt8] {
        var bytes: [UInt8] = []
        write(to: &bytes)
        return bytes
    }

    /// Appends the canonical text of this value to `bytes`.
    public func write(to bytes: inout [UInt8]) {
        switch self {
        case .null:
            bytes.appendLiteral("null")
        case .bool(let value):
            bytes.appendLiteral(value ? "true" : "false")
        case .number(let number):
            bytes.append(contentsOf: number.canonicalText.utf8)
        case .string(let string):
            JSONEscaping.appendQuoted(string, to: &bytes)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                element.write(to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let object):
            bytes.append(UInt8(ascii: "{"))
            for (index, member) in object.members.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                JSONEscaping.appendQuoted(member.key, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                member.value.write(to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }
}
