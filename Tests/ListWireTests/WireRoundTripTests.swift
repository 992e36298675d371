import JSON
import ListWire
import ListdTestSupport
import SectionDiff
import Testing

/// Every wire shape is written by ListWire's writers and read back by its
/// decoders; the round trip must give back the value, over seeded random lists
/// and the staged changesets SectionDiff computes between them.
///
/// `LISTD_SEED` replays a run; `LISTD_LONG_TESTS=1` runs a hundred times more cases.
@Suite struct WireRoundTripTests {
    /// A random canonical model: scalars, escapes and non-ASCII text, nested values.
    static func randomModel(using generator: inout SeededGenerator, depth: Int = 0) -> JSONText {
        JSONText(randomValue(using: &generator, depth: depth).canonicalText)
    }

    static func randomValue(using generator: inout SeededGenerator, depth: Int) -> JSONValue {
        let strings = [
            "", "a", "caf\u{E9}", "cafe\u{301}", "quote \" and \\ slash", "line\nbreak", "\u{1F600}", "\u{7}",
        ]
        switch Int.random(in: 0..<(depth > 2 ? 5 : 7), using: &generator) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &generator))
        case 2: return .number(JSONNumber(Int64.random(in: -1_000_000...1_000_000, using: &generator)))
        case 3: return .number(JSONNumber(floatLiteral: Double.random(in: -1e6...1e6, using: &generator)))
        case 4: return .string(strings.randomElement(using: &generator) ?? "")
        case 5:
            return .array(
                (0..<Int.random(in: 0...3, using: &generator)).map { _ in
                    randomValue(using: &generator, depth: depth + 1)
                })
        default:
            var members: [(String, JSONValue)] = []
            for key in ["title", "qty", "done", "é", "z"] where Bool.random(using: &generator) {
                members.append((key, randomValue(using: &generator, depth: depth + 1)))
            }
            return .object(JSONObject(members))
        }
    }

    /// Up to 6 sections of up to 8 items, ids from small pools so that edits overlap.
    static func randomSections(using generator: inout SeededGenerator) -> ListSections {
        var itemPool = (0..<40).map { "item-\($0)" }.shuffled(using: &generator)
        let sectionPool = (0..<10).map { "section \"\($0)\"" }.shuffled(using: &generator)
        return (0..<Int.random(in: 0...6, using: &generator)).map { index in
            let items = (0..<Int.random(in: 0...min(8, itemPool.count), using: &generator)).map { _ in
                JSONEntry(id: itemPool.removeLast(), model: randomModel(using: &generator))
            }
            return ArraySection(
                model: JSONEntry(id: sectionPool[index], model: randomModel(using: &generator)), items: items)
        }
    }

    /// `old` with random moves, updates, deletions and insertions.
    static func edited(_ old: ListSections, using generator: inout SeededGenerator) -> ListSections {
        var new = old
        for _ in 0..<Int.random(in: 0...6, using: &generator) {
            switch Int.random(in: 0..<6, using: &generator) {
            case 0 where new.count > 1:
                let section = new.remove(at: Int.random(in: 0..<new.count, using: &generator))
                new.insert(section, at: Int.random(in: 0...new.count, using: &generator))
            case 1 where !new.isEmpty:
                let index = Int.random(in: 0..<new.count, using: &generator)
                new[index].model = JSONEntry(id: new[index].model.id, model: randomModel(using: &generator))
            case 2 where !new.isEmpty:
                new.remove(at: Int.random(in: 0..<new.count, using: &generator))
            case 3:
                let used = Set(new.map(\.model.id))
                if let id = (0..<10).map({ "section \"\($0)\"" }).first(where: { !used.contains($0) }) {
                    let usedItems = Set(new.flatMap { $0.items.map(\.id) })
                    let items = (0..<40).map { "item-\($0)" }.filter { !usedItems.contains($0) }.prefix(2).map {
                        JSONEntry(id: $0, model: randomModel(using: &generator))
                    }
                    new.insert(
                        ArraySection(
                            model: JSONEntry(id: id, model: randomModel(using: &generator)), items: Array(items)),
                        at: Int.random(in: 0...new.count, using: &generator))
                }
            default:
                let filled = new.indices.filter { !new[$0].items.isEmpty }
                guard let section = filled.randomElement(using: &generator) else { continue }
                let index = Int.random(in: 0..<new[section].items.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0:
                    let id = new[section].items[index].id
                    new[section].items[index] = JSONEntry(id: id, model: randomModel(using: &generator))
                case 1:
                    new[section].items.remove(at: index)
                default:
                    let moved = new[section].items.remove(at: index)
                    let target = Int.random(in: 0..<new.count, using: &generator)
                    new[target].items.insert(moved, at: Int.random(in: 0...new[target].items.count, using: &generator))
                }
            }
        }
        return new
    }

    static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        try JSONValue(parsing: bytes, limits: JSONLimits(maxDepth: 256, maxBytes: 1 << 24))
    }

    @Test func snapshotsRoundTrip() throws {
        var generator = SeededGenerator(seed: SeededGenerator.seed(for: "snapshotsRoundTrip"))
        for _ in 0..<SeededGenerator.cases(normal: 200, long: 50_000) {
            let state = ListState(
                id: "list-\(Int.random(in: 0..<100, using: &generator))", name: "Name \u{E9}\"",
                epoch: "e\(Int.random(in: 0..<9, using: &generator))",
                version: Int64.random(in: 0...Int64.max, using: &generator),
                sections: Self.randomSections(using: &generator))
            let decoded = try ListState(json: try Self.parse(state.jsonBytes))
            #expect(decoded == state)
            #expect(try ListState(json: state.json) == state)
        }
    }

    @Test func stagedAnswersRoundTripAndApply() throws {
        var generator = SeededGenerator(seed: SeededGenerator.seed(for: "stagedAnswersRoundTripAndApply"))
        var stagesSeen = 0
        for _ in 0..<SeededGenerator.cases(normal: 300, long: 100_000) {
            let old = Self.randomSections(using: &generator)
            let new =
                Bool.random(using: &generator)
                ? Self.edited(old, using: &generator) : Self.randomSections(using: &generator)
            let changeset = ListChangeset(from: old, to: new)

            // Each stage alone: written, read back against the state it applies to, equal.
            var current = old
            for stage in changeset.stages {
                var writer = JSONWriter()
                writer.stage(stage)
                let decoded = try WireDecoding.stage(try Self.parse(writer.bytes), before: current)
                #expect(decoded == stage)
                current = try stage.apply(to: current)
                stagesSeen += 1
            }
            #expect(current == new)

            // The whole answer: decoded as a client does and applied.
            var writer = JSONWriter()
            writer.stagedAnswer(list: "l", epoch: "e", from: 4, to: 9, stages: changeset)
            let answer = try ChangeAnswer(json: try Self.parse(writer.bytes))
            #expect(answer.list == "l" && answer.epoch == "e" && answer.from == 4 && answer.to == 9)
            #expect(!answer.isReset)
            #expect(answer.stages.count == changeset.stages.count)
            let before = ListState(id: "l", name: "", epoch: "e", version: 4, sections: old)
            let applied = try answer.applied(to: before)
            #expect(applied.map(\.stage) == changeset.stages)
            #expect((applied.last?.sections ?? old) == new)
        }
        #expect(stagesSeen > 0)
    }

    @Test func resetAndUnchangedAnswersRoundTrip() throws {
        var generator = SeededGenerator(seed: SeededGenerator.seed(for: "resetAndUnchangedAnswersRoundTrip"))
        for _ in 0..<SeededGenerator.cases(normal: 100, long: 30_000) {
            let state = ListState(
                id: "l", name: "n", epoch: "e2", version: Int64.random(in: 1...1000, using: &generator),
                sections: Self.randomSections(using: &generator))
            let from = Int64.random(in: 0...2000, using: &generator)
            var writer = JSONWriter()
            writer.resetAnswer(
                from: from, id: state.id, name: state.name, epoch: state.epoch, version: state.version,
                sections: state.sections)
            let reset = try ChangeAnswer(json: try Self.parse(writer.bytes))
            #expect(reset.isReset)
            #expect(reset.snapshot == state)
            #expect(reset.from == from && reset.to == state.version && reset.stages.isEmpty)

            var unchangedWriter = JSONWriter()
            unchangedWriter.unchangedAnswer(list: state.id, epoch: state.epoch, version: state.version)
            let unchanged = try ChangeAnswer(json: try Self.parse(unchangedWriter.bytes))
            #expect(!unchanged.isReset)
            #expect(unchanged.from == state.version && unchanged.to == state.version && unchanged.stages.isEmpty)
            #expect(try unchanged.applied(to: state).isEmpty)
        }
    }

    @Test func manyListsAnswersRoundTrip() throws {
        var one = JSONWriter()
        one.unchangedAnswer(list: "a", epoch: "e", version: 3)
        var writer = JSONWriter()
        writer.manyListsAnswer([(list: "a", json: one.bytes)], deleted: ["b"])
        #expect(
            writer.text
                == #"{"lists":{"a":{"list":"a","epoch":"e","from":3,"to":3,"stages":[]},"b":{"list":"b","deleted":true}}}"#
        )
        let decoded = try ChangeAnswer.manyLists(json: try Self.parse(writer.bytes))
        #expect(decoded.count == 2)
        #expect(decoded["a"]??.to == 3)
        #expect(decoded["b"] == .some(nil))
    }

    /// The exact bytes of API.md's example stage, so a change to the writer shows here first.
    @Test func stageWireFormIsAPIs() throws {
        func entry(_ id: String, _ model: String) -> JSONEntry { JSONEntry(id: id, model: JSONText(model)) }
        let stage = ListStage(
            sectionDeleted: [2],
            sectionInserted: [.init(at: 0, section: ArraySection(model: entry("s", "{}"), items: [entry("i", "1")]))],
            sectionUpdated: [.init(at: 1, model: entry("t", #"{"a":1}"#))], sectionMoved: [SectionMove(from: 3, to: 1)],
            itemDeleted: [ElementPath(element: 4, section: 0)],
            itemInserted: [.init(at: ElementPath(element: 0, section: 1), item: entry("j", "null"))],
            itemUpdated: [.init(at: ElementPath(element: 1, section: 1), item: entry("k", "true"))],
            itemMoved: [ItemMove(from: ElementPath(element: 2, section: 0), to: ElementPath(element: 3, section: 1))])
        var writer = JSONWriter()
        writer.stage(stage)
        #expect(
            writer.text
                == #"{"sectionDeleted":[2],"sectionInserted":[{"at":0,"section":{"id":"s","model":{},"items":[{"id":"i","model":1}]}}],"#
                + #""sectionUpdated":[{"at":1,"model":{"a":1}}],"sectionMoved":[{"from":3,"to":1}],"itemDeleted":[[0,4]],"#
                + #""itemInserted":[{"at":[1,0],"item":{"id":"j","model":null}}],"itemUpdated":[{"at":[1,1],"model":true}],"#
                + #""itemMoved":[{"from":[0,2],"to":[1,3]}]}"#)
        var empty = JSONWriter()
        empty.stage(ListStage())
        #expect(empty.text == "{}")
    }

    @Test(arguments: [
        (#"[1]"#, "a stage must be an object"),
        (#"{"itemShuffled":[]}"#, "unknown field \"itemShuffled\""),
        (#"{"itemDeleted":[[0]]}"#, "itemDeleted: [0] is not a [section, item] pair"),
        (#"{"itemDeleted":3}"#, "itemDeleted must be an array"),
        (#"{"sectionDeleted":["x"]}"#, "sectionDeleted needs a section index"),
        (#"{"sectionInserted":[{"at":0}]}"#, "sectionInserted needs section"),
        (#"{"sectionUpdated":[{"at":5,"model":1}]}"#, "sectionUpdated names section 5, but the state has 1"),
        (#"{"itemUpdated":[{"at":[0,9],"model":1}]}"#, "itemUpdated names [0, 9], which the state does not hold"),
        (#"{"itemInserted":[{"at":[0,0],"item":{"id":"x"}}]}"#, "an item needs id and model"),
    ])
    func badStagesAreRefusedNamingTheField(text: String, detail: String) throws {
        let before: ListSections = [
            ArraySection(
                model: JSONEntry(id: "s", model: JSONText("{}")), items: [JSONEntry(id: "i", model: JSONText("1"))])
        ]
        let error = #expect(throws: WireError.self) {
            try WireDecoding.stage(try Self.parse(Array(text.utf8)), before: before)
        }
        #expect(error?.detail.contains(detail) == true, "\(error?.detail ?? "no error")")
    }

    @Test func answersMissingMembersAreRefused() throws {
        #expect(throws: WireError.self) {
            try ChangeAnswer(json: try Self.parse(Array(#"{"list":"l","epoch":"e","from":1}"#.utf8)))
        }
        #expect(throws: WireError.self) {
            try ChangeAnswer(
                json: try Self.parse(Array(#"{"list":"l","epoch":"e","from":1,"to":2,"reset":true}"#.utf8)))
        }
        #expect(throws: WireError.self) { try ListState(json: try Self.parse(Array(#"{"id":"l","epoch":"e"}"#.utf8))) }
    }
}
