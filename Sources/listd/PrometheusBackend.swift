import CoreMetrics
import ListAPI
import Prometheus

/// swift-metrics' backend for `listd serve`: a swift-prometheus registry that
/// `GET /metrics` renders, with the `# HELP` lines and histogram buckets of
/// ``ServiceMetrics/families``.
///
/// Why not swift-prometheus' own `PrometheusMetricsFactory`: it registers
/// every metric with an empty help text and one bucket list per kind, and the
/// registry refuses the same name with two help texts; this factory looks up
/// each name's help and buckets instead. Names it does not know (from other
/// libraries) get no help and the default buckets.
struct PrometheusBackend: MetricsFactory {
    let registry: PrometheusCollectorRegistry
    let families: [String: ServiceMetrics.Family]

    init(
        registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
        families: [String: ServiceMetrics.Family] = ServiceMetrics.families
    ) {
        self.registry = registry
        self.families = families
    }

    /// `/metrics` in Prometheus text format (version 0.0.4).
    var exposition: MetricsExposition {
        MetricsExposition(contentType: "text/plain; version=0.0.4; charset=utf-8") { [registry] in
            registry.emitToBuffer()
        }
    }

    private static let defaultBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// The name exactly as given, with its family's help text if it has one.
    private func descriptor(_ label: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: label, unitName: "", helpText: families[label]?.help ?? "")
    }
    private func buckets(_ label: String) -> [Double] { families[label]?.buckets ?? Self.defaultBuckets }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: descriptor(label), labels: dimensions) }
        return registry.makeValueHistogram(descriptor: descriptor(label), labels: dimensions, buckets: buckets(label))
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: descriptor(label), labels: dimensions)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        let bounds = buckets(label).map { Duration.nanoseconds(Int64(($0 * 1e9).rounded())) }
        return registry.makeDurationHistogram(descriptor: descriptor(label), labels: dimensions, buckets: bounds)
    }

    func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyRecorder(_ handler: any RecorderHandler) {
        if let gauge = handler as? Prometheus.Gauge {
            registry.unregisterGauge(gauge)
        } else if let histogram = handler as? ValueHistogram {
            registry.unregisterValueHistogram(histogram)
        }
    }

    func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? DurationHistogram { registry.unregisterDurationHistogram(histogram) }
    }
}
