import ListModel
import ListStore
import ListWire
import ListdTestSupport
import SectionDiff
import Testing

/// ``NetChange/encoded()`` (what an idempotency record keeps of a keyed
/// write's change) decodes to the same change, for random changes (sections
/// and items as elements and runs, unicode ids and models, extreme versions
/// and run ids) and for the changes real writes make on both stores; and
/// bytes that are not an encoding (cut short, damaged, another format)
/// decode to nil, never a trap.
@Suite struct NetChangeEncodingTests {
    static let texts = ["", "a", "é", "日本語", "🙂 x", "\"quoted\"", String(repeating: "z", count: 300)]

    static func entry(_ random: inout SeededGenerator) -> Condensed<JSONEntry> {
        if Bool.random(using: &random) {
            let id = Int.random(in: Int.min...Int.max, using: &random)
            return .run(id: id, count: Int.random(in: 0...1_000_000, using: &random))
        }
        let id = texts.randomElement(using: &random)! + String(Int.random(in: 0..<1000, using: &random))
        let model = [#"{}"#, #"{"n":1}"#, #"{"n":1.0,"s":"é🙂"}"#, #"[1,[2,{"a":null}]]"#, "true"]
            .randomElement(using: &random)!
        return .element(JSONEntry(id: id, model: JSONText(model)))
    }

    static func sections(_ random: inout SeededGenerator) -> CondensedListSections {
        (0..<Int.random(in: 0...4, using: &random)).map { _ in
            ArraySection(
                model: entry(&random), items: (0..<Int.random(in: 0...6, using: &random)).map { _ in entry(&random) })
        }
    }

    static func change(_ random: inout SeededGenerator) -> NetChange {
        NetChange(
            list: Identifier(["l", "list-9", "a_b"].randomElement(using: &random)!)!,
            epoch: texts.randomElement(using: &random)!,
            from: [0, 1, Int64.max, Int64.random(in: 0...Int64.max, using: &random)].randomElement(using: &random)!,
            to: Int64.random(in: 0...Int64.max, using: &random), old: sections(&random), new: sections(&random))
    }

    @Test(arguments: Array(UInt64(1)...200))
    func aRandomChangeDecodesToItself(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let change = Self.change(&random)
        let bytes = change.encoded()
        #expect(NetChange(encoded: bytes) == change, "seed \(seed)")
    }

    @Test(arguments: Array(UInt64(1)...40))
    func bytesThatAreNotAnEncodingDecodeToNil(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let bytes = Self.change(&random).encoded()
        // Every cut is too short (the format has no optional tail).
        for length in 0..<bytes.count {
            #expect(NetChange(encoded: Array(bytes[..<length])) == nil, "seed \(seed): cut at \(length)")
        }
        #expect(NetChange(encoded: bytes + [0]) == nil, "seed \(seed): a byte too many")
        var otherFormat = bytes
        otherFormat[0] = 2
        #expect(NetChange(encoded: otherFormat) == nil)
        // A damaged byte gives nil or some change, never a trap (a count that
        // claims more than the bytes left is refused before any reservation).
        for _ in 0..<200 {
            var damaged = bytes
            let index = Int.random(in: 0..<damaged.count, using: &random)
            damaged[index] = UInt8.random(in: 0...255, using: &random)
            _ = NetChange(encoded: damaged)
        }
        let noise = (0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
        _ = NetChange(encoded: noise)
    }

    /// The changes writes really make (runs of untouched items, moved and
    /// changed entries, sections made and deleted), on both stores.
    @Test(arguments: StoreKind.tested)
    func theChangesOfRealWritesDecodeToThemselves(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let list = id("encoded")
            let items = try (0..<50).map {
                NewItem(id: id("i\($0)"), model: try Model(parsing: Array("{\"n\":\($0)}".utf8)))
            }
            _ = try await store.createList(
                id: list, name: "", sections: [NewSection(id: id("s"), items: items), NewSection(id: id("t"))])
            let writes: [[ListOperation]] = [
                [.updateItem(id: id("i7"), model: try Model(parsing: Array(#"{"n":"seven é"}"#.utf8)))],
                [.moveItem(id: id("i3"), section: id("t"), to: 0), .deleteItem(id: id("i40"))],
                [.insertSection(NewSection(id: id("u")), at: 0), .moveSection(id: id("t"), to: 0)],
                [.deleteSection(id: id("u"))],
            ]
            for operations in writes {
                let result = try await store.apply(operations, to: list, expectedVersion: nil)
                let change = try #require(result.change, "\(kind) recorded no change")
                #expect(NetChange(encoded: change.encoded()) == change)
            }
        }
    }
}
