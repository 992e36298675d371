import HTTP

/// The service's entry point: turns a request into a response, now or later.
///
/// Why a responder instead of a return value: listd parks long-poll requests
/// until the list changes, so a handler must be able to answer later, from
/// any thread, without holding the event loop.
public protocol HTTPHandler: Sendable {
    /// Handles one request.
    ///
    /// Called on the connection's event loop thread; it must not block. Answer
    /// through `responder`, at once or later from any thread. Requests on one
    /// connection reach the handler one at a time, in order.
    func handle(_ request: Request, responder: Responder)

    /// The response the server sends when it refuses a request before any
    /// handler runs (a slow or oversized head, a body too large, the parser's
    /// 400s, 503 at the connection limit), with `detail` saying what was wrong.
    ///
    /// Called on an event loop thread; it must not block. The server adds
    /// `Retry-After` to a 503 and closes the connection after sending it.
    /// The default is ``ErrorResponse/plainText(status:detail:)``.
    func errorResponse(status: HTTPStatus, detail: String) -> Response
}

extension HTTPHandler {
    public func errorResponse(status: HTTPStatus, detail: String) -> Response {
        ErrorResponse.plainText(status: status, detail: detail)
    }
}
