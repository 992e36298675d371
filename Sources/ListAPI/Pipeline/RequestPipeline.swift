import HTTP
import ListStore
import Server

/// Every request's way through listd: the middleware chain around the route
/// table, and the one place where problems become `application/problem+json`.
///
/// On the way in (on the connection's event loop): the route is matched, each
/// middleware in order may answer or refuse the request, then the route runs
/// (or the 404 / 405 of no route is sent). On the way out, every answer passes
/// the middleware in reverse order, wherever it comes from (see ``Exchange``).
final class RequestPipeline: Sendable {
    private let middleware: [any Middleware]
    private let routes: Router<Route>
    /// Each caller's share of streams and long-polls, taken by the routes that wait.
    let limits: CallerLimits

    /// Creates a pipeline; `middleware` is outermost first (the first sees a
    /// request first and its answer last).
    init(middleware: [any Middleware], routes: RouteTable, limits: CallerLimits = CallerLimits(maximum: 0)) {
        self.middleware = middleware
        self.routes = routes.router
        self.limits = limits
    }

    /// What the pipeline decided on a request's head: the matched route and the
    /// context every middleware admitted, handed back with the whole request.
    final class Admitted: Sendable {
        let context: Context
        let route: Route?
        let unrouted: Problem?

        init(context: Context, route: Route?, unrouted: Problem?) {
            self.context = context
            self.route = route
            self.unrouted = unrouted
        }
    }

    /// Decides on a request from its head, before its body is read (on the
    /// connection's event loop; never blocks): the route is matched and each
    /// middleware in order may answer or refuse it, so a caller without a
    /// valid token never gets `100 Continue` and its body is never buffered.
    /// A request no route matches is answered here too (404, 405).
    func admit(_ head: RequestHead, remoteAddress: String) -> HeadDecision {
        switch prepare(Request(head: head, remoteAddress: remoteAddress)) {
        case .admitted(let admitted):
            guard admitted.route != nil else { return .refuse(answer(admitted.unrouted, admitted.context)) }
            return .admit(admitted)
        case .answered(let response, let context):
            var response = response
            passOut(&response, context)
            return .refuse(response)
        }
    }

    private enum Preparation {
        case admitted(Admitted)
        case answered(Response, Context)
    }

    private func prepare(_ request: Request) -> Preparation {
        let started = ContinuousClock.now
        var request = request
        let route: Route?
        let unrouted: Problem?
        let pattern: String
        switch routes.match(method: request.method, path: request.path) {
        case .matched(let matched, let parameters, let matchedPattern):
            request.pathParameters = parameters
            (route, unrouted, pattern) = (matched, nil, matchedPattern)
        case .notFound:
            (route, unrouted, pattern) = (nil, .noRoute(request.method, request.path), "unmatched")
        case .methodNotAllowed(let allowed):
            (route, unrouted, pattern) = (
                nil, .methodNotAllowed(request.method, request.path, allowed: allowed), "unmatched"
            )
        }
        var context = Context(request: request, route: pattern, access: route?.access, started: started)
        for stage in middleware {
            switch stage.admit(&context) {
            case .proceed: continue
            case .answer(let response): return .answered(response, context)
            case .refuse(let problem): return .answered(Self.render(problem), context)
            }
        }
        return .admitted(Admitted(context: context, route: route, unrouted: unrouted))
    }

    private func answer(_ problem: Problem?, _ context: Context) -> Response {
        var response = Self.render(problem ?? .noRoute(context.request.method, context.request.path))
        passOut(&response, context)
        return response
    }

    /// Handles one request (on the connection's event loop; never blocks):
    /// the route its head was admitted to runs with the whole request. A
    /// request that reaches here unadmitted (the package's in-process tests
    /// call handlers directly) is admitted now.
    func handle(_ request: Request, responder: Responder) {
        let admitted: Admitted
        if let decided = request.admission as? Admitted {
            admitted = decided
        } else {
            switch prepare(request) {
            case .admitted(let now): admitted = now
            case .answered(let response, let context):
                return Exchange(context: context, responder: responder, pipeline: self).respond(response)
            }
        }
        var context = admitted.context
        context.request.body = request.body
        let exchange = Exchange(context: context, responder: responder, pipeline: self)
        let ready = context
        guard let route = admitted.route else {
            return exchange.fail(admitted.unrouted ?? .noRoute(request.method, request.path))
        }
        // Taken here, with the whole request, not on its head: a head whose body
        // never comes would hold its place forever.
        if route.waits, let key = limits.key(of: context.caller) {
            guard limits.acquire(key) else { return exchange.fail(limits.refusal()) }
            let limits = self.limits
            responder.onEnd { limits.release(key) }
        }
        switch route.action {
        case .sync(let body):
            do {
                exchange.respond(try body(ready))
            } catch {
                exchange.fail(error)
            }
        case .async(let body):
            exchange.task {
                do {
                    exchange.respond(try await body(ready))
                } catch {
                    exchange.fail(error)
                }
            }
        case .custom(let body):
            body(exchange)
        }
    }

    /// Sends `response` through the middleware to `exchange`'s client.
    func send(_ response: Response, for exchange: Exchange) {
        var response = response
        passOut(&response, exchange.context)
        exchange.responder.respond(response, urgency: exchange.urgency)
    }

    /// Starts `exchange`'s event stream with `head`, passed through the middleware.
    func startStream(_ head: Response, for exchange: Exchange) -> ResponseStream {
        var head = head
        passOut(&head, exchange.context)
        return exchange.responder.startStream(head)
    }

    private func passOut(_ response: inout Response, _ context: Context) {
        let elapsed = ContinuousClock.now - context.started
        for stage in middleware.reversed() {
            stage.answering(&response, to: context, after: elapsed)
        }
    }

    /// A refusal of the HTTP server's own (408, 413, 431, 503, …), as a
    /// problem, through the middleware that can say something without a request.
    func refusal(status: HTTPStatus, detail: String) -> Response {
        var response = Self.render(.refused(status: status, detail: detail))
        for stage in middleware.reversed() { stage.refusing(&response) }
        return response
    }

    /// The problem to answer for an error a route threw.
    static func problem(for error: any Error) -> Problem {
        if let problem = error as? Problem { return problem }
        if let storeError = error as? StoreError { return Problem(storeError) }
        return .internalError("the server failed unexpectedly: \(error)")
    }

    /// A problem as `application/problem+json` (RFC 9457).
    static func render(_ problem: Problem) -> Response { problem.response() }
}

/// A route's handler and the access it needs.
struct Route: Sendable {
    enum Action: Sendable {
        /// Answers at once, on the event loop.
        /// (Handlers throw ``Problem``s; the closures are untyped only so the
        /// route tables can stay one line a route.)
        case sync(@Sendable (Context) throws -> Response)
        /// Answers from a task (anything that needs the store).
        case async(@Sendable (Context) async throws -> Response)
        /// Answers through the exchange itself, now or much later (long-polls,
        /// event streams, cache hits).
        case custom(@Sendable (Exchange) -> Void)
    }

    /// `nil`: open to everyone (`/healthz`).
    var access: AccessPolicy.Access?
    var action: Action
    /// Whether the route may hold its request open (a long-poll, an event
    /// stream): it counts against the caller's ``CallerLimits``.
    var waits = false
}

/// The routes of the contract, as each ``RouteGroup`` adds its own. HEAD is
/// answered wherever GET is (the router falls back to the GET route and the
/// server drops the body).
///
/// Every write route (`POST`, `PUT`, `PATCH`, `DELETE` needing the write or
/// admin right) added after ``idempotency`` is set runs under the request's
/// `Idempotency-Key` (``IdempotencyKeys``); write routes answer from a task
/// (``Route/Action/async(_:)``), where the keys are honoured.
struct RouteTable: Sendable {
    private(set) var router = Router<Route>()
    /// Wraps the write routes (see above); nil leaves them bare.
    var idempotency: IdempotencyKeys?

    mutating func add(
        _ method: HTTPMethod, _ pattern: String, _ access: AccessPolicy.Access?, waits: Bool = false,
        _ action: Route.Action
    ) {
        var action = action
        if let idempotency, Self.isWrite(method, access), case .async(let body) = action {
            action = .async { context in try await idempotency.run(context, body) }
        }
        router.add(method, pattern, Route(access: access, action: action, waits: waits))
    }

    /// Whether a route changes lists: a write method needing the write or admin right.
    static func isWrite(_ method: HTTPMethod, _ access: AccessPolicy.Access?) -> Bool {
        guard [.post, .put, .patch, .delete].contains(method) else { return false }
        switch access {
        case .write, .admin: return true
        case .read, .metrics, nil: return false
        }
    }
}

/// Routes that belong together, with the dependencies their handlers use and
/// nothing else. ``ListService`` builds the groups and adds their routes.
protocol RouteGroup: Sendable {
    /// Adds the group's routes to `table`.
    func register(in table: inout RouteTable)
}
