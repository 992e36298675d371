import Foundation
import JSON
import ListModel
import ListStore
import ListdTestSupport
import Testing

/// Seeded random models, writes and item queries on both stores, checked
/// against a brute-force oracle that reads its own model trees (numbers as
/// `Decimal`, so `1.0` equals `1` and 2^53+1 differs from 2^53).
@Suite struct ItemQueryPropertyTests {
    /// `LISTD_SEED=N` replays one seed.
    static let seeds: [UInt64] =
        ProcessInfo.processInfo.environment["LISTD_SEED"].flatMap(UInt64.init).map { [$0] }
        ?? (longTests ? Array(1...200) : Array(1...6))
    static let stepsPerSeed = longTests ? 400 : 60
    static let paths = [["a"], ["tags", "0"], ["n", "x"]]

    /// The oracle's own JSON: what a generated model means.
    indirect enum Tree {
        case null
        case bool(Bool)
        case number(Decimal, String)
        case string(String)
        case array([Tree])
        case object([(String, Tree)])

        var text: String {
            switch self {
            case .null: return "null"
            case .bool(let value): return value ? "true" : "false"
            case .number(_, let spelling): return spelling
            case .string(let value): return Self.quoted(value)
            case .array(let elements): return "[" + elements.map(\.text).joined(separator: ",") + "]"
            case .object(let members):
                return "{" + members.map { Self.quoted($0.0) + ":" + $0.1.text }.joined(separator: ",") + "}"
            }
        }

        static func quoted(_ text: String) -> String {
            var out = "\""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }

        func at(_ path: [String]) -> Tree? {
            guard let first = path.first else { return self }
            switch self {
            case .object(let members):
                return members.first { $0.0 == first }?.1.at(Array(path.dropFirst()))
            case .array(let elements):
                guard first.allSatisfy(\.isASCII), first.allSatisfy(\.isNumber), first == "0" || !first.hasPrefix("0"),
                    let index = Int(first), index < elements.count
                else { return nil }
                return elements[index].at(Array(path.dropFirst()))
            default:
                return nil
            }
        }

        func equals(_ other: Tree) -> Bool {
            switch (self, other) {
            case (.null, .null): return true
            case (.bool(let a), .bool(let b)): return a == b
            case (.number(let a, _), .number(let b, _)): return a == b
            case (.string(let a), .string(let b)): return a == b
            default: return false
            }
        }

        func containsString(_ needle: String) -> Bool {
            switch self {
            case .string(let value): return value.lowercased().contains(needle.lowercased())
            case .array(let elements): return elements.contains { $0.containsString(needle) }
            case .object(let members): return members.contains { $0.1.containsString(needle) }
            default: return false
            }
        }
    }

    static let numbers: [(Decimal, [String])] = [
        (0, ["0", "0.0", "0e5"]), (1, ["1", "1.0", "1e0", "10E-1"]), (2, ["2", "2.00", "0.2e1"]),
        (Decimal(string: "9007199254740993")!, ["9007199254740993"]),
        (Decimal(string: "9007199254740992")!, ["9007199254740992"]), (Decimal(string: "-1.5")!, ["-1.5", "-15e-1"]),
    ]
    static let strings = ["1", "apple", "Äpfel", "ÉCOLE", "naïve", "日本語", "🎉 party", "x\"quote", "", "APPLE pie"]

    static func scalar(using rng: inout SeededGenerator) -> Tree {
        switch Int.random(in: 0..<10, using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2...5:
            let (value, spellings) = numbers.randomElement(using: &rng)!
            return .number(value, spellings.randomElement(using: &rng)!)
        default: return .string(strings.randomElement(using: &rng)!)
        }
    }

    static func randomTree(using rng: inout SeededGenerator) -> Tree {
        var members: [(String, Tree)] = []
        if Int.random(in: 0..<5, using: &rng) > 0 {
            members.append(
                (
                    "a",
                    Int.random(in: 0..<8, using: &rng) == 0
                        ? .object([("b", scalar(using: &rng))]) : scalar(using: &rng)
                ))
        }
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: break
        case 1: members.append(("tags", .object([("0", scalar(using: &rng))])))
        default:
            members.append(("tags", .array((0..<Int.random(in: 0...2, using: &rng)).map { _ in scalar(using: &rng) })))
        }
        if Bool.random(using: &rng) { members.append(("n", .object([("x", scalar(using: &rng))]))) }
        if Bool.random(using: &rng) { members.append(("s", .string(strings.randomElement(using: &rng)!))) }
        members.shuffle(using: &rng)
        return .object(members)
    }

    /// The list as the oracle sees it: ordered sections of (id, tree).
    struct Oracle {
        var sections: [(Identifier, [(Identifier, Tree)])] = []
        var nextID = 0

        mutating func freshID(_ prefix: String) -> Identifier {
            nextID += 1
            return Identifier("\(prefix)\(nextID)")!
        }

        func matches(_ tree: Tree, _ query: ItemQuery) -> Bool {
            for condition in query.conditions {
                guard let found = tree.at(condition.path), let wanted = Self.tree(condition.value), found.equals(wanted)
                else { return false }
            }
            if let text = query.text { return tree.containsString(text) }
            return true
        }

        static func tree(_ value: JSONValue) -> Tree? {
            switch value {
            case .null: return .null
            case .bool(let value): return .bool(value)
            case .string(let value): return .string(value)
            case .number:
                return Decimal(string: value.canonicalText).map { .number($0, value.canonicalText) }
            default: return nil
            }
        }

        func answer(_ query: ItemQuery) -> [Identifier] {
            sections.filter { query.section == nil || $0.0 == query.section }
                .flatMap { $0.1.filter { matches($0.1, query) }.map(\.0) }
        }
    }

    /// One random write, applied to the oracle and returned with the ids it touches.
    static func randomWrite(_ oracle: inout Oracle, using rng: inout SeededGenerator)
        -> (ListOperation, Set<Identifier>)
    {
        let items = oracle.sections.flatMap { $0.1.map(\.0) }
        let choice = Int.random(in: 0..<100, using: &rng)
        if oracle.sections.isEmpty || choice < 4 {
            let id = oracle.freshID("s")
            let at = Int.random(in: 0...oracle.sections.count, using: &rng)
            oracle.sections.insert((id, []), at: at)
            return (.insertSection(NewSection(id: id, model: .emptyObject), at: at), [])
        }
        if choice < 7 {
            let from = Int.random(in: 0..<oracle.sections.count, using: &rng)
            let to = Int.random(in: 0..<oracle.sections.count, using: &rng)
            let section = oracle.sections.remove(at: from)
            oracle.sections.insert(section, at: to)
            return (.moveSection(id: section.0, to: to), Set(section.1.map(\.0)))
        }
        if items.isEmpty || choice < 50 {
            let s = Int.random(in: 0..<oracle.sections.count, using: &rng)
            let id = oracle.freshID("i")
            let tree = randomTree(using: &rng)
            let at = Int.random(in: 0...oracle.sections[s].1.count, using: &rng)
            oracle.sections[s].1.insert((id, tree), at: at)
            return (
                .insertItem(section: oracle.sections[s].0, item: NewItem(id: id, model: model(tree.text)), at: at), [id]
            )
        }
        let id = items.randomElement(using: &rng)!
        let s = oracle.sections.firstIndex { $0.1.contains { $0.0 == id } }!
        let i = oracle.sections[s].1.firstIndex { $0.0 == id }!
        if choice < 72 {
            let tree = randomTree(using: &rng)
            oracle.sections[s].1[i].1 = tree
            return (.updateItem(id: id, model: model(tree.text)), [id])
        }
        if choice < 90 {
            let item = oracle.sections[s].1.remove(at: i)
            let d = Int.random(in: 0..<oracle.sections.count, using: &rng)
            let to = Int.random(in: 0...oracle.sections[d].1.count, using: &rng)
            oracle.sections[d].1.insert(item, at: to)
            return (.moveItem(id: id, section: oracle.sections[d].0, to: to), [id])
        }
        oracle.sections[s].1.remove(at: i)
        return (.deleteItem(id: id), [id])
    }

    static func randomQuery(_ oracle: Oracle, using rng: inout SeededGenerator) -> ItemQuery {
        var query = ItemQuery(limit: Int.random(in: 1...7, using: &rng))
        if Int.random(in: 0..<5, using: &rng) == 0, let section = oracle.sections.randomElement(using: &rng) {
            query.section = section.0
        }
        for _ in 0..<[0, 1, 1, 1, 2].randomElement(using: &rng)! {
            let path = paths.randomElement(using: &rng)!
            let value = scalar(using: &rng)
            // The condition as the API reads it: parsed JSON, canonical.
            guard let parsed = try? JSONValue(parsing: value.text) else { continue }
            query.conditions.append(ItemQuery.Condition(path: path, value: parsed))
        }
        if Int.random(in: 0..<4, using: &rng) == 0 {
            let source = strings.filter { $0.count >= 3 }.randomElement(using: &rng)!
            let start = Int.random(in: 0...(source.count - 3), using: &rng)
            let term = String(Array(source)[start..<start + Int.random(in: 1...3, using: &rng)])
            query.text = Bool.random(using: &rng) ? term.uppercased() : term
        }
        return query
    }

    func expectedPlan(_ query: ItemQuery, declared: Set<[String]>, text: Bool) -> QueryPlan {
        if query.conditions.isEmpty && query.text == nil { return .listOrder }
        if let indexed = query.conditions.first(where: { declared.contains($0.path) }) { return .index(indexed.path) }
        if text, let term = query.text, term.unicodeScalars.count >= 3 { return .text }
        return .scan
    }

    @Test(arguments: StoreKind.tested, seeds)
    func pagesAndCursorWalksMatchTheOracle(_ kind: StoreKind, seed: UInt64) async throws {
        var rng = SeededGenerator(seed: seed)
        // Even seeds use a tiny key gap, so sibling groups are renumbered
        // often and cursor walks cross renumberings.
        let configuration = StoreConfiguration(fullSync: false, positionGap: seed % 2 == 0 ? 4 : 1 << 32)
        try await withStore(kind, configuration) { store in
            let list = id("q")
            _ = try await store.createList(id: list, name: "q", sections: [])
            var oracle = Oracle()
            var declared = Set<[String]>()
            for path in Self.paths where Bool.random(using: &rng) {
                #expect(try await store.addIndex(path, to: list, progress: { _, _ in }))
                declared.insert(path)
            }
            // PostgreSQL keeps the flag but answers q by the bounded scan.
            var text = false
            var textServes: Bool { text && kind == .sqlite }
            if Bool.random(using: &rng) {
                #expect(try await store.setTextIndex(true, on: list, progress: { _, _ in }))
                text = true
            }
            for step in 0..<Self.stepsPerSeed {
                // Milliseconds of CPU per step: let the cooperative pool's
                // other tasks (two threads on two cores) run between steps.
                await Task.yield()
                let context = "seed \(seed) step \(step)"
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    let (op, _) = Self.randomWrite(&oracle, using: &rng)
                    _ = try await store.apply([op], to: list, expectedVersion: nil)
                }
                if step % 20 == 10 {
                    // Declare or drop an index on a list that has items.
                    let path = Self.paths.randomElement(using: &rng)!
                    if declared.contains(path) {
                        #expect(try await store.dropIndex(path, from: list), "\(context)")
                        declared.remove(path)
                    } else {
                        #expect(try await store.addIndex(path, to: list, progress: { _, _ in }), "\(context)")
                        declared.insert(path)
                    }
                    let indexes = try await store.indexes(of: list)
                    #expect(Set(indexes.paths) == declared && indexes.text == text, "\(context)")
                }
                if step % 20 == 15 {
                    text.toggle()
                    #expect(try await store.setTextIndex(text, on: list, progress: { _, _ in }), "\(context)")
                }
                // A whole walk with no writes equals the oracle's answer, page by page.
                let query = Self.randomQuery(oracle, using: &rng)
                let expected = oracle.answer(query)
                var got: [Identifier] = []
                var cursor: String?
                var pages = 0
                repeat {
                    var next = query
                    next.after = cursor
                    let page = try await store.items(of: list, query: next)
                    #expect(page.plan == expectedPlan(query, declared: declared, text: textServes), "\(context)")
                    #expect(page.entries.count <= query.limit, "\(context)")
                    if page.nextCursor != nil { #expect(page.entries.count == query.limit, "\(context)") }
                    got += page.entries.map(\.item.id)
                    cursor = page.nextCursor
                    pages += 1
                } while cursor != nil && pages < 100_000
                #expect(got == expected, "\(context): \(query)")

                // A walk with writes between its pages never repeats or skips
                // an item no write touched.
                if step % 5 == 0 {
                    var walk = Self.randomQuery(oracle, using: &rng)
                    walk.section = nil
                    let before = Set(oracle.answer(walk))
                    var touched = Set<Identifier>()
                    var seen: [Identifier] = []
                    var after: String?
                    var rounds = 0
                    repeat {
                        var next = walk
                        next.after = after
                        let page = try await store.items(of: list, query: next)
                        seen += page.entries.map(\.item.id)
                        after = page.nextCursor
                        for _ in 0..<Int.random(in: 0...3, using: &rng) {
                            let (op, ids) = Self.randomWrite(&oracle, using: &rng)
                            touched.formUnion(ids)
                            _ = try await store.apply([op], to: list, expectedVersion: nil)
                        }
                        rounds += 1
                    } while after != nil && rounds < 100_000
                    // (An item moved past the cursor may come again: it did not stay in place.)
                    let repeated = Set(Dictionary(grouping: seen, by: { $0 }).filter { $0.value.count > 1 }.keys)
                    #expect(
                        repeated.isSubset(of: touched), "\(context): a walk repeated \(repeated.subtracting(touched))")
                    let stayed = before.intersection(oracle.answer(walk)).subtracting(touched)
                    #expect(stayed.isSubset(of: Set(seen)), "\(context): a walk skipped \(stayed.subtracting(seen))")
                }
            }
        }
    }
}
