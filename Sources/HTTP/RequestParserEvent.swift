/// What ``RequestParser/next()`` found in the bytes received so far.
public enum RequestParserEvent: Sendable {
    /// A complete, valid head. Every request produces one, before its body is read, and it is
    /// always followed by ``request(_:)`` or ``failure(_:)``. When `head.expectsContinue`, the
    /// body limit has already been checked (a `Content-Length` over it is a 413 failure instead),
    /// so the server may send ``ResponseSerializer/continueLine`` now.
    case head(RequestHead)
    /// A complete request with its whole body.
    case request(Request)
    /// The request is refused: answer with the error's status and close the connection.
    case failure(HTTPParseError)
}
