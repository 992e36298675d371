import CoreMetrics
import ListModel
import ListStore
import MetricsTestKit
import Synchronization
import Testing

@testable import ListAPI

/// ServiceMetrics records through swift-metrics, so any backend sees it;
/// swift-metrics' own test backend checks what reaches a backend.
@Suite struct ServiceMetricsTests {
    @Test func requestsAreCountedPerRouteMethodAndStatusAndTimedPerRoute() throws {
        let backend = TestMetrics()
        let metrics = ServiceMetrics(factory: backend)
        metrics.request(route: "/lists", method: "GET", status: 200, duration: .milliseconds(3))
        metrics.request(route: "/lists", method: "GET", status: 200, duration: .milliseconds(5))
        metrics.request(route: "/lists", method: "POST", status: 201, duration: .microseconds(700))
        let gets = try backend.expectCounter(
            "listd_http_requests_total", [("route", "/lists"), ("method", "GET"), ("status", "200")])
        #expect(gets.totalValue == 2)
        let posts = try backend.expectCounter(
            "listd_http_requests_total", [("route", "/lists"), ("method", "POST"), ("status", "201")])
        #expect(posts.totalValue == 1)
        let timer = try backend.expectTimer("listd_http_request_duration_seconds", [("route", "/lists")])
        #expect(timer.values == [3_000_000, 5_000_000, 700_000])
    }

    @Test func changeAnswersCountResetsAndLag() throws {
        let backend = TestMetrics()
        let metrics = ServiceMetrics(factory: backend)
        let list: Identifier = "a"
        metrics.served(
            EncodedChangeAnswer(list: list, epoch: "e", from: 3, to: 7, reset: false, stageCount: 1, json: []))
        metrics.served(
            EncodedChangeAnswer(list: list, epoch: "e", from: 7, to: 7, reset: true, stageCount: 0, json: []))
        #expect(try backend.expectCounter("listd_change_answers_total").totalValue == 2)
        #expect(try backend.expectCounter("listd_change_resets_total").totalValue == 1)
        #expect(try backend.expectRecorder("listd_change_version_lag").values == [4, 0])
        metrics.groupCommit(writes: 12)
        #expect(try backend.expectRecorder("listd_store_group_commit_writes").values == [12])
    }

    @Test func gaugesAndCounterFunctionsAreSampledBeforeAnExposition() throws {
        let backend = TestMetrics()
        let metrics = ServiceMetrics(factory: backend)
        let open = Atomic<Int>(0)
        let writes = Atomic<Int>(0)
        metrics.gauge("listd_open_connections") { Double(open.load(ordering: .relaxed)) }
        metrics.counterFunction("listd_store_writes_total") { Double(writes.load(ordering: .relaxed)) }
        open.store(7, ordering: .relaxed)
        writes.store(10, ordering: .relaxed)
        metrics.sample()
        #expect(try backend.expectGauge("listd_open_connections").lastValue == 7)
        #expect(try backend.expectCounter("listd_store_writes_total").totalValue == 10)
        // A counter function reports only what it grew by since the last sample.
        open.store(2, ordering: .relaxed)
        writes.store(15, ordering: .relaxed)
        metrics.sample()
        #expect(try backend.expectGauge("listd_open_connections").lastValue == 2)
        #expect(try backend.expectCounter("listd_store_writes_total").totalValue == 15)
    }

    @Test func everyFamilyIsNamedAfterItsKey() {
        for (name, family) in ServiceMetrics.families {
            #expect(family.name == name)
            #expect(!family.help.isEmpty)
            if let buckets = family.buckets { #expect(buckets == buckets.sorted() && !buckets.isEmpty) }
        }
    }
}
