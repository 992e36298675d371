import HTTP
import JSON

/// `GET /healthz` and `GET /metrics`: what probes and scrapers ask. Holds the
/// service's metrics, nothing else.
struct MonitoringRoutes: RouteGroup {
    let metrics: ServiceMetrics

    func register(in table: inout RouteTable) {
        table.add(.get, "/healthz", nil, .sync { context in health(context) })
        table.add(.get, "/metrics", .metrics, .sync { context in try metricsText(context) })
    }

    /// `GET /healthz`: liveness. Open to everyone, so probes need no token.
    func health(_ context: Context) -> Response {
        context.json { writer in
            writer.beginObject()
            writer.key("status")
            writer.string("ok")
            writer.endObject()
        }
    }

    /// `GET /metrics`: the exposition of the metrics backend listd was given
    /// (Prometheus text format under `listd serve`).
    func metricsText(_ context: Context) throws(Problem) -> Response {
        guard let exposition = metrics.exposition else {
            throw Problem.noRoute(context.request.method, context.request.path)
        }
        metrics.sample()
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: exposition.contentType)
        return Response(status: .ok, headers: headers, body: exposition.render())
    }
}
