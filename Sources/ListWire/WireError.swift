/// A body that does not have the shape API.md gives it: what was expected,
/// where, and the start of what came instead.
///
/// The wire layer knows no HTTP: the server turns it into a 400
/// problem+json, the client into an invalid-response error.
public struct WireError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong, in words a person can act on.
    public var detail: String

    /// Creates an error with its detail.
    public init(_ detail: String) { self.detail = detail }

    /// The detail.
    public var description: String { detail }
}
