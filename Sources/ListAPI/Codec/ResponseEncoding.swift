import HTTP
import JSON
import ListStore
import SectionDiff

/// The staged changeset type the service computes and sends: sections and
/// items are both identified by their ids and compared by canonical model text.
typealias ListChangeset = StagedChangeset<JSONEntry, JSONEntry>

/// A list's sections in the diff engine's terms.
typealias DiffSections = [ArraySection<JSONEntry, JSONEntry>]

extension ListSnapshot {
    /// The snapshot's sections as diff input.
    var diffSections: DiffSections {
        sections.map { section in
            ArraySection(
                model: JSONEntry(id: section.id.rawValue, model: JSONText(section.model.canonicalText)),
                items: section.items.map { JSONEntry(id: $0.id.rawValue, model: JSONText($0.model.canonicalText)) })
        }
    }

    /// How many items the snapshot holds.
    var itemCount: Int { sections.reduce(0) { $0 + $1.items.count } }

    /// The `ETag` of this version: `"<epoch>-<version>"`.
    var etag: String { head.etag }
}

extension ListHead {
    /// The `ETag` of this version: `"<epoch>-<version>"`.
    var etag: String { "\"\(epoch)-\(version)\"" }
}

/// Writes listd's JSON bodies. Stored model text is already canonical JSON, so
/// it is spliced in as it is, never decoded and encoded again.
extension JSONWriter {
    /// `{"id":…,"model":…}`
    mutating func item(_ item: ItemSnapshot) {
        beginObject()
        key("id")
        string(item.id.rawValue)
        key("model")
        raw(item.model.canonicalText)
        endObject()
    }

    /// `{"id":…,"model":…,"items":[…]}`
    mutating func section(_ section: SectionSnapshot) {
        beginObject()
        key("id")
        string(section.id.rawValue)
        key("model")
        raw(section.model.canonicalText)
        key("items")
        beginArray()
        for item in section.items { self.item(item) }
        endArray()
        endObject()
    }

    /// The members every answer about a list starts with: `"list"`, `"epoch"`, `"version"`.
    mutating func listHeadMembers(_ head: ListHead) {
        key("list")
        string(head.id.rawValue)
        key("epoch")
        string(head.epoch)
        key("version")
        int64(head.version)
    }

    /// The whole snapshot: `{"id","name","epoch","version","sections"}`.
    mutating func snapshot(_ snapshot: ListSnapshot) {
        beginObject()
        key("id")
        string(snapshot.id.rawValue)
        key("name")
        string(snapshot.name)
        key("epoch")
        string(snapshot.epoch)
        key("version")
        int64(snapshot.version)
        key("sections")
        beginArray()
        for section in snapshot.sections { self.section(section) }
        endArray()
        endObject()
    }

    /// `[section, item]`
    mutating func path(_ path: ElementPath) {
        beginArray()
        int(path.section)
        int(path.element)
        endArray()
    }

    /// A diff entry as an item: `{"id","model"}`.
    mutating func entry(_ entry: JSONEntry) {
        beginObject()
        key("id")
        string(entry.id)
        key("model")
        raw(entry.model.text)
        endObject()
    }

    /// One stage in the wire form of API.md; empty fields are left out.
    mutating func stage(_ stage: Stage<JSONEntry, JSONEntry>) {
        beginObject()
        field("sectionDeleted", stage.sectionDeleted) { $0.int($1) }
        field("sectionInserted", stage.sectionInserted) { writer, insertion in
            writer.beginObject()
            writer.key("at")
            writer.int(insertion.at)
            writer.key("section")
            writer.beginObject()
            writer.key("id")
            writer.string(insertion.section.model.id)
            writer.key("model")
            writer.raw(insertion.section.model.model.text)
            writer.field("items", insertion.section.items, omitEmpty: false) { $0.entry($1) }
            writer.endObject()
            writer.endObject()
        }
        field("sectionUpdated", stage.sectionUpdated) { writer, update in
            writer.beginObject()
            writer.key("at")
            writer.int(update.at)
            writer.key("model")
            writer.raw(update.model.model.text)
            writer.endObject()
        }
        field("sectionMoved", stage.sectionMoved) { writer, move in
            writer.beginObject()
            writer.key("from")
            writer.int(move.from)
            writer.key("to")
            writer.int(move.to)
            writer.endObject()
        }
        field("itemDeleted", stage.itemDeleted) { $0.path($1) }
        field("itemInserted", stage.itemInserted) { writer, insertion in
            writer.beginObject()
            writer.key("at")
            writer.path(insertion.at)
            writer.key("item")
            writer.entry(insertion.item)
            writer.endObject()
        }
        field("itemUpdated", stage.itemUpdated) { writer, update in
            writer.beginObject()
            writer.key("at")
            writer.path(update.at)
            writer.key("model")
            writer.raw(update.item.model.text)
            writer.endObject()
        }
        field("itemMoved", stage.itemMoved) { writer, move in
            writer.beginObject()
            writer.key("from")
            writer.path(move.from)
            writer.key("to")
            writer.path(move.to)
            writer.endObject()
        }
        endObject()
    }

    /// `"name":[…]`, each element written by `write`; left out when empty unless `omitEmpty` is false.
    mutating func field<Element>(
        _ name: String, _ elements: [Element], omitEmpty: Bool = true, _ write: (inout JSONWriter, Element) -> Void
    ) {
        if omitEmpty && elements.isEmpty { return }
        key(name)
        beginArray()
        for element in elements { write(&self, element) }
        endArray()
    }

    /// `"stages":[…]`
    mutating func stages(_ changeset: ListChangeset) {
        key("stages")
        beginArray()
        for stage in changeset.stages { self.stage(stage) }
        endArray()
    }
}

/// A finished JSON body: compact with a trailing newline, or pretty when asked.
struct JSONBody {
    /// Ends `writer`'s text and returns the bytes to send.
    static func finish(_ writer: JSONWriter, pretty: Bool) -> [UInt8] {
        if pretty {
            var bytes = prettyPrinted(writer.bytes)
            bytes.append(UInt8(ascii: "\n"))
            return bytes
        }
        var bytes = writer.bytes
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// A JSON response with `Content-Type: application/json`.
    static func response(
        _ writer: JSONWriter, pretty: Bool, status: HTTPStatus = .ok, etag: String? = nil
    ) -> Response {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        if let etag { headers.add(name: "ETag", value: etag) }
        return Response(status: status, headers: headers, body: finish(writer, pretty: pretty))
    }
}
