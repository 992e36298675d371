import HTTP

/// One concern every request goes through, whatever its route: CORS, access
/// control, metrics, logging (see ``RequestPipeline``, which runs them).
///
/// A middleware sees a request twice: once before its route runs
/// (``admit(_:)``, on the event loop, where it may answer the request itself),
/// and once for its answer (``answering(_:to:after:)``), whenever and on
/// whatever thread that answer is sent: at once, from a route's task, from the
/// fan-out queue that wakes parked long-polls, from the timeout ticker, or as
/// the head of an event stream. So no route does any of these by hand.
///
/// Every answer passes every middleware, those after one that answered or
/// refused the request at admission included: they all stand outside the
/// routes, and none keeps state between a request and its answer.
///
/// Both run for every request, 10,000 times for one commit that wakes 10,000
/// parked long-polls: they must not block, allocate per call only what they
/// add to the response, and take no lock but a short one.
protocol Middleware: Sendable {
    /// Looks at a request before its route runs. `context` may be relabelled
    /// (a preflight is counted as `preflight`).
    func admit(_ context: inout Context) -> Admission

    /// Looks at an answer (or an event stream's head) on its way to the
    /// client, `elapsed` after the request arrived; problems are already
    /// rendered as `application/problem+json`.
    func answering(_ response: inout Response, to context: Context, after elapsed: Duration)

    /// Looks at a refusal the HTTP server sends before any request was read
    /// (a slow or oversized head, 503 at the connection limit): no request,
    /// so no ``Context``.
    func refusing(_ response: inout Response)
}

/// What a middleware decides about a request before its route runs.
enum Admission: Sendable {
    /// On to the next middleware, and then the route.
    case proceed
    /// Answered here; the route does not run.
    case answer(Response)
    /// Refused here with a problem; the route does not run.
    case refuse(Problem)
}

extension Middleware {
    func admit(_ context: inout Context) -> Admission { .proceed }
    func answering(_ response: inout Response, to context: Context, after elapsed: Duration) {}
    func refusing(_ response: inout Response) {}
}
