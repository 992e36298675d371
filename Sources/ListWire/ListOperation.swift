import JSON
import ListModel

/// The JSON form of ``ListModel/ListOperation``, one operation of
/// `PATCH /lists/{list}` (API.md): written by clients with ``ListModel/ListOperation/json``,
/// read by the server with ``ListModel/ListOperation/init(json:index:limits:)``.
///
/// Reading checks everything the wire can: the shape, each id (a
/// ``WireError/Kind/invalidID`` error naming the field) and each model's
/// nesting (``WireError/Kind/invalidModel``). Size limits and whether the
/// named sections and items exist are the store's to check.
extension ListOperation {
    /// The eight operation names, as API.md spells them.
    public static let names = [
        "insertSection", "updateSection", "moveSection", "deleteSection",
        "insertItem", "updateItem", "moveItem", "deleteItem",
    ]

    /// The operation's JSON form.
    public var json: JSONValue {
        var members: [(String, JSONValue)] = [("op", .string(name))]
        func entry(_ id: Identifier?, _ model: Model) -> [(String, JSONValue)] {
            (id.map { [("id", JSONValue.string($0.rawValue))] } ?? []) + [("model", model.wireValue)]
        }
        switch self {
        case .insertSection(let section, let at):
            let itemValues = section.items.map { JSONValue.object(JSONObject(entry($0.id, $0.model))) }
            members.append(
                ("section", .object(JSONObject(entry(section.id, section.model) + [("items", .array(itemValues))]))))
            if let at { members.append(("at", .number(JSONNumber(Int64(at))))) }
        case .updateSection(let id, let model), .updateItem(let id, let model):
            members += [("id", .string(id.rawValue)), ("model", model.wireValue)]
        case .moveSection(let id, let to):
            members += [("id", .string(id.rawValue)), ("to", .number(JSONNumber(Int64(to))))]
        case .deleteSection(let id), .deleteItem(let id):
            members.append(("id", .string(id.rawValue)))
        case .insertItem(let section, let item, let at):
            members += [
                ("section", .string(section.rawValue)), ("item", .object(JSONObject(entry(item.id, item.model)))),
            ]
            if let at { members.append(("at", .number(JSONNumber(Int64(at))))) }
        case .moveItem(let id, let section, let to):
            members += [("id", .string(id.rawValue)), ("to", .number(JSONNumber(Int64(to))))]
            if let section { members.append(("section", .string(section.rawValue))) }
        }
        return .object(JSONObject(members))
    }

    /// Reads operation number `index` of a batch; the error's detail names it
    /// (`op 2 (moveItem): "to" must be a whole number ≥ 0, not -1`).
    ///
    /// A model left out of an insert is `{}`; `"at": null` is no position.
    public init(json value: JSONValue, index: Int, limits: ModelLimits = ModelLimits()) throws(WireError) {
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
            var items: [NewItem] = []
            for (number, element) in (try section.array("items") ?? []).enumerated() {
                let item = try WireFields(element, context: "\(context).section.items[\(number)]")
                try item.allowOnly(["id", "model"])
                items.append(
                    NewItem(id: try item.identifier("id"), model: try item.model("model", limits) ?? .emptyObject))
            }
            self = .insertSection(
                NewSection(
                    id: try section.identifier("id"), model: try section.model("model", limits) ?? .emptyObject,
                    items: items),
                at: try fields.position("at"))
        case "updateSection", "updateItem":
            try fields.allowOnly(["op", "id", "model"])
            let id = try fields.requiredIdentifier("id")
            guard let model = try fields.model("model", limits) else {
                throw WireError("\(context) needs \"model\" (any JSON value)")
            }
            self = name == "updateSection" ? .updateSection(id: id, model: model) : .updateItem(id: id, model: model)
        case "moveSection":
            try fields.allowOnly(["op", "id", "to"])
            self = .moveSection(id: try fields.requiredIdentifier("id"), to: try fields.requiredPosition("to"))
        case "deleteSection", "deleteItem":
            try fields.allowOnly(["op", "id"])
            let id = try fields.requiredIdentifier("id")
            self = name == "deleteSection" ? .deleteSection(id: id) : .deleteItem(id: id)
        case "insertItem":
            try fields.allowOnly(["op", "section", "item", "at"])
            guard let itemValue = fields.value("item") else {
                throw WireError("\(context) needs \"item\": {\"id\", \"model\"}")
            }
            let section = try fields.requiredIdentifier("section")
            let item = try WireFields(itemValue, context: "\(context).item")
            try item.allowOnly(["id", "model"])
            self = .insertItem(
                section: section,
                item: NewItem(id: try item.identifier("id"), model: try item.model("model", limits) ?? .emptyObject),
                at: try fields.position("at"))
        case "moveItem":
            try fields.allowOnly(["op", "id", "section", "to"])
            self = .moveItem(
                id: try fields.requiredIdentifier("id"), section: try fields.identifier("section"),
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
    public static func batch(_ body: JSONValue, limits: ModelLimits = ModelLimits()) throws(WireError)
        -> [ListOperation]
    {
        let fields = try WireFields(body, context: "the body")
        try fields.allowOnly(["ops"])
        guard let array = try fields.array("ops") else {
            throw WireError("the body needs \"ops\": an array of operations")
        }
        var operations: [ListOperation] = []
        operations.reserveCapacity(array.count)
        for (index, element) in array.enumerated() {
            operations.append(try ListOperation(json: element, index: index, limits: limits))
        }
        return operations
    }
}

extension Model {
    /// The model as a JSON value to send.
    ///
    /// Its text is canonical JSON, made by the canonicalizer or read back from
    /// a store that keeps nothing else, so it parses; were it ever not to, it
    /// goes as that text in a JSON string, which the answer's snapshot shows.
    var wireValue: JSONValue { (try? jsonValue()) ?? .string(canonicalText) }
}
