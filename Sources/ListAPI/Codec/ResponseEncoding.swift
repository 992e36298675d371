import HTTP
import JSON
import ListModel
import ListStore
import ListWire
import SectionDiff

extension ListSnapshot {
    /// The snapshot's sections as diff input.
    var diffSections: ListSections {
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
    var etag: String {
        // Appended rather than interpolated: every write's answer and every GET makes one.
        var tag = "\""
        tag.reserveCapacity(epoch.utf8.count + 23)
        tag += epoch
        tag += "-"
        tag += String(version)
        tag += "\""
        return tag
    }
}

// The store's snapshots are written in ListWire's forms as they are: stored
// model text is already canonical JSON, so it is spliced in, never decoded
// and encoded again. (The conformances are made here, in the layer that
// joins the store to the wire, so that neither of those two knows the other.)

extension ItemSnapshot: WireEntry {
    /// The id's text.
    @inlinable public var wireID: String { id.rawValue }
    /// The stored canonical model text.
    @inlinable public var wireModelText: String { model.canonicalText }
}

extension SectionSnapshot: WireEntry, WireSection {
    /// The id's text.
    @inlinable public var wireID: String { id.rawValue }
    /// The stored canonical model text.
    @inlinable public var wireModelText: String { model.canonicalText }
    /// The items in order.
    @inlinable public var wireItems: [ItemSnapshot] { items }
}

extension JSONWriter {
    /// The whole snapshot: `{"id","name","epoch","version","sections"}`.
    mutating func snapshot(_ snapshot: ListSnapshot) {
        self.snapshot(
            id: snapshot.id.rawValue, name: snapshot.name, epoch: snapshot.epoch, version: snapshot.version,
            sections: snapshot.sections)
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
