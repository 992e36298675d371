import JSON
import SectionDiff

/// A list's sections in SectionDiff's terms: ids with canonical model text,
/// the same values the server diffs, so stages apply to them exactly.
public typealias ListSections = [ArraySection<JSONEntry, JSONEntry>]

/// One stage of a change answer in SectionDiff's terms (one `performBatchUpdates`).
public typealias ListStage = Stage<JSONEntry, JSONEntry>

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

    /// Decodes a snapshot body (`{"id","name","epoch","version","sections"}`).
    public init(json: JSONValue) throws(ListClientError) {
        guard let id = json["id"]?.stringValue, let epoch = json["epoch"]?.stringValue,
            let version = json["version"]?.int64Value, let sections = json["sections"]?.arrayValue
        else {
            throw .invalid("a snapshot needs id, epoch, version and sections: \(json.canonicalText.prefix(200))")
        }
        self.init(
            id: id, name: json["name"]?.stringValue ?? "", epoch: epoch, version: version,
            sections: try sections.map(WireStage.section))
    }

    /// The snapshot in the wire form of `GET /lists/{list}`, which `PUT /lists/{list}`
    /// also accepts (it ignores epoch and version).
    public var json: JSONValue {
        .object([
            "id": .string(id), "name": .string(name), "epoch": .string(epoch),
            "version": .number(JSONNumber(version)), "sections": .array(sections.map(WireStage.json)),
        ])
    }
}

/// Decoding of the wire forms in API.md into SectionDiff values.
enum WireStage {
    static func entry(_ value: JSONValue) throws(ListClientError) -> JSONEntry {
        guard let id = value["id"]?.stringValue, let model = value["model"] else {
            throw .invalid("an item needs id and model: \(value.canonicalText.prefix(200))")
        }
        return JSONEntry(id: id, model: JSONText(model.canonicalText))
    }

    static func section(_ value: JSONValue) throws(ListClientError) -> ArraySection<JSONEntry, JSONEntry> {
        guard let id = value["id"]?.stringValue, let model = value["model"] else {
            throw .invalid("a section needs id and model: \(value.canonicalText.prefix(200))")
        }
        var items: [JSONEntry] = []
        for item in value["items"]?.arrayValue ?? [] { items.append(try entry(item)) }
        return ArraySection(model: JSONEntry(id: id, model: JSONText(model.canonicalText)), items: items)
    }

    static func model(_ text: JSONText) -> JSONValue {
        (try? JSONValue(parsing: text.text)) ?? .null
    }

    static func json(_ section: ArraySection<JSONEntry, JSONEntry>) -> JSONValue {
        .object([
            "id": .string(section.model.id), "model": model(section.model.model),
            "items": .array(section.items.map { .object(["id": .string($0.id), "model": model($0.model)]) }),
        ])
    }

    static func int(_ value: JSONValue, _ field: String) throws(ListClientError) -> Int {
        guard let int = value.intValue else { throw .invalid("\(field): \(value.canonicalText.prefix(40)) is not an index") }
        return int
    }

    static func path(_ value: JSONValue?, _ field: String) throws(ListClientError) -> ElementPath {
        guard let pair = value?.arrayValue, pair.count == 2, let section = pair[0].intValue, let item = pair[1].intValue
        else { throw .invalid("\(field): \(value?.canonicalText.prefix(40) ?? "nothing") is not a [section, item] pair") }
        return ElementPath(element: item, section: section)
    }

    static let fields: Set<String> = [
        "sectionDeleted", "sectionInserted", "sectionUpdated", "sectionMoved",
        "itemDeleted", "itemInserted", "itemUpdated", "itemMoved",
    ]

    /// A wire stage as SectionDiff's value. Updates name only a position and a
    /// model, so their ids come from `before`, the state the stage applies to.
    static func stage(_ value: JSONValue, before: ListSections) throws(ListClientError) -> ListStage {
        guard let object = value.objectValue else { throw .invalid("a stage must be an object") }
        if let unknown = object.first(where: { !fields.contains($0.key) }) {
            throw .invalid("a stage has an unknown field \"\(unknown.key.prefix(40))\"")
        }
        func list(_ key: String) -> [JSONValue] { value[key]?.arrayValue ?? [] }
        var stage = ListStage()
        for index in list("sectionDeleted") { stage.sectionDeleted.append(try int(index, "sectionDeleted")) }
        for insertion in list("sectionInserted") {
            guard let at = insertion["at"]?.intValue, let section = insertion["section"] else {
                throw .invalid("sectionInserted needs at and section")
            }
            stage.sectionInserted.append(.init(at: at, section: try self.section(section)))
        }
        for update in list("sectionUpdated") {
            guard let at = update["at"]?.intValue, let model = update["model"] else {
                throw .invalid("sectionUpdated needs at and model")
            }
            guard before.indices.contains(at) else {
                throw .invalid("sectionUpdated names section \(at), but the state has \(before.count)")
            }
            stage.sectionUpdated.append(
                .init(at: at, model: JSONEntry(id: before[at].model.id, model: JSONText(model.canonicalText))))
        }
        for move in list("sectionMoved") {
            guard let from = move["from"]?.intValue, let to = move["to"]?.intValue else {
                throw .invalid("sectionMoved needs from and to")
            }
            stage.sectionMoved.append(SectionMove(from: from, to: to))
        }
        for path in list("itemDeleted") { stage.itemDeleted.append(try self.path(path, "itemDeleted")) }
        for insertion in list("itemInserted") {
            guard let item = insertion["item"] else { throw .invalid("itemInserted needs item") }
            stage.itemInserted.append(
                .init(at: try path(insertion["at"], "itemInserted"), item: try entry(item)))
        }
        for update in list("itemUpdated") {
            let at = try path(update["at"], "itemUpdated")
            guard let model = update["model"] else { throw .invalid("itemUpdated needs model") }
            guard before.indices.contains(at.section), before[at.section].items.indices.contains(at.element) else {
                throw .invalid("itemUpdated names \(at), which the state does not hold")
            }
            let id = before[at.section].items[at.element].id
            stage.itemUpdated.append(.init(at: at, item: JSONEntry(id: id, model: JSONText(model.canonicalText))))
        }
        for move in list("itemMoved") {
            stage.itemMoved.append(
                ItemMove(from: try path(move["from"], "itemMoved"), to: try path(move["to"], "itemMoved")))
        }
        return stage
    }
}
