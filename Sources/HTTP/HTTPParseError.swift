/// Why a request was refused: the status to answer with and a reason a person can act on.
///
/// This is the HTTP module's one error type. After a parse error the connection's framing
/// can no longer be trusted, so the server answers with `status` and closes.
public struct HTTPParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The status to answer with: 400, 413, 414, 417, 431, 501 or 505.
    public var status: HTTPStatus
    /// What was wrong, for logs and problem details, for example
    /// `"white space between field name and colon"`.
    public var reason: String

    /// Creates an error from its status and reason.
    public init(status: HTTPStatus, reason: String) {
        self.status = status
        self.reason = reason
    }

    public var description: String { "\(status.code) \(status.reasonPhrase): \(reason)" }
}
