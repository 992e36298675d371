/// An HTTP request method (RFC 9110, section 9): a case-sensitive token.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The method's token, for example `GET`.
    public let rawValue: String

    /// Creates a method from its token.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `GET`: read a resource.
    public static let get = HTTPMethod(rawValue: "GET")
    /// `HEAD`: GET's head without the body.
    public static let head = HTTPMethod(rawValue: "HEAD")
    /// `POST`: create or process.
    public static let post = HTTPMethod(rawValue: "POST")
    /// `PUT`: replace a resource.
    public static let put = HTTPMethod(rawValue: "PUT")
    /// `PATCH`: change part of a resource.
    public static let patch = HTTPMethod(rawValue: "PATCH")
    /// `DELETE`: remove a resource.
    public static let delete = HTTPMethod(rawValue: "DELETE")
    /// `OPTIONS`: ask what a resource supports.
    public static let options = HTTPMethod(rawValue: "OPTIONS")

    /// The method's token, for logs.
    public var description: String { rawValue }
}
