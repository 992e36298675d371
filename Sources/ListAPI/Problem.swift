/// An error answer in the shape of RFC 9457 (`application/problem+json`).
///
/// Every error listd returns is one of these: a stable `type` URI a client can
/// switch on, a short `title`, the HTTP `status`, and a `detail` that names what
/// was wrong (the field, the id, the limit).
public struct Problem: Error, Sendable, Equatable {
    /// The last path component of the type URI, for example `unknown-list`.
    public var slug: String
    /// A short, fixed summary of the problem type.
    public var title: String
    /// The HTTP status code.
    public var status: Int
    /// What exactly was wrong with this request.
    public var detail: String

    /// The prefix of every problem type URI.
    public static let typePrefix = "https://listd.dev/problems/"

    /// Creates a problem.
    public init(slug: String, title: String, status: Int, detail: String) {
        self.slug = slug
        self.title = title
        self.status = status
        self.detail = detail
    }

    /// The full type URI.
    public var type: String { Problem.typePrefix + slug }
}
