import JSON

/// The contract's total order on JSON values, by which `order=` sorts items
/// and `group=` sorts sections:
///
/// null (or missing) < false < true < numbers < strings < arrays < objects
///
/// - Numbers by their exact value, from the canonical text, never through a
///   Double: `123456789012345678901234567890` < `123456789012345678901234567891`,
///   `-1.5` < `-1` < `0` < `0.5` < `1` (`1.0`, `1e0` and `-0` are canonically
///   `1`, `1`, `0`) < `1e+21`. An integer written out in full keeps its
///   digits in canonical text, so `1000000000000000000000` and `1e+21` are the
///   same number but two values; of two such, the one written out comes first.
/// - Strings by Unicode code points, which is their UTF-8 bytes' order (not
///   Swift's `<`, which compares by canonical equivalence: `"é"` and
///   `"e\u{301}"` are two strings here, U+00E9 after U+0065).
/// - Arrays element by element, the first difference deciding; an array
///   that is a prefix of another comes first (`[]` < `[1]` < `[1, 2]` < `[2]`).
/// - Objects member by member in key order (keys sorted by UTF-8 bytes, as
///   canonical JSON writes them): the first member whose key or, at the same
///   key, whose value differs decides (by key first: `{"a": 9}` < `{"b": 0}`);
///   an object whose members are a prefix of another's comes first
///   (`{}` < `{"a": 1}` < `{"a": 1, "b": 0}`). That is the arrays' rule over
///   each object's `[key, value]` pairs.
///
/// Two values are equal in this order exactly when they are equal as
/// ``JSON/JSONValue``s (same canonical text). ``ViewKey`` encodes the same
/// order in bytes.
public enum ValueOrder {
    /// Three-way comparison: negative when `lhs` comes first, zero when equal,
    /// positive when `rhs` comes first. `nil` (a missing path) is `null`.
    /// - Complexity: O(size of the smaller value).
    public static func compare(_ lhs: JSONValue?, _ rhs: JSONValue?) -> Int {
        let lhs = lhs ?? .null
        let rhs = rhs ?? .null
        let (a, b) = (rank(lhs), rank(rhs))
        if a != b { return a < b ? -1 : 1 }
        switch (lhs, rhs) {
        case (.bool, .bool), (.null, .null):
            return 0
        case (.number(let x), .number(let y)):
            let (u, v) = (DecimalNumber(x), DecimalNumber(y))
            let order = u.compare(v)
            if order != 0 || u.exponentForm == v.exponentForm { return order }
            return u.exponentForm ? 1 : -1
        case (.string(let x), .string(let y)):
            return compareBytes(x, y)
        case (.array(let x), .array(let y)):
            for (u, v) in zip(x, y) {
                let order = compare(u, v)
                if order != 0 { return order }
            }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        case (.object(let x), .object(let y)):
            for (u, v) in zip(x.members, y.members) {
                let keys = compareBytes(u.key, v.key)
                if keys != 0 { return keys }
                let values = compare(u.value, v.value)
                if values != 0 { return values }
            }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        default:
            return 0
        }
    }

    /// Whether `lhs` comes before `rhs`.
    public static func areInIncreasingOrder(_ lhs: JSONValue?, _ rhs: JSONValue?) -> Bool {
        compare(lhs, rhs) < 0
    }

    /// The kind's place: null, false, true, numbers, strings, arrays, objects.
    static func rank(_ value: JSONValue) -> Int {
        switch value {
        case .null: 0
        case .bool(let bool): bool ? 2 : 1
        case .number: 3
        case .string: 4
        case .array: 5
        case .object: 6
        }
    }

    static func compareBytes(_ lhs: String, _ rhs: String) -> Int {
        var lhs = lhs
        var rhs = rhs
        return lhs.withUTF8 { a in
            rhs.withUTF8 { b in
                let shared = min(a.count, b.count)
                var index = 0
                while index < shared {
                    if a[index] != b[index] { return a[index] < b[index] ? -1 : 1 }
                    index += 1
                }
                return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
            }
        }
    }
}

/// A number as sign, significant digits and exponent: the value is
/// `sign × 0.d₁d₂…dₙ × 10^exponent`, with d₁ and dₙ not zero (no digits for zero).
///
/// Read from the number's canonical text (any JSON number text reads), so
/// numbers of any size compare exactly: first by sign, then (same sign) by
/// exponent, then by digits, a prefix first; all reversed for negatives.
struct DecimalNumber {
    /// -1, 0 or 1.
    var sign: Int
    /// ASCII digits, first and last not `0`; empty for zero.
    var digits: [UInt8]
    /// The power of ten of the digit string read as `0.ddd`; 0 for zero.
    var exponent: Int
    /// Whether the text has an exponent (`1e+21`): an equal number without one
    /// (`1000000000000000000000`, an integer kept exactly) is another value.
    var exponentForm: Bool

    /// Exponents are clamped to this, far beyond any number a JSON text of
    /// memory-sized length can write, so reading never overflows.
    static let exponentBound = 1 << 60

    init(_ number: JSONNumber) {
        let text = Array(number.canonicalText.utf8)
        var index = 0
        var negative = false
        if index < text.count, text[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        var all: [UInt8] = []
        var integerDigits = 0
        while index < text.count, Self.isDigit(text[index]) {
            all.append(text[index])
            integerDigits += 1
            index += 1
        }
        if index < text.count, text[index] == UInt8(ascii: ".") {
            index += 1
            while index < text.count, Self.isDigit(text[index]) {
                all.append(text[index])
                index += 1
            }
        }
        var written = 0
        self.exponentForm = false
        if index < text.count, text[index] == UInt8(ascii: "e") || text[index] == UInt8(ascii: "E") {
            self.exponentForm = true
            index += 1
            var exponentNegative = false
            if index < text.count, text[index] == UInt8(ascii: "+") || text[index] == UInt8(ascii: "-") {
                exponentNegative = text[index] == UInt8(ascii: "-")
                index += 1
            }
            while index < text.count, Self.isDigit(text[index]) {
                written = min(written * 10 + Int(text[index] - UInt8(ascii: "0")), Self.exponentBound)
                index += 1
            }
            if exponentNegative { written = -written }
        }
        let leading = all.firstIndex { $0 != UInt8(ascii: "0") }
        guard let leading, let trailing = all.lastIndex(where: { $0 != UInt8(ascii: "0") }) else {
            self.sign = 0
            self.digits = []
            self.exponent = 0
            return
        }
        self.sign = negative ? -1 : 1
        self.digits = Array(all[leading...trailing])
        self.exponent = integerDigits + written - leading
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// Three-way comparison by value.
    func compare(_ other: DecimalNumber) -> Int {
        if sign != other.sign { return sign < other.sign ? -1 : 1 }
        if sign == 0 { return 0 }
        return sign * magnitudeCompare(other)
    }

    private func magnitudeCompare(_ other: DecimalNumber) -> Int {
        if exponent != other.exponent { return exponent < other.exponent ? -1 : 1 }
        for (a, b) in zip(digits, other.digits) where a != b {
            return a < b ? -1 : 1
        }
        return digits.count == other.digits.count ? 0 : (digits.count < other.digits.count ? -1 : 1)
    }
}
