import JSON
import SectionDiff

/// A list at one version: what `GET /lists/{list}` returns, decoded.
public struct ListState: Sendable, Equatable, CustomStringConvertible {
    /// The list's id.
    public var id: String
    /// The list's name.
    public var name: String
    /// The list's epoch, fixed when it was created.
    public var epoch: String
    /// The version this state is at.
    public var version: Int64
    /// The sections with their items.
    public var sections: ListSections

    /// Creates a state.
    public init(id: String, name: String, epoch: String, version: Int64, sections: ListSections) {
        self.id = id
        self.name = name
        self.epoch = epoch
        self.version = version
        self.sections = sections
    }

    /// The ETag of this version, `"<epoch>-<version>"`, for `If-None-Match`.
    public var etag: String { "\"\(epoch)-\(version)\"" }

    /// How many items all sections hold.
    public var itemCount: Int { sections.reduce(0) { $0 + $1.items.count } }

    /// `id@version: n sections, m items`.
    public var description: String { "\(id)@\(version): \(sections.count) sections, \(itemCount) items" }

    /// Decodes a snapshot body (`{"id","name","epoch","version","sections"}`),
    /// the inverse of ``JSON/JSONWriter/snapshot(_:)``.
    public init(json: JSONValue) throws(WireError) {
        guard let id = json["id"]?.stringValue, let epoch = json["epoch"]?.stringValue,
            let version = json["version"]?.int64Value, let sections = json["sections"]?.arrayValue
        else {
            throw WireError("a snapshot needs id, epoch, version and sections: \(json.canonicalText.prefix(200))")
        }
        self.init(
            id: id, name: json["name"]?.stringValue ?? "", epoch: epoch, version: version,
            sections: try WireDecoding.sections(sections))
    }

    /// The snapshot in the wire form of `GET /lists/{list}` (which `PUT /lists/{list}`
    /// also accepts, ignoring epoch and version), as bytes.
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter(capacity: 128 + itemCount * 48)
        writer.snapshot(self)
        return writer.bytes
    }

    /// The same wire form as a JSON value, for tools that embed it in another document.
    public var json: JSONValue {
        // The writer's output is valid JSON by construction; `.null` is unreachable.
        (try? JSONValue(parsing: jsonBytes, limits: JSONLimits(maxDepth: 1024, maxBytes: Int.max))) ?? .null
    }
}
