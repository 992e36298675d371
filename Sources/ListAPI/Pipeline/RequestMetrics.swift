import HTTP

/// Counts every answer by route, method and status, and times it from the
/// request's arrival (a long-poll's wait included; an event stream's until
/// its head is sent): `listd_http_requests_total`,
/// `listd_http_request_duration_seconds`.
struct RequestMetrics: Middleware {
    let metrics: ServiceMetrics

    func answering(_ response: inout Response, to context: Context, after elapsed: Duration) {
        metrics.request(
            route: context.route, method: context.request.method.rawValue, status: response.status.code,
            duration: elapsed)
    }
}
