/// An HTTP protocol version (RFC 9110, section 2.5): `HTTP/<major>.<minor>`.
///
/// The parser accepts only 1.0 and 1.1; anything else is answered with 505.
public struct HTTPVersion: Hashable, Sendable, CustomStringConvertible {
    /// The major version digit.
    public var major: Int
    /// The minor version digit.
    public var minor: Int

    /// Creates a version from its two digits.
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// HTTP/1.0: connections close after each response unless the client asks for keep-alive.
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    /// HTTP/1.1: persistent connections by default, chunked transfer coding, `Host` required.
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)

    /// The version as it appears on the wire, for example `HTTP/1.1`.
    public var description: String { "HTTP/\(major).\(minor)" }
}
