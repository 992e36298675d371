import HTTP
import ListModel
import ListStore
import ListWire
import Logging
import Server

// MARK: - Concurrency model of ListAPI
//
// Who runs what (docs/architecture.md has the whole path of a write):
//
// - Event loops (Server's `http-loop-N`, one per core) own the connections.
//   `ListService.handle` runs there: the ``RequestPipeline`` matches the route,
//   runs each ``Middleware``'s admission, and runs the route's synchronous part
//   (parameter checks, cache hits, parking a long-poll). Never blocks.
// - async/await begins in ``Exchange/task(_:)``: an `.async` route, and any
//   custom route that needs the store, runs in one unstructured `Task` on
//   Swift's cooperative pool, cancelled when its client leaves. Store calls
//   suspend it and run on the store's own threads (writer, readers, catch-up).
// - The store's committing thread calls ``CommitRouter/accept(_:)`` for every
//   commit, creates and deletes included, before the writer is answered: it
//   records the list's head (the head cache), calls `onCommit`
//   (``SnapshotCache/committed(_:)`` drops a deleted list), and queues the
//   commit. O(1); nothing else runs on the writer.
// - The fan-out queue (`listd.fan-out`, serial) hands commits to the
//   ``ChangeHub`` and the ``EventHub``: parked long-polls and event streams
//   whose answer is the commit's recorded change are answered right there,
//   one serialized body shared by all; what needs the store goes to one
//   `Task` per group of followers asking the same question.
// - Tickers (one `Task` each) expire parked long-polls and send heartbeats.
//   An event stream's next answer is asked for from its flush callback, on
//   its connection's event loop. ``CatchUpStager`` stages catch-up answers on
//   a thread of its own.
// - Shared state is behind `Mutex` or in `Atomic`s (Synchronization); no actors.
// - Every answer goes through ``Exchange``, so the middleware's
//   ``Middleware/answering(_:to:after:)`` runs on whichever of these threads
//   answers (event loop, task, fan-out queue, ticker). It must not block.

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
        // Kept views hear the same commits there too, and move forward by what they touched.
        let spans = RecentSpans(history: configuration.history)
        let router = CommitRouter(onCommit: { commit in
            cache.committed(commit)
            spans.record(commit)
        })
        self.router = router
        let computer = ChangeComputer(
            store: store, router: router, viewMemory: configuration.viewMemory, spans: spans)
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
        table.idempotency = IdempotencyKeys(store: store)
        for group in groups { group.register(in: &table) }
        // Outermost first: the log line and the count see the answer last,
        // with the CORS fields added and the problem rendered.
        self.pipeline = RequestPipeline(
            middleware: [
                RequestLogging(logger: logger),
                RequestMetrics(metrics: metrics),
                CORSMiddleware(policy: configuration.cors),
                BrowserGuard(
                    hosts: configuration.hosts, cors: configuration.cors,
                    authenticated: configuration.accessPolicy.requiresAuthentication),
                AccessControl(policy: configuration.accessPolicy),
            ],
            routes: table, limits: CallerLimits(maximum: configuration.maxWaitsPerCaller))

        self.commitSubscription = router.connect(to: store)
        metrics.gauge("listd_parked_waiters") { [hub] in Double(hub.parkedCount) }
        metrics.gauge("listd_event_streams") { [eventHub] in Double(eventHub.streamCount) }
        metrics.gauge("listd_views_kept") { [computer] in Double(computer.views.usage.views) }
        metrics.gauge("listd_views_kept_bytes") { [computer] in Double(computer.views.usage.bytes) }
        metrics.counterFunction("listd_views_built_total") { [computer] in Double(computer.views.builds) }
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

    public func admit(_ head: RequestHead, remoteAddress: String) -> HeadDecision {
        pipeline.admit(head, remoteAddress: remoteAddress)
    }

    public func handle(_ request: Request, responder: Responder) {
        pipeline.handle(request, responder: responder)
    }

    /// The server's own refusals (408, 413, 431, 503, …) as listd's problem+json,
    /// readable by a page of the configured origin where that needs no request.
    public func errorResponse(status: HTTPStatus, detail: String) -> Response {
        pipeline.refusal(status: status, detail: detail)
    }
}
