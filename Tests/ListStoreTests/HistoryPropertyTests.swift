import Foundation
import JSON
import ListModel
import ListStore
import ListdTestSupport
import Testing

/// Seeded random writes checked against ``ReferenceList``: the snapshot after
/// every write, the version bump rule, and the snapshot rebuilt at random
/// earlier versions (the history property the change stream relies on).
@Suite struct HistoryPropertyTests {
    static let seeds: [UInt64] = longTests ? Array(1...64) : Array(1...12)
    static let writesPerSeed = longTests ? 1_500 : 300

    @Test(arguments: StoreKind.tested, seeds)
    func randomWritesMatchTheReferenceAtEveryVersion(_ kind: StoreKind, seed: UInt64) async throws {
        var rng = SeededGenerator(seed: seed)
        let retained: Int64 = seed % 2 == 0 ? 40 : 10_000
        // A tiny position gap makes sections renumber often.
        let configuration = StoreConfiguration(
            fullSync: false, maxModelBytes: 48, historyVersions: retained, positionGap: 4)
        try await withStore(kind, configuration) { store in
            let list = id("l")
            var reference = ReferenceList(name: "start", maxModelBytes: 48)
            _ = try await store.createList(id: list, name: "start", sections: [])
            var states: [Int64: ReferenceList] = [1: reference]
            var version: Int64 = 1
            var rejected = 0
            var mostItems = 0
            for step in 0..<Self.writesPerSeed {
                // Milliseconds of CPU per step: let the cooperative pool's
                // other tasks (two threads on two cores) run between steps.
                await Task.yield()
                let context = "seed \(seed) step \(step)"
                var expected = reference
                let expectedChange: Result<Bool, StoreError>
                let actual: Result<WriteResult, StoreError>
                if Int.random(in: 0..<20, using: &rng) == 0 {
                    let (name, body) = Self.randomBody(from: reference, using: &rng)
                    expectedChange = .success(expected.replace(name: name, sections: body))
                    actual = await Result(catching: { () async throws(StoreError) in
                        try await store.replace(
                            list, name: name, sections: body.map(\.asNew), expectedVersion: version)
                    })
                } else {
                    let ops = Self.randomOps(from: reference, using: &rng)
                    expectedChange = Result { () throws(StoreError) in try expected.apply(ops) }
                    let expectedVersion: Int64? = Int.random(in: 0..<30, using: &rng) == 0 ? version + 1 : version
                    actual = await Result(catching: { () async throws(StoreError) in
                        try await store.apply(ops, to: list, expectedVersion: expectedVersion)
                    })
                    if expectedVersion != version {
                        guard case .failure(let error) = actual else {
                            Issue.record("\(context): a stale expected version was accepted")
                            return
                        }
                        #expect(error.kind == .versionMismatch(expected: version + 1, actual: version), "\(context)")
                        continue
                    }
                }
                switch (expectedChange, actual) {
                case (.success(let changed), .success(let result)):
                    #expect(result.changed == changed, "\(context)")
                    #expect(result.previousVersion == version, "\(context)")
                    #expect(result.version == version + (changed ? 1 : 0), "\(context)")
                    version = result.version
                    reference = expected
                    states[version] = reference
                    mostItems = max(mostItems, reference.sections.flatMap(\.items).count)
                case (.failure(let want), .failure(let got)):
                    rejected += 1
                    #expect(want.kind == got.kind, "\(context): \(got.detail)")
                    #expect(want.operationIndex == got.operationIndex, "\(context): \(got.detail)")
                case (.success, .failure(let got)):
                    Issue.record("\(context): the store failed a valid write: \(got.detail)")
                    return
                case (.failure(let want), .success):
                    Issue.record("\(context): the store accepted a write the reference rejects (\(want.kind))")
                    return
                }

                let snapshot = try await store.snapshot(of: list)
                #expect(snapshot.version == version, "\(context)")
                #expect(snapshot.name == reference.name && snapshot.sections == reference.sections, "\(context)")

                var asked: Set<Int64> = [version]
                for _ in 0..<3 { asked.insert(Int64.random(in: 1...version, using: &rng)) }
                let history = try await store.snapshots(of: list, at: asked)
                #expect(history.current == snapshot, "\(context)")
                for asked in asked {
                    if let rebuilt = history.atVersion[asked] {
                        let state = try #require(states[asked])
                        #expect(rebuilt.version == asked, "\(context) v\(asked)")
                        #expect(
                            rebuilt.name == state.name && rebuilt.sections == state.sections,
                            "\(context): snapshot at v\(asked) of v\(version)")
                    } else {
                        #expect(asked < history.historyFloor, "\(context): v\(asked) missing above the floor")
                        #expect(asked < version - retained, "\(context): v\(asked) pruned too early")
                    }
                }
            }
            let history = try await store.snapshots(of: list, at: [])
            #expect(history.historyFloor >= max(1, version - retained))
            // The generator must exercise both outcomes substantially, and build a real list.
            #expect(version > Int64(Self.writesPerSeed / 3) && rejected > Self.writesPerSeed / 20)
            #expect(mostItems > 5)
        }
    }

    @Test(arguments: StoreKind.tested) func snapshotsSurviveRenumberingAtOneSpot(_ kind: StoreKind) async throws {
        try await withStore(kind, StoreConfiguration(fullSync: false, positionGap: 1 << 32)) { store in
            let list = id("l")
            _ = try await store.createList(
                id: list, name: "",
                sections: [NewSection(id: id("s"), items: [NewItem(id: id("first")), NewItem(id: id("last"))])])
            var expected = [1: ["first", "last"]]
            var order = ["first", "last"]
            // 32 halvings of a 2^32 gap exhaust it: the 33rd insert renumbers.
            for index in 0..<70 {
                let result = try await store.apply(
                    [.insertItem(section: id("s"), item: NewItem(id: id("n\(index)")), at: 1)], to: list,
                    expectedVersion: nil)
                order.insert("n\(index)", at: 1)
                expected[Int(result.version)] = order
            }
            let history = try await store.snapshots(of: list, at: Set(expected.keys.map(Int64.init)))
            for (version, order) in expected {
                #expect(history.atVersion[Int64(version)]?.sections.first?.items.map(\.id.rawValue) == order)
            }
        }
    }

    // MARK: Generators

    static let sectionIDs = (0..<8).map { id("s\($0)") }
    static let itemIDs = (0..<40).map { id("i\($0)") }
    static let models = [
        Model.emptyObject, model(#"{"n":1}"#), model(#"{"n":2}"#), model(#"[true,null]"#), model("\"x\""),
    ]
    static let tooLarge = model(#"{"text":"this model is longer than forty-eight bytes"}"#)

    static func randomModel(using rng: inout SeededGenerator) -> Model {
        Int.random(in: 0..<40, using: &rng) == 0 ? tooLarge : models.randomElement(using: &rng)!
    }

    static func position(_ count: Int, using rng: inout SeededGenerator) -> Int {
        switch Int.random(in: 0..<10, using: &rng) {
        case 0: return Int.random(in: -1...count + 2, using: &rng)
        case 1...4: return min(1, count)
        default: return Int.random(in: 0...max(0, count), using: &rng)
        }
    }

    /// 1-4 ops, each chosen against the state the previous ones leave, mostly valid.
    static func randomOps(from reference: ReferenceList, using rng: inout SeededGenerator) -> [ListOperation] {
        var scratch = reference
        var ops: [ListOperation] = []
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            let sections = scratch.sections
            let allItems = sections.flatMap(\.items).map(\.id)
            let anySection = sectionIDs.randomElement(using: &rng)!
            let someSection = sections.randomElement(using: &rng)?.id ?? anySection
            let anyItem = itemIDs.randomElement(using: &rng)!
            let someItem = allItems.randomElement(using: &rng) ?? anyItem
            let op: ListOperation
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<8:
                let items = (0..<Int.random(in: 0...2, using: &rng)).map { _ in
                    NewItem(id: itemIDs.randomElement(using: &rng)!, model: randomModel(using: &rng))
                }
                op = .insertSection(
                    NewSection(id: anySection, model: randomModel(using: &rng), items: items),
                    at: Bool.random(using: &rng) ? nil : position(sections.count, using: &rng))
            case 8..<14: op = .updateSection(id: someSection, model: randomModel(using: &rng))
            case 14..<22: op = .moveSection(id: someSection, to: position(sections.count - 1, using: &rng))
            case 22..<25: op = .deleteSection(id: someSection)
            case 25..<55:
                let count = sections.first { $0.id == someSection }?.items.count ?? 0
                op = .insertItem(
                    section: someSection, item: NewItem(id: anyItem, model: randomModel(using: &rng)),
                    at: Int.random(in: 0..<4, using: &rng) == 0 ? nil : position(count, using: &rng))
            case 55..<68: op = .updateItem(id: someItem, model: randomModel(using: &rng))
            case 68..<90:
                let destination = Bool.random(using: &rng) ? nil : someSection
                let count = sections.first { $0.id == destination }?.items.count ?? 3
                op = .moveItem(id: someItem, section: destination, to: position(count, using: &rng))
            default: op = .deleteItem(id: someItem)
            }
            ops.append(op)
            _ = try? scratch.apply([op])
        }
        return ops
    }

    /// A whole new body made by mutating the current one: reorder, drop, move
    /// between sections, add, and change models.
    static func randomBody(from reference: ReferenceList, using rng: inout SeededGenerator)
        -> (String?, [SectionSnapshot])
    {
        var sections = reference.sections
        if Bool.random(using: &rng) { sections.shuffle(using: &rng) }
        if !sections.isEmpty && Int.random(in: 0..<4, using: &rng) == 0 {
            sections.remove(at: Int.random(in: 0..<sections.count, using: &rng))
        }
        var used = Set(sections.flatMap(\.items).map(\.id))
        for index in sections.indices {
            sections[index].items.removeAll { _ in Int.random(in: 0..<6, using: &rng) == 0 }
            if Bool.random(using: &rng) { sections[index].items.shuffle(using: &rng) }
            if Int.random(in: 0..<3, using: &rng) == 0 { sections[index].model = models.randomElement(using: &rng)! }
            for item in sections[index].items.indices where Int.random(in: 0..<5, using: &rng) == 0 {
                sections[index].items[item].model = models.randomElement(using: &rng)!
            }
            if let fresh = itemIDs.filter({ !used.contains($0) }).randomElement(using: &rng) {
                used.insert(fresh)
                sections[index].items.insert(ItemSnapshot(id: fresh, model: .emptyObject), at: 0)
            }
        }
        if sections.count >= 2, let moved = sections[0].items.popLast() {
            sections[1].items.append(moved)
        }
        if let fresh = sectionIDs.first(where: { id in !sections.contains { $0.id == id } }), Bool.random(using: &rng) {
            sections.append(SectionSnapshot(id: fresh, model: .emptyObject, items: []))
        }
        let name: String? = Bool.random(using: &rng) ? nil : ["start", "renamed"].randomElement(using: &rng)!
        return (name, sections)
    }
}

extension Result where Failure == StoreError {
    init(catching body: () async throws(StoreError) -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
