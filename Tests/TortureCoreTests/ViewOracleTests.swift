import JSON
import ListModel
import ListView
import ListWire
import ListdTestSupport
import SectionDiff
import Testing

@testable import TortureCore

/// The view oracle against the contract's examples, against listd's own
/// evaluator on seeded random lists, and fed to the ledger with a wrong view.
@Suite struct ViewOracleTests {
    func list(_ sections: [(String, [(String, String)])], version: Int64 = 7) -> ListState {
        ListState(
            id: "l", name: "l", epoch: "e1", version: version,
            sections: sections.map { section in
                ArraySection(
                    model: JSONEntry(id: section.0, model: JSONText("{}")),
                    items: section.1.map { JSONEntry(id: $0.0, model: JSONText($0.1)) })
            })
    }

    func shape(_ state: ListState) -> [String] {
        state.sections.map { "\($0.model.id):" + $0.items.map(\.id).joined(separator: ",") }
    }

    let sample: [(String, [(String, String)])] = [
        ("s0", [("a", #"{"g":1,"r":2}"#), ("b", #"{"g":0,"r":5}"#), ("c", #"{"g":1,"r":5}"#)]),
        ("s1", []),
        ("s2", [("d", #"{"g":2}"#), ("e", #"{"g":1,"r":"x"}"#)]),
    ]

    @Test func filterOrderAndWindowKeepTheListsSections() throws {
        let state = list(sample)
        let filtered = try #require(ViewOracle(query: "where=g:1"))
        #expect(shape(filtered.evaluate(state)) == ["s0:a,c", "s1:", "s2:e"])
        // Descending by r, ties by id ascending, within each section; missing r is null, smallest.
        let ordered = try #require(ViewOracle(query: "order=-r"))
        #expect(shape(ordered.evaluate(state)) == ["s0:b,c,a", "s1:", "s2:e,d"])
        // The window counts in section order: sections past its edge stay, empty.
        let window = try #require(ViewOracle(query: "order=-r&limit=2"))
        #expect(shape(window.evaluate(state)) == ["s0:b,c", "s1:", "s2:"])
        let text = try #require(ViewOracle(query: "q=X"))
        #expect(shape(text.evaluate(state)) == ["s0:", "s1:", "s2:e"])
    }

    @Test func groupsAreValuesInValueOrderAndLeaveWithTheirLastItem() throws {
        let state = list(sample)
        let grouped = try #require(ViewOracle(query: "group=g"))
        let view = grouped.evaluate(state)
        #expect(shape(view) == ["0:b", "1:a,c,e", "2:d"])
        #expect(view.sections[1].model.model.text == #"{"value":1}"#)
        let window = try #require(ViewOracle(query: "group=r&limit=3"))
        // r: missing (null) < 2 < 5 < "x"; the window takes d, a, then b (ties by list order).
        #expect(shape(window.evaluate(state)) == ["null:d", "2:a", "5:b"])
    }

    @Test func valuesOrderAsTheContractSays() {
        let ascending: [JSONValue] = [
            .null, .bool(false), .bool(true), JSONValue.of("-2"), JSONValue.of("1.5"), JSONValue.of("10"),
            .string("B"), .string("a"), .string("é"), JSONValue.of("[1]"), JSONValue.of("[1,0]"), JSONValue.of("{}"),
        ]
        for (i, a) in ascending.enumerated() {
            for (j, b) in ascending.enumerated() {
                #expect(ViewOracle.compare(a, b) == (i == j ? 0 : (i < j ? -1 : 1)), "\(a) vs \(b)")
            }
        }
    }

    /// The oracle and listd's `ViewSpec.evaluate`, written apart, agree on seeded random lists.
    @Test(arguments: TorturePlan.viewQueries + ["group=g&where=r:1", "order=p&q=w1", "limit=1"])
    func theOracleAgreesWithListdsEvaluator(query: String) throws {
        let oracle = try #require(ViewOracle(query: query))
        let spec = try ViewSpec(parsing: query)
        var random = SeededGenerator(seed: UInt64(query.utf8.count) &* 7919)
        for _ in 0..<200 {
            var sections: [(String, [(String, String)])] = []
            var serial = 0
            for s in 0..<Int.random(in: 0...3, using: &random) {
                let items = (0..<Int.random(in: 0...6, using: &random)).map { _ -> (String, String) in
                    serial += 1
                    let g = Int.random(in: 0...2, using: &random)
                    let r = Int.random(in: 0...3, using: &random)
                    let missing = Int.random(in: 0..<8, using: &random) == 0
                    return (
                        "i\(serial)",
                        missing ? #"{"p":"w\#(g)-\#(serial)"}"# : #"{"g":\#(g),"p":"w\#(r)-\#(serial)","r":\#(r)}"#
                    )
                }
                sections.append(("s\(s)", items))
            }
            let state = list(sections)
            let source = try state.sections.map { section in
                SourceSection(
                    id: try #require(Identifier(section.model.id)), model: .emptyObject,
                    items: try section.items.map {
                        ViewItem(id: try #require(Identifier($0.id)), model: Model(JSONValue.of($0.model.text)))
                    })
            }
            let theirs = try spec.evaluate(source).map { section in
                "\(section.id):" + section.items.map(\.id.rawValue).joined(separator: ",")
            }
            #expect(shape(oracle.evaluate(state)) == theirs, "\(query) on \(shape(state))")
        }
    }

    @Test func aViewStateOtherThanTheOraclesIsAViolationWhicheverIsSeenFirst() throws {
        let state = list(sample)
        let view = try #require(ViewOracle(query: "where=g:1"))
        let right = view.evaluate(state)
        var wrong = right
        wrong.sections[0].items.removeLast()

        let ledger = Ledger()
        ledger.observe(state, source: "list follower")
        ledger.observe(right, source: "view follower", view: view)
        #expect(ledger.violationCount == 0)
        ledger.observe(wrong, source: "another view follower", view: view)
        // Two followers of one view disagree, and one is not the oracle's view.
        #expect(ledger.violationCount == 2)

        // The view state first, the list's state at that version later.
        let later = Ledger()
        later.observe(wrong, source: "view follower", view: view)
        #expect(later.violationCount == 0)
        later.observe(state, source: "list follower")
        #expect(later.violationCount == 1)
        #expect(later.summary.contains { $0.hasPrefix("FAIL \(Invariant.viewsMatchOracle.rawValue)") })
    }

    @Test func plansDrawViewFollowersFromTheSeedOnViewsTheOracleReads() {
        let plan = TorturePlan(seed: 9, seconds: 600, store: .sqlite, instances: 1)
        #expect(plan == TorturePlan(seed: 9, seconds: 600, store: .sqlite, instances: 1))
        #expect(!plan.viewFollowers.isEmpty)
        #expect(plan.viewFollowers.allSatisfy { plan.lists.contains($0.list) && ViewOracle(query: $0.query) != nil })
    }
}

extension JSONValue {
    static func of(_ text: String) -> JSONValue { (try? JSONValue(parsing: text)) ?? .null }
}
