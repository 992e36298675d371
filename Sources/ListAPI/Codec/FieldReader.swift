import JSON
import ListModel
import ListStore
import ListWire

/// Reads the fields of one JSON object from a request body: ListWire's
/// ``WireFields`` (the shape rules clients and server share) plus the
/// server's own checks of ids and models, turning every mistake into a 400
/// whose detail names the place (`op 2 (moveItem)`), the field and what was expected.
struct FieldReader {
    private let fields: WireFields
    private let limits: ModelLimits

    /// Where this object is, for messages: `the body`, `op 3 (insertItem)`, `sections[1].items[0]`.
    var context: String { fields.context }

    /// Reads `value` as an object, or fails saying what it was instead.
    init(_ value: JSONValue, context: String, limits: ModelLimits) throws(Problem) {
        fields = try readWire { () throws(WireError) in try WireFields(value, context: context) }
        self.limits = limits
    }

    /// Fails if the object has a field outside `allowed`.
    func allowOnly(_ allowed: Set<String>) throws(Problem) {
        try readWire { () throws(WireError) in try fields.allowOnly(allowed) }
    }

    /// Whether the field is present (even as null).
    func has(_ key: String) -> Bool { fields.has(key) }

    /// The raw value of a field.
    func value(_ key: String) -> JSONValue? { fields.value(key) }

    /// A string field, or nil when absent.
    func string(_ key: String) throws(Problem) -> String? {
        try readWire { () throws(WireError) in try fields.string(key) }
    }

    /// An id field, or nil when absent; a malformed id is a 400 naming it.
    func identifier(_ key: String) throws(Problem) -> Identifier? {
        try Self.identifier(try string(key), context: context, key: key)
    }

    /// An id field that must be present.
    func requiredIdentifier(_ key: String) throws(Problem) -> Identifier {
        guard let identifier = try identifier(key) else {
            throw .invalidRequest("\(context) needs \"\(key)\" (an id)")
        }
        return identifier
    }

    /// A position field (a whole number ≥ 0), or nil when absent or null.
    func position(_ key: String) throws(Problem) -> Int? {
        try readWire { () throws(WireError) in try fields.position(key) }
    }

    /// A position field that must be present.
    func requiredPosition(_ key: String) throws(Problem) -> Int {
        try readWire { () throws(WireError) in try fields.requiredPosition(key) }
    }

    /// A model field: any JSON value within the nesting limit, or nil when absent.
    func model(_ key: String) throws(Problem) -> Model? {
        guard let value = fields.value(key) else { return nil }
        return try Self.model(value, context: context, key: key, limits: limits)
    }

    /// A model field that must be present.
    func requiredModel(_ key: String) throws(Problem) -> Model {
        guard let model = try model(key) else {
            throw .invalidRequest("\(context) needs \"\(key)\" (any JSON value)")
        }
        return model
    }

    /// An array field, or nil when absent.
    func array(_ key: String) throws(Problem) -> [JSONValue]? {
        try readWire { () throws(WireError) in try fields.array(key) }
    }

    /// An object field read with its own reader, or nil when absent.
    func nested(_ key: String, context nestedContext: String? = nil) throws(Problem) -> FieldReader? {
        guard let value = fields.value(key) else { return nil }
        return try FieldReader(value, context: nestedContext ?? "\(context).\(key)", limits: limits)
    }

    /// `text` as an id (nil stays nil); a malformed one is a 400 `invalid-id` naming `key` in `context`.
    static func identifier(_ text: String?, context: String, key: String) throws(Problem) -> Identifier? {
        guard let text else { return nil }
        return try readWire { () throws(WireError) in try WireFields.identifier(text, context: context, key: key) }
    }

    /// `value` as a model, or a 400 `invalid-model` when it nests deeper than `limits` allow.
    static func model(_ value: JSONValue, context: String, key: String, limits: ModelLimits) throws(Problem) -> Model {
        try readWire { () throws(WireError) in
            try WireFields.model(value, context: context, key: key, limits: limits)
        }
    }
}

/// Runs a ListWire reader; a body of the wrong shape is a 400 `invalid-request` with its detail.
func readWire<Value>(_ read: () throws(WireError) -> Value) throws(Problem) -> Value {
    do {
        return try read()
    } catch {
        switch error.kind {
        case .shape: throw .invalidRequest(error.detail)
        case .invalidID:
            throw Problem(slug: "invalid-id", title: "The id is not valid", status: 400, detail: error.detail)
        case .invalidModel:
            throw Problem(
                slug: "invalid-model", title: "The model is not valid JSON", status: 400, detail: error.detail)
        }
    }
}
