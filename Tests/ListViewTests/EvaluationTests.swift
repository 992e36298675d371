import JSON
import ListModel
import ListdTestSupport
import Testing

@testable import ListView

/// `evaluate`, the brute-force view: worked examples, and random lists and
/// views checked against the contract's properties and against the view
/// rebuilt from keys, as a live engine keeps it.
@Suite struct EvaluationTests {
    static func item(_ id: Identifier, _ model: JSONValue) -> ViewItem { ViewItem(id: id, model: Model(model)) }

    /// Two sections of tasks.
    static let tasks: [SourceSection] = [
        SourceSection(
            id: "home", model: ["title": "Home"],
            items: [
                item("dishes", ["status": "open", "due": 3, "who": "Ann"]),
                item("plants", ["status": "done", "due": 1]),
                item("taxes", ["status": "open", "due": 1.5, "who": "bob"]),
            ]),
        SourceSection(id: "empty", model: [:], items: []),
        SourceSection(
            id: "work", model: ["title": "Work"],
            items: [
                item("report", ["status": "open", "due": 2]),
                item("mail", ["status": "blocked"]),
                item("review", ["status": "done", "due": 3]),
            ]),
    ]

    static func shape(_ view: [ViewSection]) -> [String] {
        view.map { section in "\(section.id): " + section.items.map(\.id.rawValue).joined(separator: " ") }
    }

    static func view(_ query: String) throws -> [String] {
        shape(try ViewSpec(parsing: query).evaluate(tasks))
    }

    @Test func withoutParametersTheViewIsTheList() throws {
        #expect(try Self.view("") == ["home: dishes plants taxes", "empty: ", "work: report mail review"])
    }

    @Test func aFilterKeepsEverySection() throws {
        #expect(try Self.view("where=status:open") == ["home: dishes taxes", "empty: ", "work: report"])
        #expect(try Self.view("where=status:gone") == ["home: ", "empty: ", "work: "])
        #expect(try Self.view("q=BOB") == ["home: taxes", "empty: ", "work: "])
        // A missing path never equals, not even null.
        #expect(try Self.view("where=due:null") == ["home: ", "empty: ", "work: "])
    }

    @Test func anOrderSortsWithinEachSection() throws {
        #expect(try Self.view("order=due") == ["home: plants taxes dishes", "empty: ", "work: mail report review"])
        #expect(try Self.view("order=-due") == ["home: dishes taxes plants", "empty: ", "work: review report mail"])
        // Ties by id ascending in both directions.
        #expect(try Self.view("order=status") == ["home: plants dishes taxes", "empty: ", "work: mail review report"])
        #expect(try Self.view("order=-status") == ["home: dishes taxes plants", "empty: ", "work: report review mail"])
    }

    @Test func aGroupMakesOneSectionPerValue() throws {
        let spec = try ViewSpec(parsing: "group=status")
        let view = try spec.evaluate(Self.tasks)
        #expect(
            Self.shape(view) == [
                "\"blocked\": mail", "\"done\": plants review", "\"open\": dishes taxes report",
            ])
        #expect(view[0].model == ["value": "blocked"])
        #expect(
            try Self.view("group=due&order=status") == [
                "null: mail", "1: plants", "1.5: taxes", "2: report", "3: review dishes",
            ])
        #expect(try Self.view("group=who") == ["null: plants report mail review", "\"Ann\": dishes", "\"bob\": taxes"])
    }

    @Test func aWindowCutsInSectionThenItemOrder() throws {
        #expect(try Self.view("limit=2") == ["home: dishes plants", "empty: ", "work: "])
        #expect(try Self.view("limit=4&order=-due") == ["home: dishes taxes plants", "empty: ", "work: review"])
        #expect(try Self.view("limit=3&group=status") == ["\"blocked\": mail", "\"done\": plants review"])
        #expect(try Self.view("limit=10000&group=status&where=status:open") == ["\"open\": dishes taxes report"])
    }

    /// Random lists and views: the result is exactly what the contract says,
    /// property by property, and what keys sorted bytewise give.
    @Test func randomViewsOfRandomLists() throws {
        let seed = SeededGenerator.seed(for: "randomViewsOfRandomLists")
        var values = Values(seed: seed)
        for _ in 0..<SeededGenerator.cases(normal: 3_000, long: 300_000) {
            var sections: [SourceSection] = []
            var next = 0
            for s in 0..<values.int(0...4) {
                let items = (0..<values.int(0...6)).map { _ in
                    next += 1
                    return ViewItem(
                        id: Identifier("i\(values.int(0...999))-\(next)") ?? "x", model: Model(values.model()))
                }
                sections.append(SourceSection(id: Identifier("s\(s)") ?? "x", model: [:], items: items))
            }
            let spec = Self.randomSpec(&values)
            let view = try spec.evaluate(sections)
            try Self.checkContract(spec, sections, view, "\(spec), seed \(seed)")
            #expect(try Self.viewFromKeys(spec, sections) == view, "\(spec), seed \(seed)")
        }
    }

    static func randomSpec(_ values: inout Values) -> ViewSpec {
        let paths: [[String]] = [["status"], ["due"], ["n"], ["tags", "0"], ["missing"]]
        let conditions = (0..<values.int(0...2)).map { _ in
            ViewSpec.Condition(
                path: values.pick(paths),
                value: values.pick([.string("open"), .string("done"), .null, .bool(true), .string("red")]))
        }
        let text: String? = values.int(0...4) == 0 ? values.pick(["o", "E", "RED", "é"]) : nil
        let order: ViewSpec.Order? =
            values.bool() ? ViewSpec.Order(path: values.pick(paths), descending: values.bool()) : nil
        let group: [String]? = values.bool() ? values.pick(paths) : nil
        let limit: Int? = values.bool() ? values.int(1...12) : nil
        return ViewSpec(conditions: conditions, text: text, order: order, group: group, limit: limit)
    }

    /// What a live engine does: the matching items' keys, sorted bytewise, cut
    /// to the window, split into sections by group value or list section.
    static func viewFromKeys(_ spec: ViewSpec, _ sections: [SourceSection]) throws -> [ViewSection] {
        var keyed: [(key: ViewKey, item: ViewItem, section: Int, group: JSONValue?)] = []
        for (s, section) in sections.enumerated() {
            for (i, item) in section.items.enumerated() {
                let model = try item.model.jsonValue()
                guard spec.matches(model) else { continue }
                let key = spec.key(
                    of: model, id: item.id, at: ListPosition(section: Int64(s) * 1000 - 7, item: Int64(i) - 3))
                keyed.append((key, item, s, spec.groupValue(of: model)))
            }
        }
        keyed.sort { $0.key < $1.key }
        let window = keyed.prefix(spec.limit ?? Int.max)
        if spec.group == nil {
            var view = sections.map { ViewSection(id: $0.id.rawValue, model: $0.model, items: []) }
            for entry in window { view[entry.section].items.append(entry.item) }
            return view
        }
        var view: [ViewSection] = []
        for entry in window {
            let id = ViewSpec.sectionID(ofGroup: entry.group ?? .null)
            // By bytes: Swift's String == would join "\"é\"" and "\"e\u{301}\"", two values.
            if !(view.last.map { $0.id.utf8.elementsEqual(id.utf8) } ?? false) {
                view.append(ViewSection(id: id, model: ViewSpec.sectionModel(ofGroup: entry.group ?? .null), items: []))
            }
            view[view.count - 1].items.append(entry.item)
        }
        return view
    }

    /// The contract's sentences, one check each.
    static func checkContract(
        _ spec: ViewSpec, _ sections: [SourceSection], _ view: [ViewSection], _ context: String
    ) throws {
        var all: [(model: JSONValue, id: Identifier, position: ListPosition, section: Identifier)] = []
        for (s, section) in sections.enumerated() {
            for (i, item) in section.items.enumerated() {
                all.append(
                    (try item.model.jsonValue(), item.id, ListPosition(section: Int64(s), item: Int64(i)), section.id))
            }
        }
        let matching = all.filter { spec.matches($0.model) }
        let byID = Dictionary(uniqueKeysWithValues: all.map { ($0.id, $0) })
        let shown = view.flatMap(\.items)
        // Items: only matching ones, each once, as many as the window allows.
        #expect(shown.allSatisfy { spec.matches((try? $0.model.jsonValue()) ?? .null) }, "\(context)")
        #expect(Set(shown.map(\.id)).count == shown.count, "\(context)")
        #expect(shown.count == min(matching.count, spec.limit ?? Int.max), "\(context)")
        // In section order then item order, the view's order holds throughout...
        let placed = shown.compactMap { byID[$0.id] }
        for (a, b) in zip(placed, placed.dropFirst()) {
            #expect(spec.precedes((a.model, a.id, a.position), (b.model, b.id, b.position)), "\(context)")
        }
        // ...and the window is its beginning: every match left out comes after every one shown.
        let left = matching.filter { m in !shown.contains { $0.id == m.id } }
        if let last = placed.last {
            #expect(
                left.allSatisfy { spec.precedes((last.model, last.id, last.position), ($0.model, $0.id, $0.position)) },
                "\(context)")
        }
        if spec.group == nil {
            // The list's sections, all of them, each item in its own.
            #expect(view.map(\.id) == sections.map(\.id.rawValue), "\(context)")
            #expect(zip(view, sections).allSatisfy { $0.model == $1.model }, "\(context)")
            for section in view {
                #expect(section.items.allSatisfy { byID[$0.id]?.section.rawValue == section.id }, "\(context)")
            }
        } else {
            // One section per group value, ascending, none empty, named by canonical text.
            #expect(view.allSatisfy { !$0.items.isEmpty }, "\(context)")
            let groups = try view.map { section in try JSONValue(parsing: section.id) }
            for (a, b) in zip(groups, groups.dropFirst()) { #expect(ValueOrder.compare(a, b) < 0, "\(context)") }
            for (section, value) in zip(view, groups) {
                #expect(section.model == Model(["value": value]), "\(context)")
                for item in section.items {
                    let model = byID[item.id]?.model ?? .null
                    #expect(spec.groupValue(of: model)?.canonicalText == section.id, "\(context)")
                }
            }
        }
    }
}
