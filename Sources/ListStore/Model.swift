import JSON

/// A section's or an item's model: any JSON value, held in canonical text.
///
/// Canonical text (object keys sorted, no insignificant white space) makes
/// equality plain text equality, so "did the model change" is a string
/// comparison and the store keeps exactly one spelling of every value.
/// Size limits are the store's to check (``StoreConfiguration/maxModelBytes``),
/// because the limit is configured per store, not per value.
public struct Model: Sendable, Hashable, CustomStringConvertible {
    /// The value's canonical JSON text.
    public let canonicalText: String

    /// The model of a JSON value already parsed.
    public init(_ value: JSONValue) {
        self.canonicalText = value.canonicalText
    }

    /// Parses untrusted JSON text and keeps its canonical form.
    ///
    /// Bad JSON, invalid UTF-8, or nesting deeper than `limits.maxDepth` is
    /// rejected as `invalidModel` with the parser's line and column.
    public init(parsing bytes: [UInt8], limits: JSONLimits = JSONLimits()) throws(StoreError) {
        do {
            self.canonicalText = try CanonicalJSON.canonicalize(bytes, limits: limits)
        } catch {
            throw StoreError(.invalidModel, "model is not valid JSON: \(error)")
        }
    }

    /// A model whose text is known to be canonical (read back from the database).
    init(trustedCanonicalText text: String) {
        self.canonicalText = text
    }

    /// The empty object `{}`, the model of a section or item created without one.
    public static let emptyObject = Model(trustedCanonicalText: "{}")

    /// The size of the canonical text in bytes, the figure the size limit applies to.
    public var byteCount: Int { canonicalText.utf8.count }

    /// The model as a JSON value, for callers that need its structure.
    public func jsonValue() throws(StoreError) -> JSONValue {
        do {
            return try JSONValue(
                parsing: Array(canonicalText.utf8), limits: JSONLimits(maxDepth: 1024, maxBytes: Int.max))
        } catch {
            throw StoreError(.invalidModel, "stored model does not parse: \(error)")
        }
    }

    /// The canonical text.
    public var description: String { canonicalText }
}
