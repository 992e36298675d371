import Foundation
import JSON
import ListModel
import ListdTestSupport

@testable import ListView

/// Random values for the property tests: numbers that are equal or nearly so
/// in different spellings, strings that differ by a combining mark, an astral
/// character or a NUL, nested arrays and objects, paths that may be missing.
struct Values {
    var generator: SeededGenerator

    init(seed: UInt64) { generator = SeededGenerator(seed: seed) }

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &generator) }
    mutating func bool() -> Bool { Bool.random(using: &generator) }
    mutating func pick<T>(_ choices: [T]) -> T { choices[int(0...(choices.count - 1))] }

    static let numberTexts = [
        "0", "-0", "1", "1.0", "1e0", "10e-1", "-1", "-1.5", "0.5", "-0.5", "2", "1e21", "1000000000000000000000",
        "1e+21", "-1e21", "-1000000000000000000000", "123456789012345678901234567890",
        "123456789012345678901234567891", "-123456789012345678901234567890", "9007199254740993", "9007199254740992",
        "1e-7", "0.000001", "1.5e300", "-1.5e300", "1e-300", "5e-324", "99", "100", "0.1", "0.10000000000000001",
        "12345678901234567890", "1.7976931348623157e308",
    ]

    /// A JSON number: a listed spelling or a random literal (long integers, fractions, exponents).
    mutating func number() -> JSONNumber {
        if bool() { return JSONNumber(parsing: pick(Self.numberTexts)) ?? 0 }
        var text = bool() ? "-" : ""
        if int(0...4) == 0 {
            text += "0"
        } else {
            text += String(int(1...9))
            for _ in 0..<int(0...(bool() ? 2 : 39)) { text += String(int(0...9)) }
        }
        if int(0...2) == 0 {
            text += "." + (0..<int(1...6)).map { _ in String(int(0...9)) }.joined()
        }
        if int(0...3) == 0 { text += "e" + pick(["", "+", "-"]) + String(int(0...330)) }
        return JSONNumber(parsing: text) ?? JSONNumber(Int64(int(-5...5)))
    }

    static let stringPieces = [
        "", "a", "b", "A", "é", "e\u{301}", "e", "\u{1F600}", "\u{FFFF}", "\u{E000}", "\u{10FFFF}", "\0", "\u{1}",
        "z", "ab", "\u{7F}", "\u{80}", " ", "\"", "\\", "ß", "SS", "ﬀ",
    ]

    mutating func string(maxPieces: Int = 3) -> String {
        (0..<int(0...maxPieces)).map { _ in pick(Self.stringPieces) }.joined()
    }

    static let keys = ["a", "b", "ab", "é", "e\u{301}", "", "\u{1F600}", "0", "1"]

    /// Any JSON value, nested at most `depth` levels.
    mutating func value(depth: Int = 3) -> JSONValue {
        switch int(0...(depth > 0 ? 7 : 5)) {
        case 0: return .null
        case 1: return .bool(bool())
        case 2, 3: return .number(number())
        case 4, 5: return .string(string())
        case 6: return .array((0..<int(0...3)).map { _ in value(depth: depth - 1) })
        default: return .object(JSONObject((0..<int(0...3)).map { _ in (pick(Self.keys), value(depth: depth - 1)) }))
        }
    }

    /// A scalar: what a `where` condition holds.
    mutating func scalar() -> JSONValue {
        switch int(0...4) {
        case 0: return .null
        case 1: return .bool(bool())
        case 2: return .number(number())
        default:
            return .string(
                pick([
                    string(), "3", "\"3\"", "true", "null", "[1]", "{}", "a:b", "a&b=c", "50%", "a+b", "x y", "-1",
                    "\"unterminated", " 3", "1.0",
                ]))
        }
    }

    static let fieldNames = [
        "status", "due", "n", "tags", "0", "1", "é", "a b", "x:y", "&", "=", "%", "+", "-x", "\u{1F600}",
    ]

    /// A path of one to three components (none empty, none holding a `.`).
    mutating func path() -> [String] {
        (0..<int(1...3)).map { _ in pick(Self.fieldNames) }
    }

    /// A random view spec with every parameter sometimes.
    mutating func spec() -> ViewSpec {
        let conditions = (0..<int(0...3)).map { _ in ViewSpec.Condition(path: path(), value: scalar()) }
        let text: String? = int(0...3) == 0 ? pick(["a", "É", "x y", "+", "%20", "", "\u{1F600}"]) : nil
        var order: ViewSpec.Order?
        if bool() {
            let descending = bool()
            var orderPath = path()
            if !descending, orderPath[0].hasPrefix("-") { orderPath[0] = "x" }
            order = ViewSpec.Order(path: orderPath, descending: descending)
        }
        let group: [String]? = int(0...2) == 0 ? path() : nil
        let limit: Int? = int(0...2) == 0 ? pick([1, 2, 3, 5, 100, ViewSpec.maxLimit]) : nil
        return ViewSpec(conditions: conditions, text: text, order: order, group: group, limit: limit)
    }

    /// A model for the view tests: an object with a few of the fields views look at, some missing.
    mutating func model() -> JSONValue {
        var members: [(String, JSONValue)] = []
        for key in ["status", "due", "n"] where int(0...4) > 0 {
            members.append(
                (
                    key,
                    pick([
                        .string(pick(["open", "done", "Open", "é"])), .null, .bool(bool()), .number(number()),
                        value(depth: 1),
                    ])
                ))
        }
        if bool() { members.append(("tags", .array((0..<int(0...2)).map { _ in .string(pick(["red", "blue"])) }))) }
        return .object(JSONObject(members))
    }
}

/// An independent reading of a number's exact value: the digits as an integer
/// and a power of ten, compared by writing both out at a common scale.
enum ExactNumber {
    /// `value = sign · mantissa · 10^scale` with `mantissa` a digit string without leading zeros ("" for zero).
    static func parts(_ text: String) -> (negative: Bool, mantissa: String, scale: Int) {
        var rest = Substring(text)
        let negative = rest.hasPrefix("-")
        if negative { rest = rest.dropFirst() }
        var exponent = 0
        if let e = rest.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            exponent = Int(rest[rest.index(after: e)...].replacingOccurrences(of: "+", with: "")) ?? 0
            rest = rest[..<e]
        }
        var mantissa = String(rest)
        if let dot = mantissa.firstIndex(of: ".") {
            exponent -= mantissa.distance(from: dot, to: mantissa.endIndex) - 1
            mantissa.remove(at: dot)
        }
        mantissa = String(mantissa.drop { $0 == "0" })
        return (negative && !mantissa.isEmpty, mantissa, exponent)
    }

    static func compare(_ a: String, _ b: String) -> Int {
        let x = parts(a)
        let y = parts(b)
        let signX = x.mantissa.isEmpty ? 0 : (x.negative ? -1 : 1)
        let signY = y.mantissa.isEmpty ? 0 : (y.negative ? -1 : 1)
        if signX != signY { return signX < signY ? -1 : 1 }
        if signX == 0 { return 0 }
        let scale = min(x.scale, y.scale)
        let u = x.mantissa + String(repeating: "0", count: x.scale - scale)
        let v = y.mantissa + String(repeating: "0", count: y.scale - scale)
        let magnitude = u.count != v.count ? (u.count < v.count ? -1 : 1) : (u == v ? 0 : (u < v ? -1 : 1))
        return signX * magnitude
    }
}

func sign(_ value: Int) -> Int { value < 0 ? -1 : (value > 0 ? 1 : 0) }
