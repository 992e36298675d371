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
/// decode to nil, never a trap. Records kept in format 1 (before format 2's
/// varints) still decode: a record written then, and random changes written
/// by this file's own format-1 writer.
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
        for format: UInt8 in [0, 3, 255] {
            var otherFormat = bytes
            otherFormat[0] = format
            #expect(NetChange(encoded: otherFormat) == nil, "format \(format)")
        }
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

    /// A record of a keyed single-item update that a build writing format 1
    /// kept (read off its database): item i4970 of 10,000 changed from
    /// `{"n":4970}` to `{"c":2}` between versions 1 and 2.
    static let keptInFormat1 =
        "01020000006B311A00000030316D386A34393436366D6E637935336235687A726363703679010000000000000002000000000000000100000000020000007330020000007B7D030000000100000000000000006A13000000000000000500000069343937300A0000007B226E223A343937307D010100000000000000A5130000000000000100000000020000007330020000007B7D030000000100000000000000006A1300000000000000050000006934393730070000007B2263223A327D010100000000000000A513000000000000"

    @Test func aRecordKeptInFormat1StillDecodes() throws {
        let hex = Array(Self.keptInFormat1.utf8)
        let bytes = stride(from: 0, to: hex.count, by: 2).map {
            UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16)!
        }
        func section(_ model: String) -> ArraySection<Condensed<JSONEntry>, Condensed<JSONEntry>> {
            ArraySection(
                model: .element(JSONEntry(id: "s0", model: JSONText("{}"))),
                items: [
                    .run(id: 0, count: 4970), .element(JSONEntry(id: "i4970", model: JSONText(model))),
                    .run(id: 1, count: 5029),
                ])
        }
        let change = try #require(NetChange(encoded: bytes))
        #expect(
            change
                == NetChange(
                    list: id("k1"), epoch: "01m8j49466mncy53b5hzrccp6y", from: 1, to: 2,
                    old: [section(#"{"n":4970}"#)], new: [section(#"{"c":2}"#)]))
        // Format 2 keeps the same change in about half the bytes.
        #expect(change.encoded().count < bytes.count * 6 / 10, "\(change.encoded().count) bytes against \(bytes.count)")
        #expect(NetChange(encoded: change.encoded()) == change)
    }

    @Test(arguments: Array(UInt64(1)...100))
    func aRandomChangeInFormat1Decodes(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let change = Self.change(&random)
        #expect(NetChange(encoded: Self.format1(change)) == change, "seed \(seed)")
    }

    /// Format 1 as builds before format 2 wrote it: 4-byte lengths and
    /// counts, 8-byte integers, little-endian.
    static func format1(_ change: NetChange) -> [UInt8] {
        var out: [UInt8] = [1]
        func fixed<Value: FixedWidthInteger>(_ value: Value) { withUnsafeBytes(of: value.littleEndian) { out += $0 } }
        func text(_ value: String) {
            fixed(UInt32(value.utf8.count))
            out += value.utf8
        }
        func entry(_ entry: Condensed<JSONEntry>) {
            switch entry {
            case .element(let element):
                out.append(0)
                text(element.id)
                text(element.model.text)
            case .run(let id, let count):
                out.append(1)
                fixed(Int64(id))
                fixed(Int64(count))
            }
        }
        func sections(_ sections: CondensedListSections) {
            fixed(UInt32(sections.count))
            for section in sections {
                entry(section.model)
                fixed(UInt32(section.items.count))
                section.items.forEach(entry)
            }
        }
        text(change.list.rawValue)
        text(change.epoch)
        fixed(change.from)
        fixed(change.to)
        sections(change.old)
        sections(change.new)
        return out
    }
}
