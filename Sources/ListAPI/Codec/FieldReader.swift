import JSON
import ListStore

/// Reads the fields of one JSON object from a request body, turning every
/// mistake into a 400 whose detail names the place (`op 2 (moveItem)`), the
/// field and what was expected.
///
/// Unknown fields are errors, not silently ignored: a client that misspells
/// `"at"` as `"index"` learns so at once instead of finding its item appended.
struct FieldReader {
    /// Where this object is, for messages: `the body`, `op 3 (insertItem)`, `sections[1].items[0]`.
    let context: String
    private let object: JSONObject
    private let limits: ModelLimits

    /// Reads `value` as an object, or fails saying what it was instead.
    init(_ value: JSONValue, context: String, limits: ModelLimits) throws(Problem) {
        guard let object = value.objectValue else {
            throw .invalidRequest("\(context) must be a JSON object, not \(value.kindName)")
        }
        self.object = object
        self.context = context
        self.limits = limits
    }

    /// Fails if the object has a field outside `allowed`.
    func allowOnly(_ allowed: Set<String>) throws(Problem) {
        for key in object.keys where !allowed.contains(key) {
            throw .invalidRequest(
                "\(context) has an unknown field \"\(key.prefix(64))\"; allowed: \(allowed.sorted().joined(separator: ", "))")
        }
    }

    /// Whether the field is present (even as null).
    func has(_ key: String) -> Bool { object[key] != nil }

    /// The raw value of a field.
    func value(_ key: String) -> JSONValue? { object[key] }

    /// A string field, or nil when absent.
    func string(_ key: String) throws(Problem) -> String? {
        guard let value = object[key] else { return nil }
        guard let string = value.stringValue else {
            throw .invalidRequest("\(context): \"\(key)\" must be a string, not \(value.kindName)")
        }
        return string
    }

    /// An id field, or nil when absent; a malformed id is a 400 naming it.
    func identifier(_ key: String) throws(Problem) -> Identifier? {
        guard let text = try string(key) else { return nil }
        if let reason = Identifier.validationFailure(text) {
            throw Problem(
                slug: "invalid-id", title: "The id is not valid", status: 400,
                detail: "\(context): \"\(key)\" \"\(text.prefix(140))\" is invalid: \(reason)")
        }
        guard let identifier = Identifier(text) else {
            throw .invalidRequest("\(context): \"\(key)\" is invalid")
        }
        return identifier
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
        guard let value = object[key], !value.isNull else { return nil }
        guard let number = value.numberValue, number.isInteger, let int = number.int, int >= 0 else {
            throw .invalidRequest("\(context): \"\(key)\" must be a whole number ≥ 0, not \(value.briefText)")
        }
        return int
    }

    /// A position field that must be present.
    func requiredPosition(_ key: String) throws(Problem) -> Int {
        guard let position = try position(key) else {
            throw .invalidRequest("\(context) needs \"\(key)\" (a position, a whole number ≥ 0)")
        }
        return position
    }

    /// A model field: any JSON value within the nesting limit, or nil when absent.
    func model(_ key: String) throws(Problem) -> Model? {
        guard let value = object[key] else { return nil }
        let depth = value.nestingDepth
        if depth > limits.maxDepth {
            throw Problem(
                slug: "invalid-model", title: "The model is not valid JSON", status: 400,
                detail: "\(context): \"\(key)\" nests \(depth) levels deep; at most \(limits.maxDepth) are allowed")
        }
        return Model(value)
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
        guard let value = object[key] else { return nil }
        guard let array = value.arrayValue else {
            throw .invalidRequest("\(context): \"\(key)\" must be an array, not \(value.kindName)")
        }
        return array
    }

    /// An object field read with its own reader, or nil when absent.
    func nested(_ key: String, context nestedContext: String? = nil) throws(Problem) -> FieldReader? {
        guard let value = object[key] else { return nil }
        return try FieldReader(value, context: nestedContext ?? "\(context).\(key)", limits: limits)
    }
}

/// The limits a body's models are read under.
struct ModelLimits: Sendable {
    /// The deepest nesting a model may have (listd's default: 64).
    var maxDepth: Int = 64
}

extension JSONValue {
    /// "an object", "a string", …, for error messages.
    var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// The value's text, cut short, for error messages.
    var briefText: String {
        let text = canonicalText
        return text.count > 40 ? text.prefix(40) + "…" : text
    }

    /// How deeply arrays and objects nest: 0 for a scalar, 1 for `[]` or `{}`.
    var nestingDepth: Int {
        switch self {
        case .array(let elements): 1 + (elements.lazy.map(\.nestingDepth).max() ?? 0)
        case .object(let object): 1 + (object.lazy.map(\.value.nestingDepth).max() ?? 0)
        default: 0
        }
    }
}
