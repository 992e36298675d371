/// listd's metrics, as served at `GET /metrics`.
///
/// Gauges that belong to other components (open connections, parked
/// requests, store commits) are registered by whoever assembles the service,
/// with ``gauge(_:help:value:)``.
public final class ServiceMetrics: Sendable {
    /// The registry everything is rendered from.
    public let registry = MetricsRegistry()

    let requests: Counter
    let latency: Histogram
    let answers: Counter
    let resets: Counter
    let versionLag: Histogram
    /// Writes made durable by one commit (one fsync), fed by the store.
    public let groupCommitSize: Histogram

    /// Creates the registry and listd's own families.
    public init() {
        requests = registry.counter(
            "listd_http_requests_total", help: "HTTP requests answered, by route, method and status.",
            labels: ["route", "method", "status"])
        latency = registry.histogram(
            "listd_http_request_duration_seconds",
            help: "Time from a request's arrival at the service to its answer, by route (long-polls include their wait).",
            labels: ["route"],
            buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300])
        answers = registry.counter(
            "listd_change_answers_total", help: "Change-stream answers served (stages or reset), per list answered.")
        resets = registry.counter(
            "listd_change_resets_total", help: "Change-stream answers that were resets carrying the whole snapshot.")
        versionLag = registry.histogram(
            "listd_change_version_lag", help: "Versions between a change answer's from and to.",
            buckets: [0, 1, 2, 5, 10, 100, 1000, 10_000, 100_000])
        groupCommitSize = registry.histogram(
            "listd_store_group_commit_writes", help: "Writes made durable together by one commit (one fsync).",
            buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
    }

    /// Registers a gauge read when the metrics are rendered.
    public func gauge(_ name: String, help: String, value: @escaping @Sendable () -> Double) {
        registry.gauge(name, help: help, value: value)
    }

    /// Registers a counter kept elsewhere, read when the metrics are rendered.
    public func counterFunction(_ name: String, help: String, value: @escaping @Sendable () -> Double) {
        registry.counterFunction(name, help: help, value: value)
    }

    /// Records one answered request.
    func request(route: String, method: String, status: Int, seconds: Double) {
        requests.increment([route, method, String(status)])
        latency.observe(seconds, [route])
    }

    /// Records one change answer served to one client.
    func served(_ answer: ChangeAnswer) {
        answers.increment()
        if answer.reset { resets.increment() }
        versionLag.observe(Double(max(0, answer.to - answer.from)))
    }

    /// The metrics in Prometheus text format.
    public func render() -> String { registry.render() }
}
