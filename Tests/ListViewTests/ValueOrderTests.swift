import JSON
import ListModel
import ListdTestSupport
import Testing

@testable import ListView

/// The contract's order on JSON values (`ValueOrder`) and its byte encoding
/// (`ViewKey`), each against an oracle of its own.
@Suite struct ValueOrderTests {
    static func number(_ text: String) -> JSONValue {
        JSONNumber(parsing: text).map { .number($0) } ?? .string("not a number: \(text)")
    }

    /// Strictly increasing, each kind after the last, as the contract lists them.
    static let ascending: [JSONValue] = [
        .null, false, true,
        number("-1e+300"), number("-123456789012345678901234567891"), number("-123456789012345678901234567890"),
        number("-1.5"), number("-1"), number("-0.5"), number("-1e-7"), 0, number("5e-324"), number("1e-7"),
        number("0.5"), 1, number("1.5"), 2, 10, number("9007199254740992"), number("9007199254740993"),
        number("1000000000000000000000"), number("1e21"), number("123456789012345678901234567890"),
        number("123456789012345678901234567891"), number("1.5e300"),
        "", "\0", "\u{1}", "A", "Z", "a", "ab", "b", "e", "e\u{301}", "z", "\u{7F}", "\u{80}", "é", "\u{E000}",
        "\u{FFFF}", "\u{1F600}", "\u{10FFFF}",
        [], [.null], [false], [0], [0, 0], [1], ["a"], [[]], [[0]], [["a": 0]],
        [:], ["": 0], ["a": .null], ["a": 1], ["a": 1, "b": 0], ["a": 2], ["a": "x"], ["a": []], ["b": 0],
        ["é": 0],
    ]

    @Test func theContractsExamplesAreInOrder() {
        for (i, a) in Self.ascending.enumerated() {
            for (j, b) in Self.ascending.enumerated() {
                #expect(sign(ValueOrder.compare(a, b)) == sign(i - j), "\(a.canonicalText) vs \(b.canonicalText)")
                let key = sign(ViewKey.compare(ViewKey.encoding(of: a), ViewKey.encoding(of: b)))
                #expect(key == sign(i - j), "key of \(a.canonicalText) vs \(b.canonicalText)")
                let down = sign(
                    ViewKey.compare(
                        ViewKey.encoding(of: a, descending: true), ViewKey.encoding(of: b, descending: true)))
                #expect(down == sign(j - i), "descending key of \(a.canonicalText) vs \(b.canonicalText)")
            }
        }
    }

    @Test func missingIsNullAndSpellingsOfOneNumberAreOne() {
        #expect(ValueOrder.compare(nil, .null) == 0)
        #expect(ViewKey.encoding(of: nil) == ViewKey.encoding(of: .null))
        for text in ["1.0", "1e0", "10e-1", "0.1e1"] {
            #expect(ValueOrder.compare(Self.number(text), 1) == 0, "\(text)")
            #expect(ViewKey.encoding(of: Self.number(text)) == ViewKey.encoding(of: 1), "\(text)")
        }
        #expect(ValueOrder.compare(Self.number("-0"), 0) == 0)
    }

    /// Numbers against an oracle that writes both out at a common scale, and
    /// against Double where the Doubles differ (rounding keeps order, so a
    /// smaller Double means a smaller number).
    @Test func numbersCompareByExactValue() {
        let seed = SeededGenerator.seed(for: "numbersCompareByExactValue")
        var values = Values(seed: seed)
        for _ in 0..<SeededGenerator.cases(normal: 20_000, long: 2_000_000) {
            let a = values.number()
            let b = values.number()
            let exact = ExactNumber.compare(a.canonicalText, b.canonicalText)
            let order = sign(ValueOrder.compare(.number(a), .number(b)))
            if exact != 0 {
                #expect(order == exact, "\(a) vs \(b), seed \(seed)")
            } else {
                // Equal numbers are one value unless one is written out and one has an exponent.
                #expect((order == 0) == (a == b), "\(a) vs \(b), seed \(seed)")
            }
            if let x = a.double, let y = b.double, x != y {
                #expect(order == (x < y ? -1 : 1), "\(a) vs \(b) as Doubles, seed \(seed)")
            }
            let key = sign(ViewKey.compare(ViewKey.encoding(of: .number(a)), ViewKey.encoding(of: .number(b))))
            #expect(key == order, "key of \(a) vs \(b), seed \(seed)")
        }
    }

    /// Strings by code points: the oracle compares arrays of Unicode scalar values.
    @Test func stringsCompareByCodePoints() {
        let seed = SeededGenerator.seed(for: "stringsCompareByCodePoints")
        var values = Values(seed: seed)
        for _ in 0..<SeededGenerator.cases(normal: 20_000, long: 1_000_000) {
            let a = values.string(maxPieces: 4)
            let b = values.string(maxPieces: 4)
            let x = a.unicodeScalars.map(\.value)
            let y = b.unicodeScalars.map(\.value)
            let oracle = x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
            #expect(sign(ValueOrder.compare(.string(a), .string(b))) == oracle, "\(x) vs \(y), seed \(seed)")
            let key = sign(ViewKey.compare(ViewKey.encoding(of: .string(a)), ViewKey.encoding(of: .string(b))))
            #expect(key == oracle, "key of \(x) vs \(y), seed \(seed)")
        }
    }

    /// Random nested values: the key's bytes order them as `ValueOrder` does, in
    /// both directions, and the order's ties are exactly equal values.
    @Test func keysOrderValuesAsTheComparatorDoes() {
        let seed = SeededGenerator.seed(for: "keysOrderValuesAsTheComparatorDoes")
        var values = Values(seed: seed)
        for _ in 0..<SeededGenerator.cases(normal: 30_000, long: 2_000_000) {
            let a = values.value()
            let b = values.bool() ? values.value() : Self.mutate(a, &values)
            let order = sign(ValueOrder.compare(a, b))
            #expect(order == -sign(ValueOrder.compare(b, a)), "antisymmetry: \(a.canonicalText) vs \(b.canonicalText)")
            #expect((order == 0) == (a == b), "ties are equal values: \(a.canonicalText) vs \(b.canonicalText)")
            let up = sign(ViewKey.compare(ViewKey.encoding(of: a), ViewKey.encoding(of: b)))
            let down = sign(
                ViewKey.compare(ViewKey.encoding(of: a, descending: true), ViewKey.encoding(of: b, descending: true)))
            #expect(up == order, "key of \(a.canonicalText) vs \(b.canonicalText), seed \(seed)")
            #expect(down == -order, "descending key of \(a.canonicalText) vs \(b.canonicalText), seed \(seed)")
        }
    }

    /// Sorting by the comparator is a total order: sorted triples are transitive.
    @Test func theOrderIsTransitive() {
        let seed = SeededGenerator.seed(for: "theOrderIsTransitive")
        var values = Values(seed: seed)
        for _ in 0..<SeededGenerator.cases(normal: 2_000, long: 100_000) {
            let sorted = (0..<12).map { _ in values.value(depth: 2) }.sorted { ValueOrder.compare($0, $1) < 0 }
            for i in sorted.indices {
                for j in sorted.indices where i < j {
                    #expect(ValueOrder.compare(sorted[i], sorted[j]) <= 0, "seed \(seed)")
                }
            }
        }
    }

    /// A value close to `value`: one leaf changed, an element added or dropped.
    static func mutate(_ value: JSONValue, _ values: inout Values) -> JSONValue {
        switch value {
        case .array(var elements):
            if elements.isEmpty || values.bool() {
                elements.append(values.value(depth: 1))
            } else {
                let index = values.int(0...(elements.count - 1))
                elements[index] = mutate(elements[index], &values)
            }
            return .array(elements)
        case .object(let object):
            var members = object.members.map { ($0.key, $0.value) }
            if members.isEmpty || values.bool() {
                members.append((values.pick(Values.keys), values.value(depth: 1)))
            } else {
                let index = values.int(0...(members.count - 1))
                members[index].1 = mutate(members[index].1, &values)
            }
            return .object(JSONObject(members))
        case .string(let string):
            return .string(values.bool() ? string + values.pick(Values.stringPieces) : String(string.dropLast()))
        default:
            return values.bool() ? value : values.value(depth: 0)
        }
    }

    @Test func groupBoundsEncloseTheirGroupsKeys() throws {
        let spec = try ViewSpec(parsing: "group=status&order=-due")
        let groups: [JSONValue] = [.null, false, 0, 1, "a", "ab", [], ["a": 1]]
        var values = Values(seed: 7)
        for (g, group) in groups.enumerated() {
            for _ in 0..<50 {
                let model: JSONValue = .object(JSONObject([("status", group), ("due", values.value(depth: 1))]))
                let key = spec.key(of: model, id: "i", at: ListPosition(section: 0, item: 0))
                for (h, other) in groups.enumerated() {
                    let lower = ViewKey.lowerBound(group: other)
                    let upper = ViewKey.upperBound(group: other)
                    #expect((lower <= key) == (g >= h), "\(group) vs lower bound of \(other)")
                    #expect((key < upper) == (g <= h), "\(group) vs upper bound of \(other)")
                }
            }
        }
    }

    @Test func sectionBoundsEncloseTheirSectionsKeys() throws {
        let spec = try ViewSpec(parsing: "order=n")
        for section in Int64(-2)...2 {
            for n in [JSONValue.null, 1, "z", [[]]] {
                let key = spec.key(of: ["n": n], id: "i", at: ListPosition(section: section, item: 5))
                for other in Int64(-2)...2 {
                    #expect((ViewKey.lowerBound(section: other) <= key) == (section >= other))
                    #expect((key < ViewKey.upperBound(section: other)) == (section <= other))
                }
            }
        }
    }

    /// Whole keys against the direct comparison, over random views and items:
    /// section, order (either direction), then id ascending.
    @Test func itemKeysOrderItemsAsTheViewDoes() {
        let seed = SeededGenerator.seed(for: "itemKeysOrderItemsAsTheViewDoes")
        var values = Values(seed: seed)
        let ids: [Identifier] = ["a", "b", "a0", "B", "z", "a.b", "~"]
        for _ in 0..<SeededGenerator.cases(normal: 5_000, long: 300_000) {
            var spec = values.spec()
            if values.bool() {
                spec = ViewSpec(
                    conditions: spec.conditions, text: spec.text,
                    order: ViewSpec.Order(path: ["n"], descending: values.bool()),
                    group: values.bool() ? ["status"] : nil, limit: spec.limit)
            }
            let items = (0..<6).map { _ in
                (
                    model: values.model(), id: values.pick(ids),
                    position: ListPosition(section: Int64(values.int(-2...2)), item: Int64(values.int(0...3)))
                )
            }
            for a in items {
                for b in items {
                    let keys =
                        spec.key(of: a.model, id: a.id, at: a.position)
                        < spec.key(of: b.model, id: b.id, at: b.position)
                    #expect(keys == spec.precedes(a, b), "\(spec): \(a) vs \(b), seed \(seed)")
                }
            }
        }
    }
}
