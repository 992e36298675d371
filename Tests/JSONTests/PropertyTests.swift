import ListdTestSupport
import Testing

@testable import JSON

/// Random JSON values, and random but equivalent texts for them.
struct RandomJSON {
    var rng: SeededGenerator

    init(seed: UInt64) {
        rng = SeededGenerator(seed: seed)
    }

    mutating func chance(_ percent: Int) -> Bool {
        Int.random(in: 0..<100, using: &rng) < percent
    }

    // MARK: Values

    mutating func value(depth: Int) -> JSONValue {
        let kind = Int.random(in: 0..<(depth > 0 ? 8 : 5), using: &rng)
        switch kind {
        case 0: return .null
        case 1: return .bool(chance(50))
        case 2: return .number(number())
        case 3, 4: return .string(string())
        case 5: return .array((0..<Int.random(in: 0...5, using: &rng)).map { _ in value(depth: depth - 1) })
        default:
            let members = (0..<Int.random(in: 0...6, using: &rng)).map { _ in (key(), value(depth: depth - 1)) }
            return .object(JSONObject(members))
        }
    }

    mutating func number() -> JSONNumber {
        switch Int.random(in: 0..<7, using: &rng) {
        case 0:
            return JSONNumber(Int64.random(in: -1000...1000, using: &rng))
        case 1:
            return JSONNumber(Int64.random(in: .min ... .max, using: &rng))
        case 2:
            let length = Int.random(in: 16...40, using: &rng)
            var digits = String(Int.random(in: 1...9, using: &rng))
            for _ in 1..<length { digits.append(String(Int.random(in: 0...9, using: &rng))) }
            let text = (chance(50) ? "-" : "") + digits
            return JSONNumber(parsing: text) ?? 0
        case 3:
            let bits = UInt64.random(in: .min ... .max, using: &rng)
            let double = Double(bitPattern: bits)
            return JSONNumber(double.isFinite ? double : 0.5) ?? 0
        case 4:
            let scaled = Double(Int.random(in: -1_000_000...1_000_000, using: &rng))
            var divisor = 1.0
            for _ in 0..<Int.random(in: 0...8, using: &rng) { divisor *= 10 }
            return JSONNumber(scaled / divisor) ?? 0
        case 5:
            let text = "\(Int.random(in: 1...99_999, using: &rng))e\(Int.random(in: -330...310, using: &rng))"
            return JSONNumber(parsing: text) ?? 0
        default:
            return JSONNumber(Double.random(in: -1e6...1e6, using: &rng)) ?? 0
        }
    }

    mutating func scalar() -> Unicode.Scalar {
        let value: UInt32
        switch Int.random(in: 0..<12, using: &rng) {
        case 0: value = UInt32.random(in: 0..<0x20, using: &rng)
        case 1: value = [0x22, 0x5C, 0x2F, 0x7F, 0x301, 0xFEFF, 0x2028][Int.random(in: 0..<7, using: &rng)]
        case 2: value = UInt32.random(in: 0x80..<0x800, using: &rng)
        case 3: value = UInt32.random(in: 0x800..<0xD800, using: &rng)
        case 4: value = UInt32.random(in: 0xE000...0xFFFF, using: &rng)
        case 5: value = UInt32.random(in: 0x10000...0x10FFFF, using: &rng)
        default: value = UInt32.random(in: 0x20..<0x7F, using: &rng)
        }
        return Unicode.Scalar(value) ?? "?"
    }

    mutating func string() -> String {
        var scalars = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...12, using: &rng) { scalars.append(scalar()) }
        return String(scalars)
    }

    /// Keys from a small alphabet so objects often share prefixes, plus some wild ones.
    mutating func key() -> String {
        if chance(25) { return string() }
        let alphabet: [String] = ["a", "b", "A", "é", "e\u{301}", "\"", "\\", "\u{1}", "😀", "\u{E000}", " "]
        var key = ""
        for _ in 0..<Int.random(in: 0...3, using: &rng) {
            key += alphabet[Int.random(in: 0..<alphabet.count, using: &rng)]
        }
        return key
    }

    // MARK: Texts

    mutating func whitespace(into out: inout [UInt8]) {
        guard chance(30) else { return }
        for _ in 0..<Int.random(in: 1...3, using: &rng) {
            out.append([0x20, 0x09, 0x0A, 0x0D][Int.random(in: 0..<4, using: &rng)])
        }
    }

    mutating func hex4(_ unit: UInt32, into out: inout [UInt8]) {
        let digits = chance(50) ? Array("0123456789abcdef".utf8) : Array("0123456789ABCDEF".utf8)
        out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u")])
        for shift in stride(from: 12, through: 0, by: -4) {
            out.append(digits[Int((unit >> UInt32(shift)) & 0xF)])
        }
    }

    /// Writes `string` as a JSON string literal, escaping each scalar in a random valid way.
    mutating func writeString(_ string: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for scalar in string.unicodeScalars {
            let value = scalar.value
            let short: [UInt32: UInt8] = [
                0x22: UInt8(ascii: "\""), 0x5C: UInt8(ascii: "\\"), 0x2F: UInt8(ascii: "/"), 0x08: UInt8(ascii: "b"),
                0x0C: UInt8(ascii: "f"), 0x0A: UInt8(ascii: "n"), 0x0D: UInt8(ascii: "r"), 0x09: UInt8(ascii: "t"),
            ]
            let mustEscape = value < 0x20 || value == 0x22 || value == 0x5C
            if !mustEscape && chance(70) {
                out.append(contentsOf: String(scalar).utf8)
            } else if let letter = short[value], chance(60) {
                out.append(UInt8(ascii: "\\"))
                out.append(letter)
            } else if value >= 0x10000 {
                let offset = value - 0x10000
                hex4(0xD800 + (offset >> 10), into: &out)
                hex4(0xDC00 + (offset & 0x3FF), into: &out)
            } else {
                hex4(value, into: &out)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Writes a random literal for the same number as the canonical text `text`.
    mutating func writeNumber(_ text: String, into out: inout [UInt8]) {
        var body = Substring(text)
        let negative = body.first == "-"
        if negative { body = body.dropFirst() }
        let isInteger = !body.contains(".") && !body.contains("e")
        if isInteger && body.count > 15 {
            out.append(contentsOf: text.utf8)
            return
        }
        // Significant digits and point position: value = 0.digits × 10^point.
        let parts = body.split(separator: "e", omittingEmptySubsequences: false)
        let exponent = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
        let mantissa = parts[0].split(separator: ".", omittingEmptySubsequences: false)
        let integerPart = String(mantissa[0])
        let fractionPart = mantissa.count > 1 ? String(mantissa[1]) : ""
        var digits = Substring(integerPart + fractionPart)
        var point = integerPart.count + exponent
        while digits.first == "0" {
            digits = digits.dropFirst()
            point -= 1
        }
        while digits.last == "0" { digits = digits.dropLast() }
        if digits.isEmpty {
            let zeros = ["0", "-0", "0.0", "-0.0", "0e5", "0E-3", "-0.000e+12"]
            out.append(contentsOf: zeros[Int.random(in: 0..<zeros.count, using: &rng)].utf8)
            return
        }
        if negative { out.append(UInt8(ascii: "-")) }
        let e = chance(50) ? "e" : "E"
        let padding = String(repeating: "0", count: Int.random(in: 0...2, using: &rng))
        switch Int.random(in: 0..<4, using: &rng) {
        case 0:
            out.append(contentsOf: body.utf8)
        case 1:
            out.append(contentsOf: "0.\(digits)\(padding)\(e)\(point)".utf8)
        case 2:
            let shift = point - digits.count
            out.append(contentsOf: "\(digits)\(e)\(shift >= 0 && chance(50) ? "+" : "")\(shift)".utf8)
        default:
            let first = digits.prefix(1)
            let rest = digits.dropFirst()
            out.append(contentsOf: "\(first).\(rest)\(padding)0\(e)\(point - 1)".utf8)
        }
    }

    /// Writes a random text for `value`: random white space, member order and escapes.
    mutating func write(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let flag): out.append(contentsOf: (flag ? "true" : "false").utf8)
        case .number(let number): writeNumber(number.canonicalText, into: &out)
        case .string(let string): writeString(string, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            whitespace(into: &out)
            for (index, element) in elements.enumerated() {
                if index > 0 {
                    out.append(UInt8(ascii: ","))
                    whitespace(into: &out)
                }
                write(element, into: &out)
                whitespace(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            whitespace(into: &out)
            for (index, member) in object.members.shuffled(using: &rng).enumerated() {
                if index > 0 {
                    out.append(UInt8(ascii: ","))
                    whitespace(into: &out)
                }
                writeString(member.key, into: &out)
                whitespace(into: &out)
                out.append(UInt8(ascii: ":"))
                whitespace(into: &out)
                write(member.value, into: &out)
                whitespace(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    mutating func text(for value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        whitespace(into: &out)
        write(value, into: &out)
        whitespace(into: &out)
        return out
    }

    // MARK: Mutations

    mutating func mutate(_ bytes: [UInt8]) -> [UInt8] {
        var bytes = bytes
        let interesting: [UInt8] = [
            0x22, 0x5C, 0x7B, 0x7D, 0x5B, 0x5D, 0x2C, 0x3A, 0x30, 0x31, 0x2D, 0x2E, 0x65, 0x75, 0x20, 0x00, 0x1F,
            0x80, 0xBF, 0xC0, 0xC3, 0xE0, 0xED, 0xF0, 0xF4, 0xFF, 0x44, 0x64,
        ]
        for _ in 0..<Int.random(in: 1...3, using: &rng) {
            let byte =
                chance(70)
                ? interesting[Int.random(in: 0..<interesting.count, using: &rng)]
                : UInt8.random(in: 0...255, using: &rng)
            let position = Int.random(in: 0...bytes.count, using: &rng)
            switch Int.random(in: 0..<5, using: &rng) {
            case 0 where position < bytes.count: bytes[position] = byte
            case 1 where position < bytes.count: bytes.remove(at: position)
            case 2: bytes.insert(byte, at: position)
            case 3: bytes.removeSubrange(position...)
            default:
                let end = Int.random(in: position...bytes.count, using: &rng)
                bytes.insert(contentsOf: bytes[position..<end], at: position)
            }
        }
        return bytes
    }
}

@Suite struct PropertyTests {
    @Test func randomTextsCanonicalizeToTheValuesCanonicalText() throws {
        let seed = TestSettings.seed
        var random = RandomJSON(seed: seed)
        let cases = TestSettings.cases(2_000)
        for index in 0..<cases {
            let value = random.value(depth: 4)
            let canonical = value.canonicalText
            let text = random.text(for: value)
            let context: Comment = "seed \(seed), case \(index): \(String(decoding: text, as: UTF8.self))"

            let canonicalized = try CanonicalJSON.canonicalize(text)
            #expect(canonicalized == canonical, context)
            #expect(try CanonicalJSON.canonicalize(canonical) == canonical, "idempotent; \(context)")
            #expect(try JSONValue(parsing: text) == value, context)
            #expect(try JSONValue(parsing: canonical) == value, context)
            #expect(try JSONValue(parsing: text).canonicalText == canonical, context)
            #expect(try JSONValue(parsing: prettyPrinted(Array(canonical.utf8))) == value, "pretty; \(context)")
            if canonicalized != canonical { return }
        }
    }

    @Test func mutatedDocumentsNeverCrashAndBothPathsAgree() {
        let seed = TestSettings.seed &+ 1
        var random = RandomJSON(seed: seed)
        let cases = TestSettings.cases(3_000)
        var rejected = 0
        for index in 0..<cases {
            let value = random.value(depth: 3)
            let mutated = random.mutate(random.text(for: value))
            let limits = random.chance(20) ? JSONLimits(maxDepth: 2, maxBytes: 64) : JSONLimits()
            let result = parseBothWays(mutated, limits: limits)
            switch result {
            case .success(let parsed):
                let canonical = parsed.canonicalText
                #expect(
                    (try? CanonicalJSON.canonicalize(canonical)) == canonical,
                    "seed \(seed), case \(index): accepted text must canonicalize idempotently")
            case .failure(let error):
                rejected += 1
                #expect(error.offset >= 0 && error.offset <= max(mutated.count, limits.maxBytes))
                #expect(error.line >= 1 && error.column >= 1)
                #expect(!error.description.isEmpty)
            }
        }
        // The mutations must actually exercise the error paths.
        #expect(rejected > cases / 3, "seed \(seed): only \(rejected) of \(cases) mutations rejected")
    }

    @Test func decimalLiteralsCanonicalizeLikeTheirDouble() throws {
        let seed = TestSettings.seed &+ 2
        var random = RandomJSON(seed: seed)
        for index in 0..<TestSettings.cases(2_000) {
            var digits = ""
            for _ in 0..<Int.random(in: 1...20, using: &random.rng) {
                digits.append(String(Int.random(in: 0...9, using: &random.rng)))
            }
            let split = Int.random(in: 0...digits.count, using: &random.rng)
            let integerPart = digits.prefix(split).drop { $0 == "0" }
            let sign = random.chance(30) ? "-" : ""
            let integer = integerPart.isEmpty ? "0" : String(integerPart)
            let zeros = String(repeating: "0", count: random.chance(30) ? Int.random(in: 1...8, using: &random.rng) : 0)
            let fraction = zeros + (split == digits.count ? "0" : String(digits.dropFirst(split)))
            let padding = random.chance(50) ? "0" : ""
            let exponent = random.chance(50) ? "e\(Int.random(in: -320...300, using: &random.rng))" : ""
            let literal = sign + integer + "." + fraction + padding + exponent
            let double = try #require(Double(literal))
            guard double.isFinite else { continue }
            let expected = try #require(JSONNumber(double)).canonicalText
            let canonical = try CanonicalJSON.canonicalize(literal)
            #expect(canonical == expected, "seed \(seed), case \(index): \(literal)")
            #expect(Double(canonical) == (double == 0 ? 0 : double), "round trip; \(literal)")
        }
    }
}
