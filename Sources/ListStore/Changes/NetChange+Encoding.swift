import ListModel
import ListWire
import SectionDiff

/// A net change as bytes, to keep with an idempotency record in the write's
/// own transaction (``StoredAnswer/change``): the service renders the answer
/// from it again on a retry, byte for byte what the first request got, so
/// the writer thread stores the change instead of staging and encoding the
/// answer itself before the commit.
///
/// Format 1, all integers little-endian: the format byte; the list id and the
/// epoch (each a length and UTF-8 bytes); `from` and `to` (8 bytes each);
/// then `old` and `new`, each a section count and, per section, its
/// condensed model and an item count with each condensed item. A condensed
/// entry is a tag byte: 0, an element (its id and its model's canonical
/// text); 1, a run (its id and count, 8 bytes each). Lengths and counts are
/// 4 bytes.
extension NetChange {
    /// The format ``encoded()`` writes.
    static let encodingFormat: UInt8 = 1

    /// The change as bytes (format 1).
    /// - Complexity: O(the change's entries and the bytes of their ids and models).
    public func encoded() -> [UInt8] {
        var out = ChangeBytes()
        out.bytes.reserveCapacity(256)
        out.bytes.append(Self.encodingFormat)
        out.string(list.rawValue)
        out.string(epoch)
        out.integer(UInt64(bitPattern: from))
        out.integer(UInt64(bitPattern: to))
        out.sections(old)
        out.sections(new)
        return out.bytes
    }

    /// The change `encoded()` gave; `nil` for bytes that are not one (another
    /// format, cut short, or damaged), never a trap.
    public init?(encoded bytes: [UInt8]) {
        var input = ChangeReader(bytes: bytes)
        guard input.byte() == Self.encodingFormat, let listText = input.string(),
            let list = Identifier(listText), let epoch = input.string(), let from = input.integer(),
            let to = input.integer(), let old = input.sections(), let new = input.sections(), input.atEnd
        else { return nil }
        self.init(
            list: list, epoch: epoch, from: Int64(bitPattern: from), to: Int64(bitPattern: to), old: old, new: new)
    }
}

/// ``NetChange/encoded()``'s writer.
private struct ChangeBytes {
    var bytes: [UInt8] = []

    mutating func count(_ value: Int) {
        let value = UInt32(truncatingIfNeeded: value)
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    mutating func integer(_ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    mutating func string(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            count(utf8.count)
            bytes.append(contentsOf: utf8)
        }
    }

    mutating func entry(_ entry: Condensed<JSONEntry>) {
        switch entry {
        case .element(let element):
            bytes.append(0)
            string(element.id)
            string(element.model.text)
        case .run(let id, let count):
            bytes.append(1)
            integer(UInt64(bitPattern: Int64(id)))
            integer(UInt64(bitPattern: Int64(count)))
        }
    }

    mutating func sections(_ sections: CondensedListSections) {
        count(sections.count)
        for section in sections {
            entry(section.model)
            count(section.items.count)
            for item in section.items { entry(item) }
        }
    }
}

/// ``NetChange/init(encoded:)``'s reader: every read checks what is left.
private struct ChangeReader {
    let bytes: [UInt8]
    var offset = 0

    var atEnd: Bool { offset == bytes.count }

    mutating func byte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func count() -> Int? {
        guard bytes.count - offset >= 4 else { return nil }
        var value: UInt32 = 0
        for index in 0..<4 { value |= UInt32(bytes[offset + index]) << UInt32(8 * index) }
        offset += 4
        return Int(value)
    }

    mutating func integer() -> UInt64? {
        guard bytes.count - offset >= 8 else { return nil }
        var value: UInt64 = 0
        for index in 0..<8 { value |= UInt64(bytes[offset + index]) << UInt64(8 * index) }
        offset += 8
        return value
    }

    mutating func string() -> String? {
        guard let length = count(), bytes.count - offset >= length else { return nil }
        defer { offset += length }
        return String(validating: bytes[offset..<offset + length], as: UTF8.self)
    }

    mutating func entry() -> Condensed<JSONEntry>? {
        switch byte() {
        case 0:
            guard let id = string(), let model = string() else { return nil }
            return .element(JSONEntry(id: id, model: JSONText(model)))
        case 1:
            guard let id = integer(), let count = integer(), Int64(bitPattern: count) >= 0 else { return nil }
            return .run(id: Int(Int64(bitPattern: id)), count: Int(Int64(bitPattern: count)))
        default:
            return nil
        }
    }

    mutating func sections() -> CondensedListSections? {
        // Every section and item takes a byte at least: a count past what is
        // left is damage, not a reason to reserve memory.
        guard let count = count(), count <= bytes.count - offset else { return nil }
        var sections: CondensedListSections = []
        sections.reserveCapacity(count)
        for _ in 0..<count {
            guard let model = entry(), let items = self.count(), items <= bytes.count - offset else { return nil }
            var section = ArraySection<Condensed<JSONEntry>, Condensed<JSONEntry>>(model: model, items: [])
            section.items.reserveCapacity(items)
            for _ in 0..<items {
                guard let item = entry() else { return nil }
                section.items.append(item)
            }
            sections.append(section)
        }
        return sections
    }
}
