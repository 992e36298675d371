import Foundation
import JSON
import ListModel
import ListStore
import ListdTestSupport
import Testing

@testable import ListAPI

/// The cross-language conformance fixture: (snapshot before, change answer,
/// snapshot after) triples made by the server's own change engine, checked in
/// at Tests/Fixtures/stage-conformance.json and replayed by the Swift client's
/// tests (ListClientTests/StageFixtureReplayTests) and the JavaScript
/// client's (clients/js/listd.test.mjs), so both apply stages the same way.
///
/// `LISTD_WRITE_FIXTURES=1 swift test --filter StageFixtureTests` rewrites
/// the file (seed 13, so the same engine gives the same file); without it,
/// this test checks that every triple in the file is what the engine says now.
@Suite struct StageFixtureTests {
    static var fixtureURL: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/stage-conformance.json")
    }

    static let caseCount = 160

    /// A random list: up to 5 sections of up to 7 items, ids from a small pool so edits overlap.
    static func randomSnapshot(version: Int64, using generator: inout SeededGenerator) -> ListSnapshot {
        var itemPool = (0..<24).map { "i\($0)" }.shuffled(using: &generator)
        let sectionPool = (0..<8).map { "s\($0)" }.shuffled(using: &generator)
        let sectionCount = Int.random(in: 0...5, using: &generator)
        var sections: [SectionSnapshot] = []
        for index in 0..<sectionCount {
            let itemCount = Int.random(in: 0...min(7, itemPool.count), using: &generator)
            let items = (0..<itemCount).map { _ in
                ItemSnapshot(id: Identifier(itemPool.removeLast())!, model: randomModel(using: &generator))
            }
            sections.append(
                SectionSnapshot(
                    id: Identifier(sectionPool[index])!, model: randomModel(using: &generator), items: items))
        }
        return ListSnapshot(
            id: Identifier("fixture"), name: "Fixture", epoch: "e1", version: version, sections: sections)
    }

    static func randomModel(using generator: inout SeededGenerator) -> Model {
        switch Int.random(in: 0..<4, using: &generator) {
        case 0: return Model(.object([:]))
        case 1: return Model(.object(["n": .number(JSONNumber(Int.random(in: 0..<3, using: &generator)))]))
        case 2: return Model(.object(["title": .string(["a", "b"].randomElement(using: &generator)!)]))
        default: return Model(.object(["done": .bool(Bool.random(using: &generator))]))
        }
    }

    /// A snapshot derived from `old` by random edits, so answers have moves and updates, not only resets.
    static func edited(_ old: ListSnapshot, using generator: inout SeededGenerator) -> ListSnapshot {
        var new = old
        new.version = old.version + Int64.random(in: 1...5, using: &generator)
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            switch Int.random(in: 0..<7, using: &generator) {
            case 0 where new.sections.count > 1:
                let from = Int.random(in: 0..<new.sections.count, using: &generator)
                let section = new.sections.remove(at: from)
                new.sections.insert(section, at: Int.random(in: 0...new.sections.count, using: &generator))
            case 1 where !new.sections.isEmpty:
                let index = Int.random(in: 0..<new.sections.count, using: &generator)
                new.sections[index].model = randomModel(using: &generator)
            case 2 where !new.sections.isEmpty:
                new.sections.remove(at: Int.random(in: 0..<new.sections.count, using: &generator))
            case 3:
                let used = Set(new.sections.map(\.id.rawValue))
                if let id = (0..<8).map({ "s\($0)" }).first(where: { !used.contains($0) }) {
                    let used = Set(new.sections.flatMap { $0.items.map(\.id.rawValue) })
                    let items = (0..<24).map { "i\($0)" }.filter { !used.contains($0) }.prefix(2).map {
                        ItemSnapshot(id: Identifier($0)!, model: randomModel(using: &generator))
                    }
                    new.sections.insert(
                        SectionSnapshot(
                            id: Identifier(id)!, model: randomModel(using: &generator), items: Array(items)),
                        at: Int.random(in: 0...new.sections.count, using: &generator))
                }
            default:
                let filled = new.sections.indices.filter { !new.sections[$0].items.isEmpty }
                guard let section = filled.randomElement(using: &generator), !new.sections.isEmpty else { continue }
                let item = Int.random(in: 0..<new.sections[section].items.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0:
                    new.sections[section].items[item].model = randomModel(using: &generator)
                case 1:
                    new.sections[section].items.remove(at: item)
                default:
                    let moved = new.sections[section].items.remove(at: item)
                    let target = Int.random(in: 0..<new.sections.count, using: &generator)
                    new.sections[target].items.insert(
                        moved, at: Int.random(in: 0...new.sections[target].items.count, using: &generator))
                }
            }
        }
        return new
    }

    /// The triples, as the engine makes them from seed 13.
    static func generate() -> [(before: ListSnapshot, answer: EncodedChangeAnswer, after: ListSnapshot)] {
        var generator = SeededGenerator(seed: 13)
        return (0..<caseCount).map { index in
            let before = randomSnapshot(version: Int64(index + 1), using: &generator)
            // One in five: a client whose version the server cannot diff from (history
            // gone, a foreign epoch) gets a reset; the rest get stages, never a reset for size.
            if Int.random(in: 0..<5, using: &generator) > 0 {
                let after = edited(before, using: &generator)
                return (before, EncodedChangeAnswer.between(before, after), after)
            }
            let after = randomSnapshot(version: before.version + 1, using: &generator)
            return (before, EncodedChangeAnswer.reset(after, from: before.version), after)
        }
    }

    static func fileText(_ triples: [(before: ListSnapshot, answer: EncodedChangeAnswer, after: ListSnapshot)])
        -> String
    {
        var lines = [
            "{\"generatedBy\": \"Tests/ListAPITests/StageFixtureTests.swift (LISTD_WRITE_FIXTURES=1)\", \"cases\": ["
        ]
        for (index, triple) in triples.enumerated() {
            var writer = JSONWriter(capacity: 1024)
            writer.beginObject()
            writer.key("before")
            writer.snapshot(triple.before)
            writer.key("answer")
            writer.raw(triple.answer.json)
            writer.key("after")
            writer.snapshot(triple.after)
            writer.endObject()
            lines.append(String(decoding: writer.bytes, as: UTF8.self) + (index == triples.count - 1 ? "" : ","))
        }
        lines.append("]}")
        return lines.joined(separator: "\n") + "\n"
    }

    @Test func fixtureFileHoldsWhatTheEngineAnswers() throws {
        let triples = Self.generate()
        #expect(triples.contains { !$0.answer.reset && $0.answer.stageCount > 1 }, "some answers need several stages")
        #expect(triples.contains { $0.answer.reset }, "some answers are resets")
        let text = Self.fileText(triples)
        if ProcessInfo.processInfo.environment["LISTD_WRITE_FIXTURES"] == "1" {
            try text.write(to: Self.fixtureURL, atomically: true, encoding: .utf8)
        }
        let stored = try String(contentsOf: Self.fixtureURL, encoding: .utf8)
        let storedCases = try #require(
            try JSONValue(parsing: Array(stored.utf8), limits: JSONLimits(maxBytes: 16 << 20))["cases"]?.arrayValue)
        #expect(storedCases.count == Self.caseCount)
        // Each stored triple's snapshots are the generated ones; the answer
        // may differ in its staging if the engine changed, so it is checked by
        // replay (ListClientTests), not byte for byte.
        for (index, triple) in triples.enumerated() where index < storedCases.count {
            var writer = JSONWriter(capacity: 512)
            writer.snapshot(triple.before)
            #expect(storedCases[index]["before"]?.canonicalText == (try JSONValue(parsing: writer.bytes)).canonicalText)
        }
    }
}
