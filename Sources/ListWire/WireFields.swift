import JSON
import ListModel

/// Reads the members of one JSON object of a body, turning every mistake into
/// a ``WireError`` whose detail names the place (`op 2 (moveItem)`), the member
/// and what was expected.
///
/// Unknown members are errors, not silently ignored: a client that misspells
/// `"at"` as `"index"` learns so at once instead of finding its item appended.
public struct WireFields: Sendable {
    /// Where this object is, for messages: `the body`, `op 3 (insertItem)`, `sections[1].items[0]`.
    public let context: String
    /// The object read.
    public let object: JSONObject

    /// Reads `value` as an object, or fails saying what it was instead.
    public init(_ value: JSONValue, context: String) throws(WireError) {
        guard let object = value.objectValue else {
            throw WireError("\(context) must be a JSON object, not \(value.kindName)")
        }
        self.object = object
        self.context = context
    }

    /// Fails if the object has a member outside `allowed`.
    public func allowOnly(_ allowed: Set<String>) throws(WireError) {
        for key in object.keys where !allowed.contains(key) {
            throw WireError(
                "\(context) has an unknown field \"\(key.prefix(64))\"; allowed: \(allowed.sorted().joined(separator: ", "))"
            )
        }
    }

    /// Whether the member is present (even as null).
    public func has(_ key: String) -> Bool { object[key] != nil }

    /// The raw value of a member.
    public func value(_ key: String) -> JSONValue? { object[key] }

    /// A string member, or nil when absent.
    public func string(_ key: String) throws(WireError) -> String? {
        guard let value = object[key] else { return nil }
        guard let string = value.stringValue else {
            throw WireError("\(context): \"\(key)\" must be a string, not \(value.kindName)")
        }
        return string
    }

    /// A string member that must be present; `what` says what it holds (`an id`).
    public func requiredString(_ key: String, _ what: String) throws(WireError) -> String {
        guard let string = try string(key) else { throw WireError("\(context) needs \"\(key)\" (\(what))") }
        return string
    }

    /// An id member, or nil when absent; a malformed one is an ``WireError/Kind/invalidID`` error naming it.
    public func identifier(_ key: String) throws(WireError) -> Identifier? {
        guard let text = try string(key) else { return nil }
        return try Self.identifier(text, context: context, key: key)
    }

    /// An id member that must be present.
    public func requiredIdentifier(_ key: String) throws(WireError) -> Identifier {
        guard let id = try identifier(key) else { throw WireError("\(context) needs \"\(key)\" (an id)") }
        return id
    }

    /// `text` as an id; a malformed one is an ``WireError/Kind/invalidID`` error naming `key` in `context`.
    public static func identifier(_ text: String, context: String, key: String) throws(WireError) -> Identifier {
        if let reason = Identifier.validationFailure(text) {
            throw WireError(
                "\(context): \"\(key)\" \"\(text.prefix(140))\" is invalid: \(reason)", kind: .invalidID)
        }
        guard let id = Identifier(text) else {
            throw WireError("\(context): \"\(key)\" is invalid", kind: .invalidID)
        }
        return id
    }

    /// A model member, or nil when absent; one nested deeper than `limits`
    /// allow is an ``WireError/Kind/invalidModel`` error.
    public func model(_ key: String, _ limits: ModelLimits) throws(WireError) -> Model? {
        guard let value = object[key] else { return nil }
        return try Self.model(value, context: context, key: key, limits: limits)
    }

    /// `value` as a model, within `limits`.
    public static func model(_ value: JSONValue, context: String, key: String, limits: ModelLimits) throws(WireError)
        -> Model
    {
        let depth = value.nestingDepth
        if depth > limits.maxDepth {
            throw WireError(
                "\(context): \"\(key)\" nests \(depth) levels deep; at most \(limits.maxDepth) are allowed",
                kind: .invalidModel)
        }
        return Model(value)
    }

    /// A position member (a whole number ≥ 0), or nil when absent or null.
    public func position(_ key: String) throws(WireError) -> Int? {
        guard let value = object[key], !value.isNull else { return nil }
        guard let number = value.numberValue, number.isInteger, let int = number.int, int >= 0 else {
            throw WireError("\(context): \"\(key)\" must be a whole number ≥ 0, not \(value.briefText)")
        }
        return int
    }

    /// A position member that must be present.
    public func requiredPosition(_ key: String) throws(WireError) -> Int {
        guard let position = try position(key) else {
            throw WireError("\(context) needs \"\(key)\" (a position, a whole number ≥ 0)")
        }
        return position
    }

    /// A member that may hold any JSON value and must be present.
    public func requiredValue(_ key: String, _ what: String) throws(WireError) -> JSONValue {
        guard let value = object[key] else { throw WireError("\(context) needs \"\(key)\" (\(what))") }
        return value
    }

    /// An array member, or nil when absent.
    public func array(_ key: String) throws(WireError) -> [JSONValue]? {
        guard let value = object[key] else { return nil }
        guard let array = value.arrayValue else {
            throw WireError("\(context): \"\(key)\" must be an array, not \(value.kindName)")
        }
        return array
    }
}

extension JSONValue {
    /// "an object", "a string", …, for error messages.
    public var kindName: String {
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
    public var briefText: String {
        let text = canonicalText
        return text.count > 40 ? text.prefix(40) + "…" : text
    }
}

extension JSONValue {
    /// How deeply arrays and objects nest: 0 for a scalar, 1 for `[]` or `{}`.
    public var nestingDepth: Int {
        switch self {
        case .array(let elements): 1 + (elements.lazy.map(\.nestingDepth).max() ?? 0)
        case .object(let object): 1 + (object.lazy.map(\.value.nestingDepth).max() ?? 0)
        default: 0
        }
    }
}
