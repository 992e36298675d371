import Foundation
import HTTP
import JSON
import ListModel
import ListStore
import ListWire
import Logging
import ReactiveCore
import Server

/// The listd service: every route of the HTTP contract (docs/API.md) on top
/// of a ``Store``, as an ``HTTPHandler`` for the HTTP server.
///
/// Handlers run on the connection's event loop and never block it: cached
/// answers are sent at once, everything that needs the store runs in a task
/// whose store calls execute on the store's own threads. A client that
/// disconnects cancels its task: store calls not yet started are skipped
/// (a queued write is not applied), calls already started run to their end.
public final class ListService: HTTPHandler {
    let store: any Store
    let configuration: ServiceConfiguration
    let logger: Logger
    /// The service's metrics; `GET /metrics` renders them.
    public let metrics: ServiceMetrics
    let router: CommitRouter
    let computer: ChangeComputer
    let hub: ChangeHub
    let eventHub: EventHub
    let cache: SnapshotCache
    let decoder: RequestDecoder
    private let routes: Router<Route>
    private let commitSubscription: CommitSubscription

    /// Creates the service over `store`.
    public init(
        store: any Store, configuration: ServiceConfiguration = .init(), metrics: ServiceMetrics = ServiceMetrics(),
        logger: Logger
    ) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        let cache = SnapshotCache(capacityBytes: configuration.snapshotCacheBytes)
        self.cache = cache
        // A deleted list's snapshot must not outlive its acknowledged deletion in the cache.
        let router = CommitRouter(onCommit: { commit in if commit.deleted { cache.remove(commit.list) } })
        self.router = router
        self.computer = ChangeComputer(store: store, router: router)
        self.hub = ChangeHub(router: router, computer: computer, metrics: metrics, tick: configuration.timeoutTick)
        self.eventHub = EventHub(
            router: router, computer: computer, metrics: metrics, heartbeat: configuration.eventHeartbeat)
        self.decoder = RequestDecoder(
            maxBodyBytes: configuration.maxBodyBytes, models: ModelLimits(maxDepth: configuration.maxModelDepth))
        self.routes = Self.routeTable()
        self.commitSubscription = router.connect(to: store)
        metrics.gauge("listd_parked_waiters") { [hub] in
            Double(hub.parkedCount)
        }
        metrics.gauge("listd_event_streams") { [eventHub] in Double(eventHub.streamCount) }
        metrics.counterFunction("listd_event_stream_events_total") { [eventHub] in
            Double(eventHub.eventsSent.load(ordering: .relaxed))
        }
        metrics.counterFunction("listd_event_stream_coalesced_total") { [eventHub] in
            Double(eventHub.changesCoalesced.load(ordering: .relaxed))
        }
        metrics.counterFunction("listd_event_stream_heartbeats_total") { [eventHub] in
            Double(eventHub.heartbeatsSent.load(ordering: .relaxed))
        }
    }

    deinit {
        commitSubscription.cancel()
    }

    /// Answers every parked long-poll with "no change" so its client
    /// reconnects elsewhere, and refuses to park new ones. The HTTP server
    /// calls it when it starts a graceful shutdown.
    public func shutdown() {
        hub.shutdown()
        eventHub.shutdown()
    }

    /// How many server-sent-event streams are open.
    public var eventStreams: Int { eventHub.streamCount }

    /// How many long-polls are parked.
    public var parkedWaiters: Int { hub.parkedCount }

    // MARK: - Dispatch

    public func handle(_ request: Request, responder: Responder) {
        let started = ContinuousClock.now
        if request.method == .options, configuration.cors.isEnabled {
            return preflight(request, responder, started: started)
        }
        switch routes.match(method: request.method, path: request.path) {
        case .notFound:
            finish(
                .init(request: request, route: "unmatched", started: started), responder,
                Problem.noRoute(request.method, request.path).response())
        case .methodNotAllowed(let allowed):
            finish(
                .init(request: request, route: "unmatched", started: started), responder,
                Problem.methodNotAllowed(request.method, request.path, allowed: allowed).response())
        case .matched(let route, let parameters, let pattern):
            var request = request
            request.pathParameters = parameters
            let context = Context(request: request, route: pattern, started: started)
            if let access = route.access {
                switch configuration.accessPolicy.decide(authorization: request.header("Authorization"), access: access)
                {
                case .allowed: break
                case .unauthenticated(let reason):
                    return finish(context, responder, Problem.unauthorized(reason).response())
                case .forbidden(let reason):
                    return finish(context, responder, Problem.forbidden(reason).response())
                }
            }
            switch route.action {
            case .sync(let body):
                do {
                    finish(context, responder, try body(self, context))
                } catch {
                    finish(context, responder, problem(for: error).response())
                }
            case .async(let body):
                let finishing = Responder.Finishing(service: self, context: context, responder: responder)
                finishing.task { [self] in
                    do {
                        finishing.respond(try await body(self, context))
                    } catch {
                        finishing.respond(problem(for: error).response())
                    }
                }
            case .custom(let body):
                body(self, context, Responder.Finishing(service: self, context: context, responder: responder))
            }
        }
    }

    /// The server's own refusals (408, 413, 431, 503, …) as listd's problem+json,
    /// readable by a page of the configured origin where that needs no request.
    public func errorResponse(status: HTTPStatus, detail: String) -> Response {
        var response = Problem.refused(status: status, detail: detail).response()
        configuration.cors.addHeadersWithoutRequest(to: &response.headers)
        return response
    }

    /// The problem to answer for an error a handler threw.
    func problem(for error: any Error) -> Problem {
        if let problem = error as? Problem { return problem }
        if let storeError = error as? StoreError { return Problem(storeError) }
        return .internalError("the server failed unexpectedly: \(error)")
    }

    /// Answers a CORS preflight: 204 for an allowed origin, 403 for another.
    private func preflight(_ request: Request, _ responder: Responder, started: ContinuousClock.Instant) {
        let context = Context(request: request, route: "preflight", started: started)
        let origin = request.header("Origin")
        if let response = configuration.cors.preflight(origin: origin) {
            return finish(context, responder, response)
        }
        let problem = Problem(
            slug: "origin-not-allowed", title: "The origin is not allowed", status: 403,
            detail: origin.map { "origin \($0.prefix(200)) is not one of listd's --cors-origin values" }
                ?? "OPTIONS is answered only as a CORS preflight, with an Origin header")
        finish(context, responder, problem.response())
    }

    /// Adds the CORS fields for the request's origin, if CORS is on.
    func addCORSHeaders(to headers: inout HTTPHeaders, _ context: Context) {
        configuration.cors.addHeaders(to: &headers, origin: context.request.header("Origin"))
    }

    /// Records, logs and sends one answer.
    func finish(_ context: Context, _ responder: Responder, _ response: Response) {
        var response = response
        if configuration.cors.isEnabled, context.route != "preflight" { addCORSHeaders(to: &response.headers, context) }
        let elapsed = ContinuousClock.now - context.started
        metrics.request(
            route: context.route, method: context.request.method.rawValue, status: response.status.code,
            duration: elapsed)
        if response.status.code >= 500 {
            logger.error(
                "request failed",
                metadata: [
                    "method": "\(context.request.method)", "path": "\(context.request.path)",
                    "status": "\(response.status.code)",
                    "body": "\(String(decoding: response.body.prefix(512), as: UTF8.self))",
                ])
        } else if logger.logLevel <= .debug {
            logger.debug(
                "\(context.request.method) \(context.request.head.target) \(response.status.code)",
                metadata: [
                    "remote": "\(context.request.remoteAddress)",
                    "ms": "\(String(format: "%.2f", elapsed / .milliseconds(1)))",
                ])
        }
        responder.respond(response)
    }
}

/// One request in flight through the service.
struct Context: Sendable {
    var request: Request
    /// The matched route's pattern, the label metrics use.
    var route: String
    var started: ContinuousClock.Instant

    /// Whether the client asked for `?pretty` output.
    var pretty: Bool { request.queryItems.contains { $0.name == "pretty" && $0.value != "false" && $0.value != "0" } }

    /// A path parameter, validated as an id (the router decoded it).
    func identifier(_ name: String) throws(Problem) -> Identifier {
        let text = request.pathParameters[name] ?? ""
        if let reason = Identifier.validationFailure(text) {
            throw Problem(
                slug: "invalid-id", title: "The id is not valid", status: 400,
                detail: "the \(name) id in the path is invalid: \(reason)")
        }
        guard let id = Identifier(text) else {
            throw Problem(
                slug: "invalid-id", title: "The id is not valid", status: 400,
                detail: "the \(name) id in the path is invalid")
        }
        return id
    }
}

/// A route's handler and the access it needs.
struct Route: Sendable {
    enum Action: Sendable {
        /// Answers at once, on the event loop.
        /// (Handlers throw ``Problem``s; the closures are untyped only so the
        /// route table can stay one line a route.)
        case sync(@Sendable (ListService, Context) throws -> Response)
        /// Answers from a task (anything that needs the store).
        case async(@Sendable (ListService, Context) async throws -> Response)
        /// Answers through the responder itself, now or much later (long-polls, cache hits).
        case custom(@Sendable (ListService, Context, Responder.Finishing) -> Void)
    }

    /// `nil`: open to everyone (`/healthz`).
    var access: AccessPolicy.Access?
    var action: Action
}

extension Responder {
    /// A responder that records metrics and logs through the service when it answers.
    struct Finishing: Sendable {
        let service: ListService
        let context: Context
        let responder: Responder

        func respond(_ response: Response) { service.finish(context, responder, response) }
        func fail(_ problem: Problem) { respond(problem.response()) }
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
}
