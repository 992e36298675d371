import Foundation
import JSON
import ListdTestSupport
import Testing

@testable import ListView

/// Parsing view parameters, their errors, and the canonical query.
@Suite struct ViewSpecTests {
    static func parse(_ query: String) -> Result<ViewSpec, ViewSpecError> {
        Result { () throws(ViewSpecError) -> ViewSpec in try ViewSpec(parsing: query) }
    }

    static func error(_ query: String) -> String? {
        if case .failure(let error) = parse(query) { return error.detail }
        return nil
    }

    @Test func theContractsExampleParses() throws {
        let spec = try ViewSpec(parsing: "where=done:false&order=due")
        #expect(spec.conditions == [ViewSpec.Condition(path: ["done"], value: false)])
        #expect(spec.order == ViewSpec.Order(path: ["due"]))
        #expect(spec.group == nil && spec.limit == nil && spec.text == nil)
        #expect(spec.canonicalQuery == "where=done%3Afalse&order=due")
        #expect(!spec.isWholeList)
    }

    @Test func everyParameter() throws {
        let spec = try ViewSpec(
            queryItems: [
                (name: "limit", value: "50"), (name: "where", value: "tags.0:red"), (name: "group", value: "status"),
                (name: "order", value: "-score.total"), (name: "q", value: "Milk"), (name: "since", value: "42"),
                (name: "where", value: "n:3"),
            ])
        #expect(
            spec.conditions == [
                ViewSpec.Condition(path: ["n"], value: 3), ViewSpec.Condition(path: ["tags", "0"], value: "red"),
            ])
        #expect(spec.order == ViewSpec.Order(path: ["score", "total"], descending: true))
        #expect(spec.group == ["status"])
        #expect(spec.limit == 50)
        #expect(spec.text == "Milk")
        #expect(spec.canonicalQuery == "where=n%3A3&where=tags.0%3Ared&q=Milk&order=-score.total&group=status&limit=50")
    }

    /// A `where` value is a JSON scalar literal when it is one, else a string, as in item queries.
    @Test(arguments: [
        ("done:false", JSONValue.bool(false)), ("n:3", 3), ("n:1.0", 1), ("n:-0", 0), ("s:\"3\"", "3"),
        ("s:open", "open"), ("s:", ""), ("x:null", .null), ("t:[1]", "[1]"), ("o:{}", "{}"), ("s: 3", 3),
        ("a:b:c", "b:c"), ("s:\"unterminated", "\"unterminated"),
    ])
    func whereValues(text: String, value: JSONValue) throws {
        let condition = try ViewSpec.Condition(parsing: text)
        #expect(condition.value == value)
        #expect(condition.value.canonicalText == value.canonicalText)
    }

    @Test func wholeList() throws {
        #expect(try ViewSpec(parsing: "").isWholeList)
        #expect(try ViewSpec(parsing: "q=").isWholeList)
        #expect(try ViewSpec(queryItems: [(name: "since", value: "3"), (name: "timeout", value: "5")]).isWholeList)
        #expect(ViewSpec.wholeList.canonicalQuery == "")
        #expect(try !ViewSpec(parsing: "limit=3").isWholeList)
    }

    @Test func viewParameterNames() {
        for name in ["where", "q", "order", "group", "limit"] { #expect(ViewSpec.isViewParameter(name)) }
        for name in ["since", "timeout", "epoch", "maxChanges", "Where", "after", "section", ""] {
            #expect(!ViewSpec.isViewParameter(name))
        }
        #expect(ViewSpec.parameterNames.allSatisfy(ViewSpec.isViewParameter))
    }

    @Test(arguments: [
        ("order=a..b", "order has an empty field name in \"a..b\""),
        ("order=-a..b", "order has an empty field name in \"-a..b\""),
        ("order=", "order needs a field path, as in order=due or order=-due; got \"\""),
        ("order=-", "order needs a field path, as in order=due or order=-due; got \"-\""),
        ("group=.a", "group has an empty field name in \".a\""),
        ("group=", "group needs a field path, as in group=status; got \"\""),
        ("limit=abc", "limit must be an integer from 1 to 10000; got \"abc\""),
        ("limit=0", "limit must be an integer from 1 to 10000; got \"0\""),
        ("limit=10001", "limit must be an integer from 1 to 10000; got \"10001\""),
        ("limit=-1", "limit must be an integer from 1 to 10000; got \"-1\""),
        ("limit=%2B5", "limit must be an integer from 1 to 10000; got \"+5\""),
        ("limit=", "limit must be an integer from 1 to 10000; got \"\""),
        ("limit=99999999999999999999", "limit must be an integer from 1 to 10000; got \"99999999999999999999\""),
        ("where=done", "where must be path:value, as in where=done:false; got \"done\""),
        ("where=:x", "where has an empty field name in \":x\""),
        ("where=a..b:x", "where has an empty field name in \"a..b:x\""),
        ("order=a&order=b", "order is given more than once; a view takes one order"),
        ("group=a&group=a", "group is given more than once; a view takes one group"),
        ("limit=1&limit=2", "limit is given more than once; a view takes one limit"),
        ("q=a&q=", "q is given more than once; a view takes one q"),
        ("since=3", "view has an unknown parameter \"since\"; a view takes where, q, order, group and limit"),
        (
            "where=a:%zz",
            "view has a malformed percent-encoding (a % not followed by two hex digits, or bytes that are not UTF-8) in \"where=a:%zz\""
        ),
        (
            "q=%FF",
            "view has a malformed percent-encoding (a % not followed by two hex digits, or bytes that are not UTF-8) in \"q=%FF\""
        ),
        (
            "q=%4",
            "view has a malformed percent-encoding (a % not followed by two hex digits, or bytes that are not UTF-8) in \"q=%4\""
        ),
    ])
    func errorsNameTheParameterAndQuoteTheText(query: String, detail: String) {
        #expect(Self.error(query) == detail)
    }

    @Test func errorsNameTheirParameter() {
        let cases = [
            ("where=x", "where"), ("q=1&q=2", "q"), ("order=", "order"), ("group=", "group"), ("limit=x", "limit"),
            ("a=1", "view"), ("%", "view"),
        ]
        for (query, parameter) in cases {
            if case .failure(let error) = Self.parse(query) {
                #expect(error.parameter == parameter, "\(query)")
            } else {
                Issue.record("\(query) parsed")
            }
        }
    }

    @Test func quotedTextIsTruncated() {
        let long = String(repeating: "x", count: 500)
        #expect(Self.error("order=a..\(long)") == "order has an empty field name in \"a..\(long.prefix(77))\"")
    }

    @Test func theQueryStringIsPercentDecodedWithPlusAsAPlus() throws {
        let spec = try ViewSpec(parsing: "q=a+b%20c&where=na%6De:J%C3%A9r%C3%B4me&&order=%2Dx")
        #expect(spec.text == "a b c", "+ is a space, as in a URL's query")
        #expect(spec.conditions == [ViewSpec.Condition(path: ["name"], value: "Jérôme")])
        // An encoded "-" is still the descending sign: the value is decoded first.
        #expect(spec.order == ViewSpec.Order(path: ["x"], descending: true))
    }

    @Test func aPairWithoutEqualsHasAnEmptyValue() {
        #expect(Self.error("group") == "group needs a field path, as in group=status; got \"\"")
    }

    @Test func conditionsAreSortedAndUnique() throws {
        let a = try ViewSpec(parsing: "where=b:1&where=a:2&where=b:1.0")
        let b = try ViewSpec(parsing: "where=a:2&where=b:1")
        #expect(a == b)
        #expect(a.conditions.count == 2)
        #expect(a.canonicalQuery == "where=a%3A2&where=b%3A1")
        #expect(Set([a, b]).count == 1)
    }

    /// JSON keeps "é" and "e\u{301}" apart, so the spec does too (Swift's `==` on
    /// String would join them).
    @Test func canonicallyEquivalentPathsAreDifferentViews() throws {
        let composed = try ViewSpec(parsing: "where=caf%C3%A9:1")
        let decomposed = try ViewSpec(parsing: "where=cafe%CC%81:1")
        #expect(composed != decomposed)
        #expect(composed.conditions[0] != decomposed.conditions[0])
        #expect(ViewSpec.Order(path: ["é"]) != ViewSpec.Order(path: ["e\u{301}"]))
    }

    /// A string value is written bare when it reads back as itself, quoted otherwise.
    @Test func whereValuesAreWrittenSoTheyReadBack() {
        let cases: [(JSONValue, String)] = [
            ("open", "where=s%3Aopen"), ("3", "where=s%3A%223%22"), ("true", "where=s%3A%22true%22"),
            (3, "where=s%3A3"), (.null, "where=s%3Anull"), ("\"q\"", "where=s%3A%22%5C%22q%5C%22%22"),
            ("", "where=s%3A"),
        ]
        for (value, query) in cases {
            let spec = ViewSpec(conditions: [ViewSpec.Condition(path: ["s"], value: value)])
            #expect(spec.canonicalQuery == query)
        }
    }

    /// Every spec survives its canonical query, read as the view string, or
    /// decoded as a URL's query is (`+` as a space: the canonical text has none).
    @Test func canonicalQueriesRoundTrip() throws {
        let seed = SeededGenerator.seed(for: "canonicalQueriesRoundTrip")
        var values = Values(seed: seed)
        for _ in 0..<SeededGenerator.cases(normal: 5_000, long: 500_000) {
            let spec = values.spec()
            let query = spec.canonicalQuery
            #expect(query.utf8.allSatisfy { Self.canonicalByte($0) }, "\(query)")
            let parsed = try ViewSpec(parsing: query)
            #expect(parsed == spec, "\(query) read back as \(parsed.canonicalQuery), seed \(seed)")
            #expect(parsed.conditions == spec.conditions && parsed.order == spec.order, "\(query), seed \(seed)")
            #expect(parsed.text == spec.text && parsed.limit == spec.limit, "\(query), seed \(seed)")
            #expect(parsed.group.map { $0.map { Array($0.utf8) } } == spec.group.map { $0.map { Array($0.utf8) } })
            let decoded = try ViewSpec.decodeQuery(query.replacingOccurrences(of: "+", with: " "))
            #expect(try ViewSpec(queryItems: decoded) == spec, "\(query), seed \(seed)")
            // The same view, its conditions given in another order and repeated.
            let shuffled = ViewSpec(
                conditions: (spec.conditions + spec.conditions).shuffled(using: &values.generator), text: spec.text,
                order: spec.order, group: spec.group, limit: spec.limit)
            #expect(shuffled == spec && shuffled.canonicalQuery == query, "seed \(seed)")
        }
    }

    static func canonicalByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"), UInt8(ascii: "%"), UInt8(ascii: "="), UInt8(ascii: "&"):
            true
        default:
            false
        }
    }
}

@Suite struct ViewNarrowingTests {
    private func spec(_ query: String) throws -> ViewSpec { try ViewSpec(parsing: query) }

    @Test func aClientAddsFiltersAndArrangesAViewWithoutAWindow() throws {
        let forced = try spec("where=owner:u42")
        let narrowed = try forced.narrowed(by: try spec("where=done:false&order=-due&group=status&limit=20")).get()
        #expect(narrowed == (try spec("where=owner:u42&where=done:false&order=-due&group=status&limit=20")))
        #expect(try forced.narrowed(by: .wholeList).get() == forced)
    }

    @Test func aClientCannotReplaceTheViewsOwnOrderGroupOrText() throws {
        let forced = try spec("where=owner:u42&order=due&group=status&q=milk")
        for client in ["order=-due", "group=kind", "q=bread"] {
            #expect(throws: ViewSpec.NarrowingRefusal.self) { try forced.narrowed(by: try spec(client)).get() }
        }
        #expect(try forced.narrowed(by: try spec("order=due&q=milk")).get() == forced)
    }

    @Test func aWindowMayOnlyShrink() throws {
        let forced = try spec("where=owner:u42&order=-score&limit=50")
        #expect(
            try forced.narrowed(by: try spec("limit=10")).get() == (try spec("where=owner:u42&order=-score&limit=10")))
        #expect(try forced.narrowed(by: try spec("limit=500")).get() == forced)
        #expect(try forced.narrowed(by: try spec("where=owner:u42")).get() == forced)
        for client in ["where=done:false", "order=score", "group=status", "q=x"] {
            #expect(throws: ViewSpec.NarrowingRefusal.self) { try forced.narrowed(by: try spec(client)).get() }
        }
    }

    @Test func narrowingNeverLetsThroughAnItemTheForcedViewHides() throws {
        // The oracle: every item of the narrowed view (without windows, whose
        // membership is the filter) passes the forced view's filter.
        let forced = try spec("where=owner:u42")
        let client = try spec("where=done:false&q=a")
        let narrowed = try forced.narrowed(by: client).get()
        for condition in forced.conditions { #expect(narrowed.conditions.contains(condition)) }
        for condition in client.conditions { #expect(narrowed.conditions.contains(condition)) }
        #expect(narrowed.text == "a")
    }
}
