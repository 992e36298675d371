import HTTP
import JSON
import ListModel
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

    /// The body of `PATCH /lists/{list}`: `{"ops": [...]}`, read by ListWire
    /// (ids and model nesting checked there); sizes and existence are the store's.
    func operations(_ body: JSONValue) throws(Problem) -> [ListOperation] {
        try readWire { () throws(WireError) in try ListOperation.batch(body, limits: models) }
    }

    /// One op of a batch; see API.md for the eight shapes.
    func operation(_ value: JSONValue, index: Int) throws(Problem) -> ListOperation {
        try readWire { () throws(WireError) in try ListOperation(json: value, index: index, limits: models) }
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
