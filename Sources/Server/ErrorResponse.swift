import HTTP

/// The server's default answer when it refuses a request itself (408, 413,
/// 431, 503, the parser's 400s): the status and a plain-text `detail`.
///
/// Why neutral: the server is a library and knows no application's error
/// format. An application renders its own by implementing
/// ``HTTPHandler/errorResponse(status:detail:)``, as listd does with
/// `application/problem+json`.
public enum ErrorResponse {
    /// `detail` and a newline as `text/plain`, with `status`.
    public static func plainText(status: HTTPStatus, detail: String) -> Response {
        Response(
            status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Array((detail + "\n").utf8))
    }
}
