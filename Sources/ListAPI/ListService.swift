import HTTP
import ListStore
import Logging
import Server

/// The listd service: every route of the HTTP contract (docs/API.md) on top
/// of a ``Store``, as an ``HTTPHandler`` for the HTTP server.
///
/// This is the assembly, not the owner of the handlers: it builds the commit
/// pipeline (``CommitRouter``, ``SnapshotCache``), the change machinery
/// (``ChangeComputer``, ``ChangeHub``, ``EventHub``), the route groups (each
/// holding only what its handlers use), the route table, and the middleware
/// chain that every request and every answer passes (``RequestPipeline``).
public final class ListService: HTTPHandler {
    /// The service's metrics; `GET /metrics` renders them.
    public let metrics: ServiceMetrics
    /// The head cache, kept by the commit pipeline.
    let router: CommitRouter
    /// Computes and shares change answers.
    let computer: ChangeComputer
    private let hub: ChangeHub
    private let eventHub: EventHub
    private let pipeline: RequestPipeline
    private let commitSubscription: CommitSubscription

    /// Creates the service over `store`.
    public init(
        store: any Store, configuration: ServiceConfiguration = .init(), metrics: ServiceMetrics = ServiceMetrics(),
        logger: Logger
    ) {
        self.metrics = metrics
        // The commit pipeline: the router records every commit's head before
        // its writer is answered, and the snapshot cache hears the same commit
        // there (a deleted list's snapshot must not outlive its acknowledged deletion).
        let cache = SnapshotCache(capacityBytes: configuration.snapshotCacheBytes)
        let router = CommitRouter(onCommit: { commit in cache.committed(commit) })
        self.router = router
        let computer = ChangeComputer(store: store, router: router)
        self.computer = computer
        let hub = ChangeHub(router: router, computer: computer, metrics: metrics, tick: configuration.timeoutTick)
        self.hub = hub
        let eventHub = EventHub(
            router: router, computer: computer, metrics: metrics, heartbeat: configuration.eventHeartbeat)
        self.eventHub = eventHub

        let heads = HeadLookup(router: router, store: store)
        let lists = ListRepository(heads: heads, cache: cache)
        let decoder = RequestDecoder(
            maxBodyBytes: configuration.maxBodyBytes, models: ModelLimits(maxDepth: configuration.maxModelDepth))
        let groups: [any RouteGroup] = [
            MonitoringRoutes(metrics: metrics),
            ListRoutes(lists: lists, decoder: decoder, changes: computer),
            SectionRoutes(lists: lists, decoder: decoder),
            ItemRoutes(lists: lists, decoder: decoder),
            IndexRoutes(lists: lists, logger: logger),
            ChangeRoutes(
                heads: heads, hub: hub, computer: computer, decoder: decoder, metrics: metrics,
                defaultTimeout: configuration.defaultChangeTimeout, maxTimeout: configuration.maxChangeTimeout),
            EventRoutes(heads: heads, hub: eventHub),
            InspectorRoutes(),
        ]
        var table = RouteTable()
        for group in groups { group.register(in: &table) }
        // Outermost first: the log line and the count see the answer last,
        // with the CORS fields added and the problem rendered.
        self.pipeline = RequestPipeline(
            middleware: [
                RequestLogging(logger: logger),
                RequestMetrics(metrics: metrics),
                CORSMiddleware(policy: configuration.cors),
                AccessControl(policy: configuration.accessPolicy),
            ],
            routes: table)

        self.commitSubscription = router.connect(to: store)
        metrics.gauge("listd_parked_waiters") { [hub] in Double(hub.parkedCount) }
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

    public func handle(_ request: Request, responder: Responder) {
        pipeline.handle(request, responder: responder)
    }

    /// The server's own refusals (408, 413, 431, 503, …) as listd's problem+json,
    /// readable by a page of the configured origin where that needs no request.
    public func errorResponse(status: HTTPStatus, detail: String) -> Response {
        pipeline.refusal(status: status, detail: detail)
    }
}
