import ListModel
import ListWire
import ListdTestSupport
import SectionDiff
import Storage
import Testing

@testable import ListStore

/// ``TouchedEntities/condense(with:)`` on its own, against a model: random
/// lists before and after a random change, the touched entities taken from
/// the difference (plus some untouched ones, as the engine lists them), and
/// the index of the later list. Expanding each run with the untouched
/// elements it stands for must give exactly both lists, each run the same
/// elements at both ends. Then the same with the index made stale (keys
/// dropped, added or shifted, a section's keys lost, another list's index):
/// condensing throws ``IndexMismatch`` or answers; it never traps.
@Suite struct CondenseTests {
    static let seeds: [UInt64] = longTests ? Array(1...5_000) : Array(1...300)

    struct Element: Hashable {
        var id: String
        var section: String
        var key: Int64
        var model: String
    }

    /// A list: sections (section is "") and items, each with a key.
    struct Model {
        var sections: [String: Element] = [:]
        var items: [String: Element] = [:]

        func orderedSections() -> [Element] { sections.values.sorted { $0.key < $1.key } }
        func orderedItems(in section: String) -> [Element] {
            items.values.filter { $0.section == section }.sorted { $0.key < $1.key }
        }

        var index: ListIndex {
            var index = ListIndex()
            index.sections = RankedKeys(sorted: sections.values.map(\.key).sorted())
            for section in sections.keys {
                let keys = orderedItems(in: section).map(\.key)
                if !keys.isEmpty { index.items[Identifier(storedText: section)] = RankedKeys(sorted: keys) }
            }
            return index
        }
    }

    static func distinctKeys(_ count: Int, using rng: inout SeededGenerator) -> [Int64] {
        var keys = Set<Int64>()
        while keys.count < count { keys.insert(Int64.random(in: -40...40, using: &rng) * 8) }
        return Array(keys)
    }

    static func randomList(using rng: inout SeededGenerator) -> Model {
        var model = Model()
        let sectionCount = Int.random(in: 0...6, using: &rng)
        for (n, key) in distinctKeys(sectionCount, using: &rng).enumerated() {
            let id = "s\(n)"
            model.sections[id] = Element(id: id, section: "", key: key, model: "\(Int.random(in: 0..<3, using: &rng))")
            for (m, itemKey) in distinctKeys(Int.random(in: 0...8, using: &rng), using: &rng).enumerated() {
                let item = "i\(n)-\(m)"
                model.items[item] = Element(
                    id: item, section: id, key: itemKey, model: "\(Int.random(in: 0..<3, using: &rng))")
            }
        }
        return model
    }

    /// A random change of `old`: deletions, insertions, moves (new key, maybe
    /// a new section) and model updates, keys kept distinct per group.
    static func randomChange(of old: Model, using rng: inout SeededGenerator) -> Model {
        var new = old
        func freeKey(in section: String) -> Int64 {
            let used = Set(section.isEmpty ? new.sections.values.map(\.key) : new.orderedItems(in: section).map(\.key))
            var key = Int64.random(in: -41...41, using: &rng) * 8 + Int64.random(in: 0...1, using: &rng) * 4
            while used.contains(key) { key += 1 }
            return key
        }
        for _ in 0..<Int.random(in: 0...6, using: &rng) {
            switch Int.random(in: 0..<8, using: &rng) {
            case 0:
                if let id = new.sections.keys.sorted().randomElement(using: &rng) {
                    new.sections[id] = nil
                    new.items = new.items.filter { $0.value.section != id }
                }
            case 1:
                let id = "t\(Int.random(in: 0..<5, using: &rng))"
                if new.sections[id] == nil {
                    let key = freeKey(in: "")
                    new.sections[id] = Element(id: id, section: "", key: key, model: "n")
                }
            case 2:
                if let id = new.sections.keys.sorted().randomElement(using: &rng) {
                    let key = freeKey(in: "")
                    new.sections[id]?.key = key
                }
            case 3:
                if let id = new.sections.keys.sorted().randomElement(using: &rng) { new.sections[id]?.model += "u" }
            case 4:
                if let id = new.items.keys.sorted().randomElement(using: &rng) { new.items[id] = nil }
            case 5:
                if let section = new.sections.keys.sorted().randomElement(using: &rng) {
                    let id = "j\(Int.random(in: 0..<8, using: &rng))"
                    if new.items[id] == nil {
                        let key = freeKey(in: section)
                        new.items[id] = Element(id: id, section: section, key: key, model: "n")
                    }
                }
            case 6:
                if let id = new.items.keys.sorted().randomElement(using: &rng),
                    let section = new.sections.keys.sorted().randomElement(using: &rng)
                {
                    let key = freeKey(in: section)
                    new.items[id]?.section = section
                    new.items[id]?.key = key
                }
            default:
                if let id = new.items.keys.sorted().randomElement(using: &rng) { new.items[id]?.model += "u" }
            }
        }
        return new
    }

    /// What the change engine lists: every element that differs, some that do
    /// not, and the sections holding a listed item.
    static func touched(_ old: Model, _ new: Model, using rng: inout SeededGenerator) -> TouchedEntities {
        var touched = TouchedEntities()
        for id in Set(old.sections.keys).union(new.sections.keys).sorted() {
            let before = old.sections[id]
            let after = new.sections[id]
            if before != after || Int.random(in: 0..<6, using: &rng) == 0 {
                touched.sections[Identifier(storedText: id)] = (
                    before.map { .init(key: $0.key, model: $0.model) },
                    after.map { .init(key: $0.key, model: $0.model) }
                )
            }
        }
        for id in Set(old.items.keys).union(new.items.keys).sorted() {
            let before = old.items[id]
            let after = new.items[id]
            if before != after || Int.random(in: 0..<6, using: &rng) == 0 {
                func state(_ element: Element?) -> TouchedEntities.ItemState? {
                    element.map { .init(section: Identifier(storedText: $0.section), key: $0.key, model: $0.model) }
                }
                touched.items[Identifier(storedText: id)] = (state(before), state(after))
            }
        }
        for section in touched.unlistedSections {
            let state = new.sections[section.rawValue].map {
                TouchedEntities.SectionState(key: $0.key, model: $0.model)
            }
            touched.sections[section] = (state, state)
        }
        return touched
    }

    /// Expands `condensed` with the untouched elements, checking it against
    /// `list`; records what each run stood for in `runs`.
    static func expand(
        _ condensed: CondensedListSections, matches list: Model, touched: TouchedEntities,
        sectionRuns: inout [Int: [String]], itemRuns: inout [Int: [String]]
    ) -> String? {
        let untouchedSections = list.orderedSections().filter { touched.sections[Identifier(storedText: $0.id)] == nil }
        var nextSection = untouchedSections.makeIterator()
        var sections: [(id: String, model: String, items: [(id: String, model: String)])] = []
        for section in condensed {
            switch section.model {
            case .run(let run, let count):
                if !section.items.isEmpty { return "section run \(run) holds items" }
                var ids: [String] = []
                for _ in 0..<count {
                    guard let next = nextSection.next() else { return "run \(run) runs past the untouched sections" }
                    ids.append(next.id)
                    sections.append((next.id, next.model, list.orderedItems(in: next.id).map { ($0.id, $0.model) }))
                }
                if let seen = sectionRuns[run], seen != ids { return "section run \(run) is \(ids) and \(seen)" }
                sectionRuns[run] = ids
            case .element(let entry):
                let id = entry.id
                let untouchedItems = list.orderedItems(in: id)
                    .filter { touched.items[Identifier(storedText: $0.id)] == nil }
                var nextItem = untouchedItems.makeIterator()
                var expanded: [(id: String, model: String)] = []
                for item in section.items {
                    switch item {
                    case .run(let run, let count):
                        var ids: [String] = []
                        for _ in 0..<count {
                            guard let next = nextItem.next() else { return "item run \(run) runs past \(id)'s items" }
                            ids.append(next.id)
                            expanded.append((next.id, next.model))
                        }
                        if let seen = itemRuns[run], seen != ids { return "item run \(run) is \(ids) and \(seen)" }
                        itemRuns[run] = ids
                    case .element(let item):
                        expanded.append((item.id, item.model.text))
                    }
                }
                sections.append((id, entry.model.text, expanded))
            }
        }
        let expected = list.orderedSections().map { section in
            (section.id, section.model, list.orderedItems(in: section.id).map { ($0.id, $0.model) })
        }
        let same =
            sections.count == expected.count
            && zip(sections, expected).allSatisfy { got, want in
                got.id == want.0 && got.model == want.1 && got.items.count == want.2.count
                    && zip(got.items, want.2).allSatisfy { $0.id == $1.0 && $0.model == $1.1 }
            }
        return same ? nil : "expands to \(sections), expected \(expected)"
    }

    static func check(
        _ old: Model, _ new: Model, _ touched: TouchedEntities,
        _ result: (old: CondensedListSections, new: CondensedListSections)
    ) -> String? {
        var sectionRuns: [Int: [String]] = [:]
        var itemRuns: [Int: [String]] = [:]
        if let problem = expand(
            result.old, matches: old, touched: touched, sectionRuns: &sectionRuns, itemRuns: &itemRuns)
        {
            return "old: \(problem)"
        }
        let oldRuns = (Set(sectionRuns.keys), Set(itemRuns.keys))
        if let problem = expand(
            result.new, matches: new, touched: touched, sectionRuns: &sectionRuns, itemRuns: &itemRuns)
        {
            return "new: \(problem)"
        }
        if oldRuns.0 != Set(sectionRuns.keys) || oldRuns.1 != Set(itemRuns.keys) {
            return "the runs differ between the ends"
        }
        return nil
    }

    /// Every run of a condensed end with its count, sections' runs negated.
    static func runs(_ condensed: CondensedListSections) -> [Int: Int] {
        var runs: [Int: Int] = [:]
        for section in condensed {
            switch section.model {
            case .run(let run, let count): runs[-1 - run] = count
            case .element:
                for case .run(let run, let count) in section.items { runs[run] = count }
            }
        }
        return runs
    }

    @Test(arguments: seeds)
    func condensedEndsExpandToBothLists(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let old = Self.randomList(using: &rng)
        let new = Self.randomChange(of: old, using: &rng)
        let touched = Self.touched(old, new, using: &rng)
        let result = try touched.condense(with: new.index)
        if let problem = Self.check(old, new, touched, result) {
            Issue.record("seed \(seed): \(problem)\nold \(result.old)\nnew \(result.new)")
        }
    }

    @Test(arguments: seeds)
    func aStaleIndexThrowsOrStillExpands(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        let old = Self.randomList(using: &rng)
        let new = Self.randomChange(of: old, using: &rng)
        let touched = Self.touched(old, new, using: &rng)
        var index = new.index
        let sectionIDs = Array(index.items.keys).sorted()
        switch seed % 6 {
        case 0: index = old.index
        case 1: index = Self.randomList(using: &rng).index
        case 2: if let section = sectionIDs.randomElement(using: &rng) { index.items[section] = nil }
        case 3:
            if let section = sectionIDs.randomElement(using: &rng) {
                index.items[section]?.insert(Int64.random(in: -400...400, using: &rng))
            }
        case 4:
            if let section = sectionIDs.randomElement(using: &rng), let key = index.items[section]?.key(at: 0) {
                index.items[section]?.remove(key)
            }
        default:
            index.sections.insert(Int64.random(in: -400...400, using: &rng))
            if let key = index.sections.key(at: 0) { index.sections.remove(key) }
        }
        do throws(IndexMismatch) {
            // An index with an extra or shifted untouched key can pass every check
            // (only the index knows how many untouched elements there are); what
            // matters here is that condensing finishes.
            let result = try touched.condense(with: index)
            #expect(Self.runs(result.old) == Self.runs(result.new), "seed \(seed): the ends share different runs")
        } catch {
            #expect(
                error.description.contains("index") || error.description.contains("untouched")
                    || error.description.contains("not listed"), "\(error)")
        }
    }

    /// The shape of the reported crash: an item listed in a section the
    /// change does not list, and a touched item's key missing from the index.
    @Test func inconsistentInputsThrowInsteadOfTrapping() {
        let s = Identifier(storedText: "s")
        let gone = Identifier(storedText: "gone")
        var index = ListIndex()
        index.sections = RankedKeys(sorted: [10])
        index.items[s] = RankedKeys(sorted: [1, 2])

        var unlisted = TouchedEntities()
        unlisted.sections[s] = (.init(key: 10, model: "0"), .init(key: 10, model: "0"))
        unlisted.items[Identifier(storedText: "a")] = (
            .init(section: gone, key: 5, model: "0"), .init(section: s, key: 2, model: "0")
        )
        #expect(throws: IndexMismatch.self) { try unlisted.condense(with: index) }

        var missingKey = TouchedEntities()
        missingKey.sections[s] = (.init(key: 10, model: "0"), .init(key: 10, model: "0"))
        missingKey.items[Identifier(storedText: "a")] = (nil, .init(section: s, key: 3, model: "0"))
        missingKey.items[Identifier(storedText: "b")] = (nil, .init(section: s, key: 4, model: "0"))
        missingKey.items[Identifier(storedText: "c")] = (nil, .init(section: s, key: 5, model: "0"))
        #expect(throws: IndexMismatch.self) { try missingKey.condense(with: index) }

        var staleSections = TouchedEntities()
        staleSections.sections[s] = (.init(key: 10, model: "0"), .init(key: 11, model: "0"))
        #expect(throws: IndexMismatch.self) { try staleSections.condense(with: index) }
    }

    /// A reader with a stale published index for a list: "changes since"
    /// still answers the right change (the index rebuilt from the rows), and
    /// the mismatch is reported.
    @Test func aStalePublishedIndexIsRebuiltAndReported() async throws {
        let directory = try TemporaryDirectory()
        let list = Identifier(storedText: "l")
        let items = (0..<50).map { NewItem(id: Identifier(storedText: "i\($0)")) }
        var storeConfiguration = StoreConfiguration(fullSync: false)
        storeConfiguration.migrationsDirectory = migrationsDirectory
        let store = try await SQLiteStore(path: directory.databasePath, configuration: storeConfiguration)
        _ = try await store.createList(
            id: list, name: "", sections: [NewSection(id: Identifier(storedText: "s"), items: items)])
        _ = try await store.apply(
            [.moveItem(id: Identifier(storedText: "i3"), section: nil, to: 40)], to: list, expectedVersion: nil)
        _ = try await store.apply([.deleteItem(id: Identifier(storedText: "i7"))], to: list, expectedVersion: nil)
        let head = try await store.head(of: list)
        await store.close()
        let inconsistencies = Inconsistencies()
        var configuration = StoreConfiguration(fullSync: false)
        configuration.onInconsistency = { inconsistencies.record($0) }
        let fresh = ListReader(
            db: Database(connection: try Connection(path: directory.databasePath)), configuration: configuration)
        let freshBoard = IndexBoard(budget: 1 << 20)
        guard case .change(let expected) = try fresh.changes(of: list, since: 1, board: freshBoard) else {
            Issue.record("no change since v1")
            return
        }
        #expect(inconsistencies.all == [])
        #expect(freshBoard.count == 1, "the index built from the rows is published for the next reader")

        let reader = ListReader(
            db: Database(connection: try Connection(path: directory.databasePath)), configuration: configuration)
        var stale = ListIndex()
        stale.sections = RankedKeys(sorted: [Int64(1)])
        stale.items[Identifier(storedText: "s")] = RankedKeys(sorted: (0..<10).map { Int64($0) })
        let board = IndexBoard(budget: 1 << 20)
        board.publish(stale, of: list, epoch: head.epoch, version: head.version)
        guard case .change(let answered) = try reader.changes(of: list, since: 1, board: board) else {
            Issue.record("no change since v1 with a stale index")
            return
        }
        #expect(answered == expected)
        #expect(inconsistencies.all.count == 1)
        #expect(inconsistencies.all.first?.contains("rebuilding") == true, "\(inconsistencies.all)")
    }
}
