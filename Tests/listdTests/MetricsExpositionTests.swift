import Foundation
import Testing

/// `/metrics` through swift-metrics and swift-prometheus serves the families
/// dashboards scraped before: same names, same types, same label names and
/// histogram buckets.
@Suite struct MetricsExpositionTests {
    /// The families and types `/metrics` served with the hand-written registry
    /// (captured from that build), which scrapers depend on.
    static let families: [String: String] = [
        "listd_http_requests_total": "counter",
        "listd_http_request_duration_seconds": "histogram",
        "listd_change_answers_total": "counter",
        "listd_change_resets_total": "counter",
        "listd_change_version_lag": "histogram",
        "listd_store_group_commit_writes": "histogram",
        "listd_parked_waiters": "gauge",
        "listd_open_connections": "gauge",
        "listd_store_writes_total": "counter",
        "listd_store_commits_total": "counter",
        // Added with server-sent events.
        "listd_event_streams": "gauge",
        "listd_event_stream_events_total": "counter",
        "listd_event_stream_coalesced_total": "counter",
        "listd_event_stream_heartbeats_total": "counter",
        // Added with live views.
        "listd_views_kept": "gauge",
        "listd_views_kept_bytes": "gauge",
        "listd_views_built_total": "counter",
    ]

    @Test func theScrapedFamiliesAreTheOnesDashboardsKnow() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        #expect(try await server.request("POST", "/lists", body: #"{"id":"m"}"#).status == 201)
        #expect(try await server.get("/lists/m/changes?since=0").status == 200)
        let reply = try await server.get("/metrics")
        #expect(reply.status == 200)
        #expect(reply.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
        let lines = String(decoding: reply.body, as: UTF8.self).split(separator: "\n").map(String.init)

        var types: [String: String] = [:]
        var helped: Set<String> = []
        for line in lines {
            let words = line.split(separator: " ", maxSplits: 3).map(String.init)
            if words.count == 4, words[0] == "#", words[1] == "TYPE" { types[words[2]] = words[3] }
            if words.count >= 4, words[0] == "#", words[1] == "HELP" { helped.insert(words[2]) }
        }
        #expect(types == Self.families)
        #expect(helped == Set(Self.families.keys))

        // Label names and order as before, and the values the requests above left.
        #expect(lines.contains(#"listd_http_requests_total{route="/lists",method="POST",status="201"} 1"#))
        #expect(
            lines.contains(#"listd_http_requests_total{route="/lists/{list}/changes",method="GET",status="200"} 1"#))
        #expect(lines.contains("listd_change_answers_total 1"))
        #expect(lines.contains { $0.hasPrefix("listd_parked_waiters ") && Double($0.dropFirst(21)) == 0 })
        let writes = lines.first { $0.hasPrefix("listd_store_writes_total ") }
        #expect(writes.flatMap { Double($0.split(separator: " ")[1]) }.map { $0 >= 1 } == true)

        // The request-duration buckets, compared as numbers ("1" and "1.0" are one bound).
        let prefix = #"listd_http_request_duration_seconds_bucket{route="/lists",le=""#
        let bounds = lines.filter { $0.hasPrefix(prefix) }.compactMap { line -> String? in
            line.dropFirst(prefix.count).split(separator: "\"").first.map(String.init)
        }
        let expected: [Double] = [
            0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300,
        ]
        #expect(bounds.dropLast().compactMap(Double.init) == expected)
        #expect(bounds.last == "+Inf")
        #expect(lines.contains(#"listd_http_request_duration_seconds_count{route="/lists"} 1"#))
    }
}
