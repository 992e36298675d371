/// A view parameter a client got wrong: which one, and what was wrong with it,
/// in words fit for a problem's `detail` (a route answers 400 with it).
///
/// ```
/// order has an empty field name in "a..b"
/// limit must be an integer from 1 to 10000; got "abc"
/// ```
public struct ViewSpecError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The parameter at fault (`where`, `q`, `order`, `group`, `limit`), or
    /// `view` for the query-string form as a whole (its encoding, an unknown name).
    public var parameter: String
    /// The whole message; it names the parameter and quotes (truncated) what was sent.
    public var detail: String

    /// Creates an error.
    public init(parameter: String, detail: String) {
        self.parameter = parameter
        self.detail = detail
    }

    /// The detail.
    public var description: String { detail }

    /// The most characters of a client's text an error quotes.
    static let quotedLength = 80

    /// `text` in double quotes, cut to ``quotedLength`` characters.
    static func quoted(_ text: some StringProtocol) -> String {
        "\"\(text.prefix(quotedLength))\""
    }
}
