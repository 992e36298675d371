import HTTP
import Server

/// The way back to one request's client, through the pipeline: whatever is
/// sent here, now or much later and from any thread, passes every
/// middleware's ``Middleware/answering(_:to:after:)`` first, and a problem is
/// rendered as `application/problem+json` on the way.
///
/// Routes that answer later (long-polls, event streams, cache hits) are handed
/// one; the change hub keeps it with a parked long-poll.
struct Exchange: Sendable {
    let context: Context
    let responder: Responder
    let pipeline: RequestPipeline
    /// Whether its answer may wait behind a burst of others in its event
    /// loop's inbox (see ``Server/Urgency``): `.bulk` for a parked long-poll's.
    var urgency: Urgency = .direct

    /// The same exchange, its answer one of a burst (a parked long-poll's: one
    /// commit answers thousands), so that it never holds back a direct answer.
    var inBulk: Exchange {
        var exchange = self
        exchange.urgency = .bulk
        return exchange
    }

    /// Sends `response`.
    func respond(_ response: Response) { pipeline.send(response, for: self) }

    /// Sends `problem`, rendered.
    func fail(_ problem: Problem) { respond(RequestPipeline.render(problem)) }

    /// Sends the problem for `error` (a ``Problem``, a store error, or a 500).
    func fail(_ error: any Error) { fail(RequestPipeline.problem(for: error)) }

    /// Starts an event stream with `head`'s status and fields (which pass the
    /// middleware as any answer does).
    func startStream(_ head: Response) -> ResponseStream { pipeline.startStream(head, for: self) }

    /// Runs `body` when the client goes away before it is answered.
    func onCancel(_ body: @escaping @Sendable () -> Void) { responder.onCancel(body) }

    /// Runs `body` in a task that the client going away cancels, so the
    /// store skips the calls it has not started (see StoreError.Kind.cancelled).
    ///
    /// Every task a route starts for its request goes through here: a bare
    /// `Task {}` would outlive its client and still read or write.
    func task(_ body: @escaping @Sendable () async -> Void) {
        let task = Task { await body() }
        responder.onCancel { task.cancel() }
    }
}
