import Foundation
import JSON
import ListModel
import ListStore
import ListdTestSupport
import Testing

/// An item query's work per request is bounded by
/// ``StoreConfiguration/itemQueryBudget`` whatever the list's size and
/// however rarely its filter matches, and following `next` still finds every
/// match exactly once.
@Suite struct BoundedItemQueryTests {
    static let budget = 1_000
    static let itemCount = 20_000

    struct Item {
        var section: Identifier
        var id: Identifier
        var k: String
        var rare: Bool
        var text: String
        var model: Model
    }

    /// 20,000 items in random sections (some empty) with `k` mostly "x", one
    /// in 10,000 `rare` (and at least two), and strings some `q`s find.
    static func randomList(seed: UInt64) -> (sections: [NewSection], items: [Item]) {
        var rng = SeededGenerator(seed: seed)
        var sections: [NewSection] = []
        var items: [Item] = []
        var made = 0
        var sectionIndex = 0
        let forced = Set([Int.random(in: 0..<itemCount, using: &rng), Int.random(in: 0..<itemCount, using: &rng)])
        while made < itemCount {
            let size = min(itemCount - made, Bool.random(using: &rng) ? 0 : Int.random(in: 1...1_500, using: &rng))
            let sectionID = Identifier("s\(sectionIndex)")!
            sectionIndex += 1
            var section = NewSection(id: sectionID)
            for _ in 0..<size {
                let k = Int.random(in: 0..<20, using: &rng) == 0 ? "y" : "x"
                let rare = forced.contains(made) || Int.random(in: 0..<10_000, using: &rng) == 0
                let roll = Int.random(in: 0..<100, using: &rng)
                let text = forced.contains(made) ? "uniq common" : roll < 30 ? "common" : roll < 32 ? "uniq" : "other"
                let model = Model(["k": .string(k), "rare": .bool(rare), "t": .string(text)])
                let itemID = Identifier("i\(made)")!
                section.items.append(NewItem(id: itemID, model: model))
                items.append(Item(section: sectionID, id: itemID, k: k, rare: rare, text: text, model: model))
                made += 1
            }
            sections.append(section)
        }
        return (sections, items)
    }

    static func condition(_ path: String, _ value: JSONValue) -> ItemQuery.Condition {
        ItemQuery.Condition(path: [path], value: value)
    }

    /// Budgets of one row and up, spent on empty sections, on a section's
    /// first item, on a miss or on a match: every walk still ends, finding
    /// every match once.
    @Test(arguments: StoreKind.tested)
    func tinyBudgetsStillWalkEveryMatch(_ kind: StoreKind) async throws {
        let shape = [0, 0, 2, 0, 3, 1, 0, 0, 4, 0]
        var sections: [NewSection] = []
        var expected: [(id: Identifier, odd: Bool)] = []
        var made = 0
        for (index, size) in shape.enumerated() {
            var section = NewSection(id: Identifier("s\(index)")!)
            for _ in 0..<size {
                let itemID = Identifier("i\(made)")!
                section.items.append(NewItem(id: itemID, model: Model(["odd": .bool(made % 2 == 1)])))
                expected.append((itemID, made % 2 == 1))
                made += 1
            }
            sections.append(section)
        }
        for budget in 1...6 {
            var configuration = StoreConfiguration(fullSync: false)
            configuration.itemQueryBudget = budget
            try await withStore(kind, configuration) { store in
                let list = try await store.createList(id: id("l"), name: "", sections: sections, indexes: []).id
                for (what, query, oracle) in [
                    ("no filter", ItemQuery(), { (_: Bool) in true }),
                    ("odd:true", ItemQuery(conditions: [Self.condition("odd", true)]), { $0 }),
                ] {
                    for limit in 1...3 {
                        var found: [Identifier] = []
                        var after: String?
                        var pages = 0
                        repeat {
                            var page = query
                            page.limit = limit
                            page.after = after
                            let answer = try await store.items(of: list, query: page)
                            #expect(answer.examined <= budget)
                            found += answer.entries.map(\.item.id)
                            after = answer.nextCursor
                            pages += 1
                        } while after != nil && pages < 1_000
                        #expect(
                            found == expected.filter { oracle($0.odd) }.map(\.id),
                            "\(kind) \(what), budget \(budget), limit \(limit)")
                    }
                }
            }
        }
    }

    @Test(arguments: StoreKind.tested)
    func everyPageStaysWithinTheBudgetAndAWalkFindsEveryMatchOnce(_ kind: StoreKind) async throws {
        let seed = SeededGenerator.seed(for: "BoundedItemQueryTests")
        let (sections, items) = Self.randomList(seed: seed)
        var configuration = StoreConfiguration(fullSync: false)
        configuration.itemQueryBudget = Self.budget
        try await withStore(kind, configuration) { store in
            let list = try await store.createList(id: id("l"), name: "", sections: sections, indexes: [["k"]]).id
            _ = try await store.setTextIndex(true, on: list, progress: { _, _ in })
            var rng = SeededGenerator(seed: seed &+ 1)
            let someSection = sections.filter { !$0.items.isEmpty }.randomElement(using: &rng)?.id
            // (query, what the oracle says matches)
            let queries: [(String, ItemQuery, (Item) -> Bool)] = [
                (
                    "indexed k:x with rare:true",
                    ItemQuery(conditions: [Self.condition("k", "x"), Self.condition("rare", true)]),
                    { $0.k == "x" && $0.rare }
                ),
                (
                    "rare:true, no index", ItemQuery(conditions: [Self.condition("rare", true)]), { $0.rare }
                ),
                (
                    "q=common with rare:true",
                    ItemQuery(conditions: [Self.condition("rare", true)], text: "common"),
                    { $0.rare && $0.text.contains("common") }
                ),
                (
                    "q=uniq with rare:true",
                    ItemQuery(conditions: [Self.condition("rare", true)], text: "uniq"),
                    { $0.rare && $0.text.contains("uniq") }
                ),
                ("q=uniq", ItemQuery(text: "uniq"), { $0.text.contains("uniq") }),
                (
                    "indexed k:y in one section",
                    ItemQuery(section: someSection, conditions: [Self.condition("k", "y")]),
                    { $0.section == someSection && $0.k == "y" }
                ),
                ("no filter", ItemQuery(), { _ in true }),
            ]
            for (what, query, oracle) in queries {
                let expected = items.filter(oracle).map(\.id)
                var found: [Identifier] = []
                var after: String?
                var pages = 0
                repeat {
                    var page = query
                    page.limit = Int.random(in: 1...7, using: &rng)
                    page.after = after
                    let answer = try await store.items(of: list, query: page)
                    #expect(
                        answer.examined <= Self.budget,
                        "\(kind) \(what): page \(pages) examined \(answer.examined) rows (plan \(answer.plan))")
                    #expect(answer.entries.count <= page.limit)
                    found += answer.entries.map(\.item.id)
                    after = answer.nextCursor
                    pages += 1
                } while after != nil && pages < 100_000
                #expect(found == expected, "\(kind) \(what): seed \(seed)")
            }
        }
    }
}
