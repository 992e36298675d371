import HTTP

/// The service's entry point: turns a request into a response, now or later.
///
/// Why a responder instead of a return value: listd parks long-poll requests
/// until the list changes, so a handler must be able to answer later, from
/// any thread, without holding the event loop.
public protocol HTTPHandler: Sendable {
    /// Decides on a request from its head alone, before any byte of its body is read
    /// (authentication, routing, the `Host` check).
    ///
    /// Called on the connection's event loop thread; it must not block. A refusal is sent at
    /// once, without `100 Continue`, and, when a body was announced, with `Connection: close`:
    /// the body is discarded unread, never buffered. An admission's value comes back as the
    /// whole request's ``Request/admission`` in ``handle(_:responder:)``. The default admits
    /// every request and keeps nothing.
    func admit(_ head: RequestHead, remoteAddress: String) -> HeadDecision

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

/// What ``HTTPHandler/admit(_:remoteAddress:)`` decided about a request's head.
public enum HeadDecision: Sendable {
    /// Read the body (sending `100 Continue` if the client waits for it), then hand the request
    /// to the handler with this value as its ``Request/admission``.
    case admit((any Sendable)?)
    /// Send this response instead; the request never reaches ``HTTPHandler/handle(_:responder:)``.
    case refuse(Response)
}

extension HTTPHandler {
    public func admit(_ head: RequestHead, remoteAddress: String) -> HeadDecision { .admit(nil) }

    public func errorResponse(status: HTTPStatus, detail: String) -> Response {
        ErrorResponse.plainText(status: status, detail: detail)
    }
}
