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
}
