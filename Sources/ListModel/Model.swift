import JSON

/// A section's or an item's model: any JSON value, held in canonical text.
///
/// Canonical text (object keys sorted, no insignificant white space) makes
/// equality plain text equality, so "did the model change" is a string
/// comparison and the store keeps exactly one spelling of every value.
/// Size limits are the store's to check (its configured maximum),
/// because the limit is configured per store, not per value.
public struct Model: Sendable, Hashable, CustomStringConvertible {
    /// The value's canonical JSON text.
    public let canonicalText: String

    /// The model of a JSON value already parsed.
    public init(_ value: JSONValue) {
        self.canonicalText = value.canonicalText
    }

    /// A model whose text is known to be canonical (read back from the database).
    package init(trustedCanonicalText text: String) {
        self.canonicalText = text
    }

    /// The empty object `{}`, the model of a section or item created without one.
    public static let emptyObject = Model(trustedCanonicalText: "{}")

    /// The size of the canonical text in bytes, the figure the size limit applies to.
    public var byteCount: Int { canonicalText.utf8.count }

    /// The model as a JSON value, for callers that need its structure.
    public func jsonValue() throws(ModelError) -> JSONValue {
        do {
            return try JSONValue(
                parsing: Array(canonicalText.utf8), limits: JSONLimits(maxDepth: 1024, maxBytes: Int.max))
        } catch {
            throw ModelError("stored model does not parse: \(error)")
        }
    }

    /// The canonical text.
    public var description: String { canonicalText }
}

/// A model that could not be read back as JSON.
public struct ModelError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, in words fit for a log.
    public var detail: String

    /// Creates an error.
    public init(_ detail: String) { self.detail = detail }

    public var description: String { detail }
}

/// A model written in source, as in `.updateItem(id: "apple", model: ["qty": 3])`.
extension Model: ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(booleanLiteral value: Bool) { self.init(.bool(value)) }
    public init(integerLiteral value: Int64) { self.init(JSONValue(integerLiteral: value)) }
    public init(floatLiteral value: Double) { self.init(JSONValue(floatLiteral: value)) }
    public init(stringLiteral value: String) { self.init(.string(value)) }
    public init(arrayLiteral elements: JSONValue...) { self.init(.array(elements)) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(.object(JSONObject(elements)))
    }
}
