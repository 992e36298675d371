import Foundation
import JSON
import ListModel
import ListStore
import ListView
import ListWire
import ListdTestSupport
import SectionDiff
import Testing

@testable import ListAPI

/// Live views against a brute-force oracle: random lists (nested models,
/// numbers such as `1` and `1.0`, missing paths, unicode strings) under random
/// op batches, random views (every parameter and their mixes, windows of 1 and
/// larger than the view). After every write, each view's kept snapshot is
/// ListView's `evaluate` of the whole list; for random earlier versions V, its
/// answer since V, applied stage by stage (each stage checked by SectionDiff's
/// apply, a UIKit batch-update model) to the oracle's view at V, gives exactly the
/// oracle's view now, and names no section update beside an item change in
/// that section. Some seeds keep views under a one-byte budget, so every use
/// drops the others and rebuilds them from the rows.
///
/// Default: 24 seeds × 60 writes × 6 views, about 9,000 answers checked;
/// `LISTD_LONG_TESTS=1`: 400 seeds × 300 writes.
@Suite struct LiveViewPropertyTests {
    static let longTests = ProcessInfo.processInfo.environment["LISTD_LONG_TESTS"] == "1"
    static let seeds: [UInt64] = longTests ? Array(1...400) : Array(1...24)
    static let writes = longTests ? 300 : 60

    /// A random view of every parameter and their mixes.
    static func view(_ random: inout SeededGenerator) throws -> ViewSpec {
        var parts: [String] = []
        func chance(_ n: Int) -> Bool { Int.random(in: 0..<n, using: &random) == 0 }
        if chance(2) { parts.append(["where=s:open", "where=s:null", "where=n:1", "where=tags.0:red"].pick(&random)) }
        if chance(6) { parts.append(["q=e", "q=%C3%A9"].pick(&random)) }
        if chance(2) { parts.append(["order=n", "order=-n", "order=t", "order=-tags", "order=s"].pick(&random)) }
        if chance(3) { parts.append(["group=s", "group=tags.0", "group=n"].pick(&random)) }
        if chance(2) { parts.append("limit=\([1, 2, 5, 12, 1000].pick(&random))") }
        if parts.isEmpty { parts.append("order=t") }
        return try ViewSpec(parsing: parts.joined(separator: "&"))
    }

    static func model(_ random: inout SeededGenerator) throws -> Model {
        var fields: [String] = []
        switch Int.random(in: 0..<4, using: &random) {
        case 0: fields.append(#""s":"open""#)
        case 1: fields.append(#""s":"done""#)
        case 2: fields.append(#""s":null"#)
        default: break
        }
        if Int.random(in: 0..<5, using: &random) != 0 {
            fields.append(#""n":"# + ["1", "1.0", "2", "-3", "0.5", "1e1", "true", #""1""#, "[1]"].pick(&random))
        }
        fields.append(#""t":""# + ["é", "e\u{301}", "Zebra", "apple", "", "\u{1F600}"].pick(&random) + #"""#)
        if Bool.random(using: &random) { fields.append(#""tags":[""# + ["red", "blue"].pick(&random) + #""]"#) }
        return try Model(parsing: Array(("{" + fields.joined(separator: ",") + "}").utf8))
    }

    static func ops(_ list: ListSnapshot, _ random: inout SeededGenerator, counter: inout Int) throws
        -> [ListOperation]
    {
        let sections = list.sections.map(\.id)
        let items = list.sections.flatMap { $0.items.map(\.id) }
        var ops: [ListOperation] = []
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            counter += 1
            let roll = Int.random(in: 0..<20, using: &random)
            if items.isEmpty || roll < 5, let section = sections.randomElement(using: &random) {
                ops.append(
                    .insertItem(
                        section: section, item: NewItem(id: Identifier("x\(counter)"), model: try model(&random)),
                        at: 0))
            } else if roll < 11, let item = items.randomElement(using: &random) {
                ops.append(.updateItem(id: item, model: try model(&random)))
            } else if roll < 14, let item = items.randomElement(using: &random),
                let section = sections.randomElement(using: &random)
            {
                ops.append(.moveItem(id: item, section: section, to: 0))
            } else if roll < 17, let item = items.randomElement(using: &random) {
                ops.append(.deleteItem(id: item))
            } else if roll == 17, let section = sections.randomElement(using: &random) {
                ops.append(.moveSection(id: section, to: 0))
            } else if roll == 18, sections.count > 1, let section = sections.randomElement(using: &random) {
                ops.append(.deleteSection(id: section))
            } else if let section = sections.randomElement(using: &random), Bool.random(using: &random) {
                ops.append(.updateSection(id: section, model: try model(&random)))
            } else {
                ops.append(.insertSection(NewSection(id: Identifier("s\(counter)")), at: 0))
            }
        }
        return ops
    }

    /// The oracle: ListView's brute-force view of the whole snapshot.
    static func oracle(_ snapshot: ListSnapshot, _ view: ViewSpec) throws -> ListSections {
        let sources = snapshot.sections.map { section in
            SourceSection(
                id: section.id, model: section.model, items: section.items.map { ViewItem(id: $0.id, model: $0.model) })
        }
        return try view.evaluate(sources).map { section in
            ArraySection(
                model: JSONEntry(id: section.id, model: JSONText(section.model.canonicalText)),
                items: section.items.map { JSONEntry(id: $0.id.rawValue, model: JSONText($0.model.canonicalText)) })
        }
    }

    static func json(_ bytes: [UInt8]) throws -> JSONValue {
        try JSONValue(parsing: bytes, limits: JSONLimits(maxDepth: 64, maxBytes: .max))
    }

    /// Applies a change answer's stages to `state`, each checked by SectionDiff's apply.
    static func apply(_ answer: JSONValue, to state: ListSections) throws -> ListSections {
        if answer["reset"]?.boolValue == true {
            return try WireDecoding.sections(answer["snapshot"]?["sections"]?.arrayValue ?? [])
        }
        var state = state
        for stage in answer["stages"]?.arrayValue ?? [] {
            #expect(reloadConflicts(stage) == 0, "a section update beside an item change in its section: \(stage)")
            state = try WireDecoding.stage(stage, before: state).apply(to: state)
        }
        return state
    }

    /// Section updates of `stage` that share it with an item change in that
    /// section (which a client applying them as `reloadSections` would see
    /// UIKit reject). Updates and item deletes, updates and move sources name
    /// positions before the stage; item inserts and move targets, after it.
    static func reloadConflicts(_ stage: JSONValue) -> Int {
        func ints(_ key: String, _ field: String?) -> [Int] {
            (stage[key]?.arrayValue ?? []).compactMap { entry in
                let value = field.map { entry[$0] } ?? entry
                return value?.intValue ?? value?[0]?.intValue
            }
        }
        let removed = ints("sectionDeleted", nil) + ints("sectionMoved", "from")
        let targets = (ints("sectionInserted", "at") + ints("sectionMoved", "to")).sorted()
        let before = Set(ints("itemDeleted", nil) + ints("itemUpdated", "at") + ints("itemMoved", "from"))
        let after = Set(ints("itemInserted", "at") + ints("itemMoved", "to"))
        var conflicts = 0
        for at in ints("sectionUpdated", "at") {
            var position = at - removed.filter { $0 < at }.count
            for target in targets where target <= position { position += 1 }
            if before.contains(at) || after.contains(position) { conflicts += 1 }
        }
        return conflicts
    }

    @Test(arguments: seeds)
    func liveViewsAnswerLikeTheOracleFromAnyVersion(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("live-views-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = StoreConfiguration(
            fullSync: false, historyVersions: 10_000, positionGap: seed % 2 == 1 ? 4 : 1 << 20)
        configuration.migrationsDirectory = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Migrations", isDirectory: true)
        let store = try await SQLiteStore(
            path: directory.appendingPathComponent("store.sqlite").path, configuration: configuration)
        // Half the seeds feed the views the store's commits (as a service does),
        // so most spans come from the recent commits, some of them from a ring
        // of three versions; the others read every span from history.
        let fed = seed % 2 == 0
        let spans = RecentSpans(maxVersions: seed % 4 == 0 ? 3 : 4_096)
        let router = CommitRouter(onCommit: { spans.record($0) })
        let subscription = router.connect(to: store)
        defer { subscription.cancel() }
        let views =
            fed
            ? LiveViews(
                store: store, stager: CatchUpStager(), budget: seed % 3 == 0 ? 1 : 64 << 20, spans: spans,
                head: { router.head(of: $0) })
            : LiveViews(store: store, stager: CatchUpStager(), budget: seed % 3 == 0 ? 1 : 64 << 20)
        let list: Identifier = "l"
        var body: [NewSection] = []
        for section in 0..<3 {
            var items: [NewItem] = []
            for item in 0..<8 {
                items.append(NewItem(id: Identifier("i\(section)-\(item)"), model: try Self.model(&random)))
            }
            body.append(NewSection(id: Identifier("s\(section)"), items: items))
        }
        var snapshots: [Int64: ListSnapshot] = [1: try await store.createList(id: list, name: "", sections: body)]
        let specs = try (0..<6).map { _ in try Self.view(&random) }
        var version: Int64 = 1
        var counter = 0
        var checked = 0
        for step in 0..<Self.writes {
            let current = try #require(snapshots[version])
            let ops = try Self.ops(current, &random, counter: &counter)
            let result: WriteResult
            do throws(StoreError) {
                result = try await store.apply(ops, to: list, expectedVersion: nil)
            } catch {
                continue
            }
            guard result.changed else { continue }
            version = result.version
            let now = try await store.snapshot(of: list)
            #expect(now.version == version)
            snapshots[version] = now
            for spec in specs {
                let key = LiveViews.Key(list: list, view: spec)
                let context = "seed \(seed) step \(step) v\(version) \(spec)"
                let expected = try Self.oracle(now, spec)
                let (head, bytes) = try await views.snapshot(key)
                #expect(head.version == version, "\(context)")
                let sections = try WireDecoding.sections(try Self.json(bytes)["sections"]?.arrayValue ?? [])
                #expect(sections == expected, "\(context): the kept view's snapshot")
                var asked: Set<Int64> = [version - 1]
                asked.insert(Int64.random(in: 1...version, using: &random))
                for since in asked {
                    guard let old = snapshots[since] else { continue }
                    let answer = try #require(
                        try await views.answer(key, from: since, epoch: nil, maxChanges: nil), "\(context)")
                    let value = try Self.json(answer.json)
                    #expect(
                        value["reset"] == nil && value["to"]?.intValue == Int(version), "\(context) since v\(since)")
                    let applied = try Self.apply(value, to: try Self.oracle(old, spec))
                    #expect(
                        applied == expected,
                        "\(context) since v\(since): \(String(decoding: answer.json, as: UTF8.self).prefix(400))")
                    checked += 1
                }
            }
        }
        #expect(checked > Self.writes * 6)
        if fed, seed % 3 != 0 {
            // Kept (not dropped by a one-byte budget), the views moved forward by the commits.
            #expect(views.spansFromRecentCommits > Self.writes, "seed \(seed)")
        } else if !fed {
            #expect(views.spansFromRecentCommits == 0)
        }
        await store.close()
    }

    /// A view kept at a version A and moved on by a span that starts earlier
    /// (from B < A: several answers asking from different versions move one
    /// kept view) must end exactly at the span's end, including the items
    /// and sections made after B and deleted again, which the state at A holds.
    @Test(arguments: seeds)
    func aViewKeptInsideASpanMovesToItsEnd(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed &+ 1_000)
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("live-views-span-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = StoreConfiguration(fullSync: false, historyVersions: 10_000)
        configuration.migrationsDirectory = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Migrations", isDirectory: true)
        let store = try await SQLiteStore(
            path: directory.appendingPathComponent("store.sqlite").path, configuration: configuration)
        let list: Identifier = "l"
        var body: [NewSection] = []
        for section in 0..<3 {
            let items = try (0..<6).map { item in
                NewItem(id: Identifier("i\(section)-\(item)"), model: try Self.model(&random))
            }
            body.append(NewSection(id: Identifier("s\(section)"), items: items))
        }
        var current = try await store.createList(id: list, name: "", sections: body)
        let specs = try (0..<4).map { _ in try Self.view(&random) }
        // Each view as kept at every version.
        var kept: [Int64: [ViewState]] = [:]
        func keep() async throws {
            kept[current.version] = try await specs.asyncMap { spec in
                let conditions = spec.conditions.map { ItemQuery.Condition(path: $0.path, value: $0.value) }
                return try ViewState(view: spec, rows: try await store.viewRows(of: list, matching: conditions))
            }
        }
        try await keep()
        var counter = 0
        var checked = 0
        for step in 0..<40 {
            let ops = try Self.ops(current, &random, counter: &counter)
            do throws(StoreError) {
                _ = try await store.apply(ops, to: list, expectedVersion: nil)
            } catch {
                continue
            }
            current = try await store.snapshot(of: list)
            try await keep()
            let versions = kept.keys.sorted()
            for _ in 0..<3 {
                let at = versions[Int.random(in: 0..<versions.count, using: &random)]
                let from = versions.filter { $0 <= at }.randomElement(using: &random) ?? at
                let span = try #require(try await store.touched(list, since: from))
                #expect(span.head.version == current.version)
                for (index, spec) in specs.enumerated() {
                    var state = try #require(kept[at]?[index])
                    try state.advance(by: span)
                    #expect(
                        state.viewSections == (try Self.oracle(current, spec)),
                        "seed \(seed) step \(step): \(spec) kept at v\(at), moved by the span from v\(from) to v\(current.version)"
                    )
                    checked += 1
                }
            }
        }
        #expect(checked > 300)
        await store.close()
    }
}

extension Sequence {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}

extension Array {
    fileprivate func pick(_ random: inout SeededGenerator) -> Element {
        self[Int.random(in: 0..<count, using: &random)]
    }
}
