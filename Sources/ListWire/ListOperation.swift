import JSON

/// One operation of `PATCH /lists/{list}` (API.md), applied in order with the
/// others of its batch in one transaction: written by clients with ``json``,
/// read by the server with ``init(json:index:)``.
///
/// Ids are strings and models JSON values here; the server checks ids against
/// its rules and models against its limits when it turns an operation into the
/// store's. An insert may leave its id out (`nil`): the server makes one.
public enum ListOperation: Sendable, Equatable {
    /// Inserts a section (with its items) at `at`, or appends it.
    case insertSection(id: String?, model: JSONValue, items: [(id: String?, model: JSONValue)] = [], at: Int? = nil)
    /// Replaces a section's model.
    case updateSection(id: String, model: JSONValue)
    /// Moves a section to index `to`.
    case moveSection(id: String, to: Int)
    /// Deletes a section and its items.
    case deleteSection(id: String)
    /// Inserts an item into `section` at `at`, or appends it.
    case insertItem(section: String, id: String?, model: JSONValue, at: Int? = nil)
    /// Replaces an item's model.
    case updateItem(id: String, model: JSONValue)
    /// Moves an item to index `to` of `section` (its own section when `nil`).
    case moveItem(id: String, section: String? = nil, to: Int)
    /// Deletes an item.
    case deleteItem(id: String)

    /// The eight operation names, as API.md spells them.
    public static let names = [
        "insertSection", "updateSection", "moveSection", "deleteSection",
        "insertItem", "updateItem", "moveItem", "deleteItem",
    ]

    /// The operation's name as API.md spells it.
    public var name: String {
        switch self {
        case .insertSection: "insertSection"
        case .updateSection: "updateSection"
        case .moveSection: "moveSection"
        case .deleteSection: "deleteSection"
        case .insertItem: "insertItem"
        case .updateItem: "updateItem"
        case .moveItem: "moveItem"
        case .deleteItem: "deleteItem"
        }
    }

    /// The operation's JSON form.
    public var json: JSONValue {
        var members: [(String, JSONValue)] = [("op", .string(name))]
        func entry(_ id: String?, _ model: JSONValue) -> [(String, JSONValue)] {
            (id.map { [("id", JSONValue.string($0))] } ?? []) + [("model", model)]
        }
        switch self {
        case .insertSection(let id, let model, let items, let at):
            let itemValues = items.map { JSONValue.object(JSONObject(entry($0.id, $0.model))) }
            members.append(("section", .object(JSONObject(entry(id, model) + [("items", .array(itemValues))]))))
            if let at { members.append(("at", .number(JSONNumber(Int64(at))))) }
        case .updateSection(let id, let model), .updateItem(let id, let model):
            members += [("id", .string(id)), ("model", model)]
        case .moveSection(let id, let to):
            members += [("id", .string(id)), ("to", .number(JSONNumber(Int64(to))))]
        case .deleteSection(let id), .deleteItem(let id):
            members.append(("id", .string(id)))
        case .insertItem(let section, let id, let model, let at):
            members += [("section", .string(section)), ("item", .object(JSONObject(entry(id, model))))]
            if let at { members.append(("at", .number(JSONNumber(Int64(at))))) }
        case .moveItem(let id, let section, let to):
            members += [("id", .string(id)), ("to", .number(JSONNumber(Int64(to))))]
            if let section { members.append(("section", .string(section))) }
        }
        return .object(JSONObject(members))
    }

    /// Reads operation number `index` of a batch; the error's detail names it
    /// (`op 2 (moveItem): "to" must be a whole number ≥ 0, not -1`).
    ///
    /// A model left out of an insert is `{}`; `"at": null` is no position.
    public init(json value: JSONValue, index: Int) throws(WireError) {
        let name = value["op"]?.stringValue
        let context = Self.context(name: name, index: index)
        let fields = try WireFields(value, context: context)
        guard let name else {
            if fields.has("op") { throw WireError("\(context): \"op\" must be a string") }
            throw WireError("\(context) needs \"op\": one of \(Self.names.joined(separator: ", "))")
        }
        switch name {
        case "insertSection":
            try fields.allowOnly(["op", "section", "at"])
            guard let sectionValue = fields.value("section") else {
                throw WireError("\(context) needs \"section\": {\"id\", \"model\", \"items\"}")
            }
            let section = try WireFields(sectionValue, context: "\(context).section")
            try section.allowOnly(["id", "model", "items"])
            var items: [(id: String?, model: JSONValue)] = []
            for (number, element) in (try section.array("items") ?? []).enumerated() {
                let item = try WireFields(element, context: "\(context).section.items[\(number)]")
                try item.allowOnly(["id", "model"])
                items.append((try item.string("id"), item.value("model") ?? .object([:])))
            }
            self = .insertSection(
                id: try section.string("id"), model: section.value("model") ?? .object([:]), items: items,
                at: try fields.position("at"))
        case "updateSection", "updateItem":
            try fields.allowOnly(["op", "id", "model"])
            let id = try fields.requiredString("id", "an id")
            let model = try fields.requiredValue("model", "any JSON value")
            self = name == "updateSection" ? .updateSection(id: id, model: model) : .updateItem(id: id, model: model)
        case "moveSection":
            try fields.allowOnly(["op", "id", "to"])
            self = .moveSection(id: try fields.requiredString("id", "an id"), to: try fields.requiredPosition("to"))
        case "deleteSection", "deleteItem":
            try fields.allowOnly(["op", "id"])
            let id = try fields.requiredString("id", "an id")
            self = name == "deleteSection" ? .deleteSection(id: id) : .deleteItem(id: id)
        case "insertItem":
            try fields.allowOnly(["op", "section", "item", "at"])
            guard let itemValue = fields.value("item") else {
                throw WireError("\(context) needs \"item\": {\"id\", \"model\"}")
            }
            let section = try fields.requiredString("section", "an id")
            let item = try WireFields(itemValue, context: "\(context).item")
            try item.allowOnly(["id", "model"])
            self = .insertItem(
                section: section, id: try item.string("id"), model: item.value("model") ?? .object([:]),
                at: try fields.position("at"))
        case "moveItem":
            try fields.allowOnly(["op", "id", "section", "to"])
            self = .moveItem(
                id: try fields.requiredString("id", "an id"), section: try fields.string("section"),
                to: try fields.requiredPosition("to"))
        default:
            throw WireError(
                "\(context): unknown op \"\(name.prefix(40))\"; expected one of \(Self.names.joined(separator: ", "))")
        }
    }

    /// `op 3 (insertItem)`, or `op 3` when the op has no name: where an operation is, for messages.
    public static func context(name: String?, index: Int) -> String {
        name.map { "op \(index) (\($0))" } ?? "op \(index)"
    }

    /// Reads the body of `PATCH /lists/{list}`: `{"ops": [...]}`.
    public static func batch(_ body: JSONValue) throws(WireError) -> [ListOperation] {
        let fields = try WireFields(body, context: "the body")
        try fields.allowOnly(["ops"])
        guard let array = try fields.array("ops") else {
            throw WireError("the body needs \"ops\": an array of operations")
        }
        var operations: [ListOperation] = []
        operations.reserveCapacity(array.count)
        for (index, element) in array.enumerated() { operations.append(try ListOperation(json: element, index: index)) }
        return operations
    }

    /// Operations are equal when their JSON forms are.
    public static func == (lhs: ListOperation, rhs: ListOperation) -> Bool { lhs.json == rhs.json }
}
