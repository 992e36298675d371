import HTTP
import JSON
import ListStore
import ListWire

/// Turns request bodies into the store's values.
struct RequestDecoder: Sendable {
    /// The largest body accepted, in bytes (the HTTP layer enforces it too).
    var maxBodyBytes: Int = 32 * 1024 * 1024
    /// Limits applied to every model in a body.
    var models = ModelLimits()

    /// The body parsed as JSON. An empty body is an error unless `emptyAs` is given.
    func json(_ request: Request, emptyAs empty: JSONValue? = nil) throws(Problem) -> JSONValue {
        if let contentType = request.header("Content-Type"), !Self.isJSON(contentType) {
            throw .unsupportedMediaType(String(contentType.prefix(100)))
        }
        if request.body.isEmpty {
            if let empty { return empty }
            throw .invalidJSON("the body is empty; expected a JSON object")
        }
        // The body wraps models a few levels deep ({"ops":[{"item":{"model":…}}]}),
        // so the document may nest a little deeper than a model may; each model's
        // own depth is checked when it is read.
        let limits = JSONLimits(maxDepth: models.maxDepth + 8, maxBytes: maxBodyBytes)
        do {
            return try JSONValue(parsing: request.body, limits: limits)
        } catch {
            throw .invalidJSON("the body is not valid JSON: \(error)")
        }
    }

    /// Whether a body of this media type is read as JSON: `application/json`
    /// and any `+json` type, and also `application/x-www-form-urlencoded` and
    /// `text/plain`, because that is what `curl -d` and simple clients send
    /// when nobody sets a type. Anything else (XML, multipart, …) is a 415.
    static func isJSON(_ contentType: String) -> Bool {
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first.map {
            $0.trimmingWhitespace().lowercased()
        }
        guard let mediaType else { return true }
        switch mediaType {
        case "", "application/json", "application/x-www-form-urlencoded", "text/plain", "text/json": return true
        default: return mediaType.hasPrefix("application/") && mediaType.hasSuffix("+json")
        }
    }

    /// A section as a client sends it: `{"id"?, "model"?, "items"?}`.
    func section(_ value: JSONValue, context: String, allowing extra: Set<String> = []) throws(Problem) -> NewSection {
        let fields = try FieldReader(value, context: context, limits: models)
        try fields.allowOnly(Set(["id", "model", "items"]).union(extra))
        var items: [NewItem] = []
        if let array = try fields.array("items") {
            items.reserveCapacity(array.count)
            for (index, element) in array.enumerated() {
                items.append(try item(element, context: "\(context).items[\(index)]"))
            }
        }
        return NewSection(
            id: try fields.identifier("id"), model: try fields.model("model") ?? .emptyObject, items: items)
    }

    /// An item as a client sends it: `{"id"?, "model"?}`.
    func item(_ value: JSONValue, context: String, allowing extra: Set<String> = []) throws(Problem) -> NewItem {
        let fields = try FieldReader(value, context: context, limits: models)
        try fields.allowOnly(Set(["id", "model"]).union(extra))
        return NewItem(id: try fields.identifier("id"), model: try fields.model("model") ?? .emptyObject)
    }

    /// A list of sections from the field `key` of `fields` (absent: none).
    func sections(_ fields: FieldReader, key: String = "sections") throws(Problem) -> [NewSection] {
        guard let array = try fields.array(key) else { return [] }
        var sections: [NewSection] = []
        sections.reserveCapacity(array.count)
        for (index, element) in array.enumerated() {
            sections.append(try section(element, context: "\(key)[\(index)]"))
        }
        return sections
    }

    /// The body of `PATCH /lists/{list}`: `{"ops": [...]}`, read in ListWire's
    /// form (the one clients write), then checked against the store's rules.
    func operations(_ body: JSONValue) throws(Problem) -> [ListStore.ListOperation] {
        let operations = try readWire { () throws(WireError) in try ListWire.ListOperation.batch(body) }
        var result: [ListStore.ListOperation] = []
        result.reserveCapacity(operations.count)
        for (index, operation) in operations.enumerated() { result.append(try self.operation(operation, index: index)) }
        return result
    }

    /// One op of a batch; see API.md for the eight shapes.
    func operation(_ value: JSONValue, index: Int) throws(Problem) -> ListStore.ListOperation {
        try operation(
            try readWire { () throws(WireError) in try ListWire.ListOperation(json: value, index: index) }, index: index
        )
    }

    /// A wire operation as the store's: ids checked (`invalid-id`), models within the limits (`invalid-model`).
    func operation(_ operation: ListWire.ListOperation, index: Int) throws(Problem) -> ListStore.ListOperation {
        let context = ListWire.ListOperation.context(name: operation.name, index: index)
        func id(_ text: String, _ key: String = "id") throws(Problem) -> Identifier {
            // A string always gives an id or a 400; the fallback is never reached.
            guard let identifier = try FieldReader.identifier(text, context: context, key: key) else {
                throw .invalidRequest("\(context) needs \"\(key)\" (an id)")
            }
            return identifier
        }
        func model(_ value: JSONValue, in place: String) throws(Problem) -> Model {
            try FieldReader.model(value, context: place, key: "model", limits: models)
        }
        switch operation {
        case .insertSection(let sectionID, let sectionModel, let items, let at):
            let sectionContext = "\(context).section"
            var newItems: [NewItem] = []
            newItems.reserveCapacity(items.count)
            for (number, item) in items.enumerated() {
                let itemContext = "\(sectionContext).items[\(number)]"
                newItems.append(
                    NewItem(
                        id: try FieldReader.identifier(item.id, context: itemContext, key: "id"),
                        model: try model(item.model, in: itemContext)))
            }
            let section = NewSection(
                id: try FieldReader.identifier(sectionID, context: sectionContext, key: "id"),
                model: try model(sectionModel, in: sectionContext), items: newItems)
            return .insertSection(section, at: at)
        case .updateSection(let sectionID, let sectionModel):
            return .updateSection(id: try id(sectionID), model: try model(sectionModel, in: context))
        case .moveSection(let sectionID, let to):
            return .moveSection(id: try id(sectionID), to: to)
        case .deleteSection(let sectionID):
            return .deleteSection(id: try id(sectionID))
        case .insertItem(let section, let itemID, let itemModel, let at):
            let itemContext = "\(context).item"
            return .insertItem(
                section: try id(section, "section"),
                item: NewItem(
                    id: try FieldReader.identifier(itemID, context: itemContext, key: "id"),
                    model: try model(itemModel, in: itemContext)),
                at: at)
        case .updateItem(let itemID, let itemModel):
            return .updateItem(id: try id(itemID), model: try model(itemModel, in: context))
        case .moveItem(let itemID, let section, let to):
            return .moveItem(
                id: try id(itemID), section: try FieldReader.identifier(section, context: context, key: "section"),
                to: to)
        case .deleteItem(let itemID):
            return .deleteItem(id: try id(itemID))
        }
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    func trimmingWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
