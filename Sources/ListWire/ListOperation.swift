import JSON

/// One operation of `PATCH /lists/{list}` (API.md), applied in order with the
/// others of its batch in one transaction.
public enum ListOperation: Sendable, Equatable {
    /// Inserts a section (with its items) at `at`, or appends it.
    case insertSection(id: String, model: JSONValue, items: [(id: String, model: JSONValue)] = [], at: Int? = nil)
    /// Replaces a section's model.
    case updateSection(id: String, model: JSONValue)
    /// Moves a section to index `to`.
    case moveSection(id: String, to: Int)
    /// Deletes a section and its items.
    case deleteSection(id: String)
    /// Inserts an item into `section` at `at`, or appends it.
    case insertItem(section: String, id: String, model: JSONValue, at: Int? = nil)
    /// Replaces an item's model.
    case updateItem(id: String, model: JSONValue)
    /// Moves an item to index `to` of `section` (its own section when `nil`).
    case moveItem(id: String, section: String? = nil, to: Int)
    /// Deletes an item.
    case deleteItem(id: String)

    /// The operation's JSON form.
    public var json: JSONValue {
        var members: [(String, JSONValue)]
        switch self {
        case .insertSection(let id, let model, let items, let at):
            let itemValues = items.map { JSONValue.object(["id": .string($0.id), "model": $0.model]) }
            members = [
                ("op", "insertSection"),
                ("section", .object(["id": .string(id), "model": model, "items": .array(itemValues)])),
            ]
            if let at { members.append(("at", .number(JSONNumber(Int64(at))))) }
        case .updateSection(let id, let model):
            members = [("op", "updateSection"), ("id", .string(id)), ("model", model)]
        case .moveSection(let id, let to):
            members = [("op", "moveSection"), ("id", .string(id)), ("to", .number(JSONNumber(Int64(to))))]
        case .deleteSection(let id):
            members = [("op", "deleteSection"), ("id", .string(id))]
        case .insertItem(let section, let id, let model, let at):
            members = [
                ("op", "insertItem"), ("section", .string(section)),
                ("item", .object(["id": .string(id), "model": model])),
            ]
            if let at { members.append(("at", .number(JSONNumber(Int64(at))))) }
        case .updateItem(let id, let model):
            members = [("op", "updateItem"), ("id", .string(id)), ("model", model)]
        case .moveItem(let id, let section, let to):
            members = [("op", "moveItem"), ("id", .string(id)), ("to", .number(JSONNumber(Int64(to))))]
            if let section { members.append(("section", .string(section))) }
        case .deleteItem(let id):
            members = [("op", "deleteItem"), ("id", .string(id))]
        }
        return .object(JSONObject(members))
    }

    /// Operations are equal when their JSON forms are.
    public static func == (lhs: ListOperation, rhs: ListOperation) -> Bool { lhs.json == rhs.json }
}
