/// An HTTP response status (RFC 9110, section 15): a three-digit code and its reason phrase.
///
/// The reason phrase is informational only; clients act on the code. Equality compares both,
/// so use the predefined constants rather than building statuses by hand.
public struct HTTPStatus: Hashable, Sendable, CustomStringConvertible {
    /// The three-digit status code, for example 404.
    public var code: Int
    /// The reason phrase sent after the code on the status line, for example `Not Found`.
    public var reasonPhrase: String

    /// Creates a status from its code and reason phrase.
    public init(code: Int, reasonPhrase: String) {
        self.code = code
        self.reasonPhrase = reasonPhrase
    }

    /// Creates a status for a code, with the standard reason phrase when the code is known.
    public init(code: Int) {
        self = HTTPStatus.known.first { $0.code == code } ?? HTTPStatus(code: code, reasonPhrase: "")
    }

    /// `100 Continue`: the client may send the request body.
    public static let `continue` = HTTPStatus(code: 100, reasonPhrase: "Continue")
    /// `200 OK`.
    public static let ok = HTTPStatus(code: 200, reasonPhrase: "OK")
    /// `201 Created`.
    public static let created = HTTPStatus(code: 201, reasonPhrase: "Created")
    /// `202 Accepted`.
    public static let accepted = HTTPStatus(code: 202, reasonPhrase: "Accepted")
    /// `204 No Content`: never carries a body.
    public static let noContent = HTTPStatus(code: 204, reasonPhrase: "No Content")
    /// `301 Moved Permanently`.
    public static let movedPermanently = HTTPStatus(code: 301, reasonPhrase: "Moved Permanently")
    /// `304 Not Modified`: never carries a body.
    public static let notModified = HTTPStatus(code: 304, reasonPhrase: "Not Modified")
    /// `400 Bad Request`: the request is malformed.
    public static let badRequest = HTTPStatus(code: 400, reasonPhrase: "Bad Request")
    /// `401 Unauthorized`.
    public static let unauthorized = HTTPStatus(code: 401, reasonPhrase: "Unauthorized")
    /// `403 Forbidden`.
    public static let forbidden = HTTPStatus(code: 403, reasonPhrase: "Forbidden")
    /// `404 Not Found`.
    public static let notFound = HTTPStatus(code: 404, reasonPhrase: "Not Found")
    /// `405 Method Not Allowed`: sent with an `Allow` header.
    public static let methodNotAllowed = HTTPStatus(code: 405, reasonPhrase: "Method Not Allowed")
    /// `406 Not Acceptable`.
    public static let notAcceptable = HTTPStatus(code: 406, reasonPhrase: "Not Acceptable")
    /// `408 Request Timeout`: the client was too slow to send its request.
    public static let requestTimeout = HTTPStatus(code: 408, reasonPhrase: "Request Timeout")
    /// `409 Conflict`.
    public static let conflict = HTTPStatus(code: 409, reasonPhrase: "Conflict")
    /// `410 Gone`.
    public static let gone = HTTPStatus(code: 410, reasonPhrase: "Gone")
    /// `411 Length Required`.
    public static let lengthRequired = HTTPStatus(code: 411, reasonPhrase: "Length Required")
    /// `412 Precondition Failed`.
    public static let preconditionFailed = HTTPStatus(code: 412, reasonPhrase: "Precondition Failed")
    /// `413 Content Too Large`: the body is over the limit.
    public static let contentTooLarge = HTTPStatus(code: 413, reasonPhrase: "Content Too Large")
    /// `414 URI Too Long`: the request-target is over the limit.
    public static let uriTooLong = HTTPStatus(code: 414, reasonPhrase: "URI Too Long")
    /// `415 Unsupported Media Type`.
    public static let unsupportedMediaType = HTTPStatus(code: 415, reasonPhrase: "Unsupported Media Type")
    /// `417 Expectation Failed`: an `Expect` other than `100-continue`.
    public static let expectationFailed = HTTPStatus(code: 417, reasonPhrase: "Expectation Failed")
    /// `422 Unprocessable Content`.
    public static let unprocessableContent = HTTPStatus(code: 422, reasonPhrase: "Unprocessable Content")
    /// `428 Precondition Required`.
    public static let preconditionRequired = HTTPStatus(code: 428, reasonPhrase: "Precondition Required")
    /// `429 Too Many Requests`.
    public static let tooManyRequests = HTTPStatus(code: 429, reasonPhrase: "Too Many Requests")
    /// `431 Request Header Fields Too Large`: the head is over the byte or field-count limit.
    public static let requestHeaderFieldsTooLarge = HTTPStatus(
        code: 431, reasonPhrase: "Request Header Fields Too Large")
    /// `500 Internal Server Error`.
    public static let internalServerError = HTTPStatus(code: 500, reasonPhrase: "Internal Server Error")
    /// `501 Not Implemented`: an unknown method or transfer coding.
    public static let notImplemented = HTTPStatus(code: 501, reasonPhrase: "Not Implemented")
    /// `503 Service Unavailable`: the server is over its connection limit or shutting down.
    public static let serviceUnavailable = HTTPStatus(code: 503, reasonPhrase: "Service Unavailable")
    /// `505 HTTP Version Not Supported`: a version other than 1.0 or 1.1.
    public static let httpVersionNotSupported = HTTPStatus(
        code: 505, reasonPhrase: "HTTP Version Not Supported")

    /// Every predefined status, for looking up a reason phrase by code.
    /// `507 Insufficient Storage`: the disk (or the database's size limit) is full.
    public static let insufficientStorage = HTTPStatus(code: 507, reasonPhrase: "Insufficient Storage")

    static let known: [HTTPStatus] = [
        .continue, .ok, .created, .accepted, .noContent, .movedPermanently, .notModified,
        .badRequest, .unauthorized, .forbidden, .notFound, .methodNotAllowed, .notAcceptable,
        .requestTimeout, .conflict, .gone, .lengthRequired, .preconditionFailed, .contentTooLarge,
        .uriTooLong, .unsupportedMediaType, .expectationFailed, .unprocessableContent,
        .preconditionRequired, .tooManyRequests, .requestHeaderFieldsTooLarge,
        .internalServerError, .notImplemented, .serviceUnavailable, .httpVersionNotSupported, .insufficientStorage,
    ]

    /// The status as on a status line, for example `404 Not Found`.
    public var description: String { "\(code) \(reasonPhrase)" }
}
