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
        if !stage.sectionDeleted.isEmpty {
            key("sectionDeleted")
            beginArray()
            for index in stage.sectionDeleted { int(index) }
            endArray()
        }
        if !stage.sectionInserted.isEmpty {
            key("sectionInserted")
            beginArray()
            for insertion in stage.sectionInserted {
                beginObject()
                key("at")
                int(insertion.at)
                key("section")
                beginObject()
                key("id")
                string(insertion.section.model.id)
                key("model")
                raw(insertion.section.model.model.text)
                key("items")
                beginArray()
                for item in insertion.section.items { entry(item) }
                endArray()
                endObject()
                endObject()
            }
            endArray()
        }
        if !stage.sectionUpdated.isEmpty {
            key("sectionUpdated")
            beginArray()
            for update in stage.sectionUpdated {
                beginObject()
                key("at")
                int(update.at)
                key("model")
                raw(update.model.model.text)
                endObject()
            }
            endArray()
        }
        if !stage.sectionMoved.isEmpty {
            key("sectionMoved")
            beginArray()
            for move in stage.sectionMoved {
                beginObject()
                key("from")
                int(move.from)
                key("to")
                int(move.to)
                endObject()
            }
            endArray()
        }
        if !stage.itemDeleted.isEmpty {
            key("itemDeleted")
            beginArray()
            for path in stage.itemDeleted { self.path(path) }
            endArray()
        }
        if !stage.itemInserted.isEmpty {
            key("itemInserted")
            beginArray()
            for insertion in stage.itemInserted {
                beginObject()
                key("at")
                path(insertion.at)
                key("item")
                entry(insertion.item)
                endObject()
            }
            endArray()
        }
        if !stage.itemUpdated.isEmpty {
            key("itemUpdated")
            beginArray()
            for update in stage.itemUpdated {
                beginObject()
                key("at")
                path(update.at)
                key("model")
                raw(update.item.model.text)
                endObject()
            }
            endArray()
        }
        if !stage.itemMoved.isEmpty {
            key("itemMoved")
            beginArray()
            for move in stage.itemMoved {
                beginObject()
                key("from")
                path(move.from)
                key("to")
                path(move.to)
                endObject()
            }
            endArray()
        }
        endObject()
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
