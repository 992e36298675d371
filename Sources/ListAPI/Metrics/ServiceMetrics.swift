import CoreMetrics
import Synchronization

/// listd's metrics, recorded through swift-metrics.
///
/// Every metric goes to the `MetricsFactory` given at creation (by default
/// the one bootstrapped in `MetricsSystem`), so an operator can plug in any
/// swift-metrics backend; `listd serve` bootstraps swift-prometheus and hands
/// the service its ``MetricsExposition`` for `GET /metrics`.
///
/// Values that belong to other components (open connections, parked
/// requests, store counts) are registered with ``gauge(_:value:)`` and
/// ``counterFunction(_:value:)`` and sampled into their metric just before
/// each exposition, as a Prometheus collector does.
public final class ServiceMetrics: Sendable {
    /// One of listd's metric families: what a backend needs beyond its name.
    public struct Family: Sendable {
        /// The metric's name, which is also its swift-metrics label.
        public var name: String
        /// One line saying what it counts (Prometheus' `# HELP`).
        public var help: String
        /// Upper bounds of a histogram's buckets, in its unit (seconds for durations).
        public var buckets: [Double]?
    }

    /// Every metric listd records, by name. Names and buckets are what
    /// dashboards scrape: change them only as a breaking change.
    public static let families: [String: Family] = Dictionary(
        uniqueKeysWithValues: [
            Family(
                name: "listd_http_requests_total", help: "HTTP requests answered, by route, method and status."),
            Family(
                name: "listd_http_request_duration_seconds",
                help:
                    "Time from a request's arrival at the service to its answer, by route (long-polls include their wait).",
                buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]),
            Family(
                name: "listd_change_answers_total",
                help: "Change-stream answers served (stages or reset), per list answered."),
            Family(
                name: "listd_change_resets_total",
                help: "Change-stream answers that were resets carrying the whole snapshot."),
            Family(
                name: "listd_change_version_lag", help: "Versions between a change answer's from and to.",
                buckets: [0, 1, 2, 5, 10, 100, 1000, 10_000, 100_000]),
            Family(
                name: "listd_store_group_commit_writes",
                help: "Writes made durable together by one commit (one fsync).",
                buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]),
            Family(name: "listd_parked_waiters", help: "Long-polls parked in the change hub."),
            Family(name: "listd_open_connections", help: "Open HTTP connections."),
            Family(name: "listd_store_writes_total", help: "Writes committed since start."),
            Family(name: "listd_store_commits_total", help: "Group commits (transactions, fsyncs) since start."),
            Family(name: "listd_event_streams", help: "Open server-sent-event streams."),
            Family(name: "listd_views_kept", help: "Views kept in memory between answers (--view-memory)."),
            Family(name: "listd_views_kept_bytes", help: "Roughly the bytes the kept views hold."),
            Family(
                name: "listd_views_built_total",
                help: "Views built from their list's rows since start (first use, or dropped)."
            ),
            Family(name: "listd_event_stream_events_total", help: "Events written to event streams."),
            Family(
                name: "listd_event_stream_coalesced_total",
                help: "Changes that found their event stream still writing and went into its next net answer."),
            Family(name: "listd_event_stream_heartbeats_total", help: "Heartbeat comments written."),
        ].map { ($0.name, $0) })

    private struct RequestKey: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    /// A value kept elsewhere, copied into its metric before each exposition.
    private struct Sampled: Sendable {
        var read: @Sendable () -> Double
        var gauge: Gauge?
        var counter: Counter?
        /// What the counter has been given so far.
        var reported: Int64 = 0
    }

    private let factory: any MetricsFactory
    /// How `GET /metrics` renders, if a backend that can render was bootstrapped.
    public let exposition: MetricsExposition?
    private let requests = Mutex<[RequestKey: Counter]>([:])
    private let latencies = Mutex<[String: Timer]>([:])
    private let answers: Counter
    private let resets: Counter
    private let versionLag: Recorder
    private let groupCommitWrites: Recorder
    private let sampled = Mutex<[Sampled]>([])

    /// Creates listd's metrics on `factory`; `exposition` renders them for `GET /metrics`.
    public init(factory: any MetricsFactory = MetricsSystem.factory, exposition: MetricsExposition? = nil) {
        self.factory = factory
        self.exposition = exposition
        answers = Counter(label: "listd_change_answers_total", factory: factory)
        resets = Counter(label: "listd_change_resets_total", factory: factory)
        versionLag = Recorder(label: "listd_change_version_lag", factory: factory)
        groupCommitWrites = Recorder(label: "listd_store_group_commit_writes", factory: factory)
    }

    /// Registers a gauge named `name` (one of ``families``) whose value is
    /// read just before each exposition.
    public func gauge(_ name: String, value: @escaping @Sendable () -> Double) {
        precondition(Self.families[name] != nil, "\(name) is not in ServiceMetrics.families")
        let gauge = Gauge(label: name, factory: factory)
        sampled.withLock { $0.append(Sampled(read: value, gauge: gauge)) }
    }

    /// Registers a counter named `name` (one of ``families``) kept elsewhere
    /// as a running whole-number total; it is brought up to `value()` before
    /// each exposition.
    public func counterFunction(_ name: String, value: @escaping @Sendable () -> Double) {
        precondition(Self.families[name] != nil, "\(name) is not in ServiceMetrics.families")
        let counter = Counter(label: name, factory: factory)
        sampled.withLock { $0.append(Sampled(read: value, counter: counter)) }
    }

    /// Records how many writes one commit made durable (fed by the store).
    public func groupCommit(writes: Int) {
        groupCommitWrites.record(writes)
    }

    /// Records one answered request.
    func request(route: String, method: String, status: Int, duration: Duration) {
        let key = RequestKey(route: route, method: method, status: status)
        let counter = requests.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = Counter(
                label: "listd_http_requests_total",
                dimensions: [("route", route), ("method", method), ("status", String(status))], factory: factory)
            counters[key] = counter
            return counter
        }
        counter.increment()
        let timer = latencies.withLock { timers in
            if let timer = timers[route] { return timer }
            let timer = Timer(
                label: "listd_http_request_duration_seconds", dimensions: [("route", route)], factory: factory)
            timers[route] = timer
            return timer
        }
        let (seconds, attoseconds) = duration.components
        timer.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// Records one change answer served to one client.
    func served(_ answer: EncodedChangeAnswer) {
        answers.increment()
        if answer.reset { resets.increment() }
        versionLag.record(max(0, answer.to - answer.from))
    }

    /// Copies every registered gauge and counter function into its metric.
    public func sample() {
        // Read outside the lock: the readers belong to other components.
        let current = sampled.withLock { $0 }
        let values = current.map { $0.read() }
        sampled.withLock { entries in
            for index in entries.indices where index < values.count {
                let value = values[index]
                entries[index].gauge?.record(value)
                let total = Int64(exactly: value.rounded(.down)) ?? entries[index].reported
                if let counter = entries[index].counter, total > entries[index].reported {
                    counter.increment(by: total - entries[index].reported)
                    entries[index].reported = total
                }
            }
        }
    }
}

/// How a metrics backend renders for `GET /metrics`.
public struct MetricsExposition: Sendable {
    /// The response's `Content-Type`.
    public var contentType: String
    /// The whole exposition, rendered now.
    public var render: @Sendable () -> [UInt8]

    /// Creates an exposition.
    public init(contentType: String, render: @escaping @Sendable () -> [UInt8]) {
        self.contentType = contentType
        self.render = render
    }
}
