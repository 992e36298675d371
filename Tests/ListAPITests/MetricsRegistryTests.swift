import Testing
@testable import ListAPI

@Suite struct MetricsRegistryTests {
    @Test func countersRenderPerLabelSetWithEscaping() {
        let registry = MetricsRegistry()
        let requests = registry.counter("listd_requests_total", help: "Requests.", labels: ["route", "status"])
        requests.increment(["/lists", "200"])
        requests.increment(["/lists", "200"])
        requests.increment(["/a\"b\\c\nd", "404"], by: 3)
        let text = registry.render()
        #expect(text.contains("# TYPE listd_requests_total counter\n"))
        #expect(text.contains("listd_requests_total{route=\"/lists\",status=\"200\"} 2\n"))
        #expect(text.contains("listd_requests_total{route=\"/a\\\"b\\\\c\\nd\",status=\"404\"} 3\n"))
    }

    @Test func histogramsAreCumulativeWithSumAndCount() {
        let registry = MetricsRegistry()
        let latency = registry.histogram("listd_latency_seconds", help: "Latency.", buckets: [0.01, 0.1, 1])
        for value in [0.005, 0.05, 0.05, 5] { latency.observe(value) }
        let text = registry.render()
        #expect(text.contains("listd_latency_seconds_bucket{le=\"0.01\"} 1\n"))
        #expect(text.contains("listd_latency_seconds_bucket{le=\"0.1\"} 3\n"))
        #expect(text.contains("listd_latency_seconds_bucket{le=\"1\"} 3\n"))
        #expect(text.contains("listd_latency_seconds_bucket{le=\"+Inf\"} 4\n"))
        #expect(text.contains("listd_latency_seconds_sum 5.105\n"))
        #expect(text.contains("listd_latency_seconds_count 4\n"))
    }

    @Test func gaugesAreReadAtRenderTime() {
        let registry = MetricsRegistry()
        let box = Box()
        registry.gauge("listd_open_connections", help: "Open.") { Double(box.value) }
        box.value = 7
        #expect(registry.render().contains("listd_open_connections 7\n"))
        let unlabelled = registry.counter("listd_resets_total", help: "Resets.")
        #expect(unlabelled.value() == 0)
        #expect(registry.render().contains("listd_resets_total 0\n"))
    }

    final class Box: @unchecked Sendable {  // test-only; written before it is read, on one thread
        var value = 0
    }
}
