import ListModel
import ListWire
import SectionDiff

/// A net change as bytes, to keep with an idempotency record in the write's
/// own transaction (``StoredAnswer/change``): the service renders the answer
/// from it again on a retry, byte for byte what the first request got, so
/// the writer thread stores the change instead of staging and encoding the
/// answer itself before the commit.
///
/// Format 2 (what ``encoded()`` writes): the format byte; the list id and
/// the epoch (each a length and UTF-8 bytes); `from` and `to`; then `old`
/// and `new`, each a section count and, per section, its condensed model and
/// an item count with each condensed item. A condensed entry is a tag byte:
/// 0, an element (its id and its model's canonical text); 1, a run (its id,
/// zigzag-encoded, and its count). Every length, count and integer is an
/// unsigned LEB128 varint (7 bits a byte, low bits first), so the usual
/// change of one item takes about 110 bytes.
///
/// Format 1, written before (records kept from then still replay): the same
/// fields with lengths and counts as 4 bytes and integers (versions, a run's
/// id and count) as 8, little-endian: about 210 bytes for the same change.
/// Every byte of a record is a byte the writer thread writes into the
/// database and its log inside the write's transaction.
extension NetChange {
    /// The format ``encoded()`` writes.
    static let encodingFormat: UInt8 = 2

    /// The change as bytes (format 2).
    /// - Complexity: O(the change's entries and the bytes of their ids and models).
    public func encoded() -> [UInt8] {
        var out = ChangeBytes()
        out.bytes.reserveCapacity(128)
        out.bytes.append(Self.encodingFormat)
        out.string(list.rawValue)
        out.string(epoch)
        out.varint(UInt64(bitPattern: from))
        out.varint(UInt64(bitPattern: to))
        out.sections(old)
        out.sections(new)
        return out.bytes
    }

    /// The change `encoded()` gave (format 2, or format 1 as written
    /// before); `nil` for bytes that are not one (another format, cut short,
    /// or damaged), never a trap.
    public init?(encoded bytes: [UInt8]) {
        guard let format = bytes.first, format == 1 || format == Self.encodingFormat else { return nil }
        var input = ChangeReader(bytes: bytes, wide: format == 1)
        input.offset = 1
        guard let listText = input.string(), let list = Identifier(listText), let epoch = input.string(),
            let from = input.integer(), let to = input.integer(), let old = input.sections(),
            let new = input.sections(), input.atEnd
        else { return nil }
        self.init(
            list: list, epoch: epoch, from: Int64(bitPattern: from), to: Int64(bitPattern: to), old: old, new: new)
    }
}

/// ``NetChange/encoded()``'s writer (format 2).
private struct ChangeBytes {
    var bytes: [UInt8] = []

    /// `value` as an unsigned LEB128 varint: 1 byte below 128, at most 10.
    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    mutating func count(_ value: Int) { varint(UInt64(value)) }

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
            // Zigzag: small ids of either sign take few bytes.
            let id = Int64(id)
            varint(UInt64(bitPattern: (id << 1) ^ (id >> 63)))
            self.count(count)
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
    /// Format 1: lengths and counts as 4 bytes, integers as 8; format 2: varints.
    let wide: Bool
    var offset = 0

    var atEnd: Bool { offset == bytes.count }

    mutating func byte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// An unsigned LEB128 varint of at most 10 bytes that fits 64 bits.
    mutating func varint() -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count {
            let byte = bytes[offset]
            offset += 1
            // The tenth byte holds bit 63 alone.
            guard shift < 63 || byte <= 1 else { return nil }
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }

    mutating func count() -> Int? {
        guard wide else {
            guard let value = varint(), value <= UInt64(Int.max) else { return nil }
            return Int(value)
        }
        guard bytes.count - offset >= 4 else { return nil }
        var value: UInt32 = 0
        for index in 0..<4 { value |= UInt32(bytes[offset + index]) << UInt32(8 * index) }
        offset += 4
        return Int(value)
    }

    mutating func integer() -> UInt64? {
        guard wide else { return varint() }
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
        case 1 where wide:
            guard let id = integer(), let count = integer(), Int64(bitPattern: count) >= 0 else { return nil }
            return .run(id: Int(Int64(bitPattern: id)), count: Int(Int64(bitPattern: count)))
        case 1:
            guard let zigzag = varint(), let count = count() else { return nil }
            let id = Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1)
            return .run(id: Int(id), count: count)
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
