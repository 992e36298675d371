/// A body that does not have the shape API.md gives it: what was expected,
/// where, and the start of what came instead.
///
/// The wire layer knows no HTTP: the server turns it into a 400
/// problem+json (its ``kind`` choosing the problem type), the client into an
/// invalid-response error.
public struct WireError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Which rule the body broke.
    public enum Kind: Sendable, Equatable {
        /// The body's shape: a missing, unknown or mistyped member.
        case shape
        /// An id that is not 1-128 characters of `A-Z a-z 0-9 . _ ~ -`.
        case invalidID
        /// A model the limits refuse (nested too deeply).
        case invalidModel
    }

    /// Which rule the body broke.
    public var kind: Kind
    /// What was wrong, in words a person can act on.
    public var detail: String

    /// Creates an error with its detail.
    public init(_ detail: String, kind: Kind = .shape) {
        self.kind = kind
        self.detail = detail
    }

    /// The detail.
    public var description: String { detail }
}

/// The limits a body's models are read under.
public struct ModelLimits: Sendable, Hashable {
    /// The deepest nesting a model may have (listd's default: 64).
    public var maxDepth: Int

    /// Creates limits.
    public init(maxDepth: Int = 64) { self.maxDepth = maxDepth }
}
