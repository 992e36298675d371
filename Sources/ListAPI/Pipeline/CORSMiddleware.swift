import HTTP

/// CORS (`--cors-origin`): answers preflight `OPTIONS` requests and adds the
/// CORS fields to every other answer, event streams and parked long-polls
/// included. With no origin configured it does nothing (and `OPTIONS` reaches
/// the router, which answers 405).
struct CORSMiddleware: Middleware {
    let policy: CORSPolicy

    /// The route label of a preflight, in metrics and logs.
    static let preflightRoute = "preflight"

    func admit(_ context: inout Context) -> Admission {
        guard policy.isEnabled, context.request.method == .options else { return .proceed }
        context.route = Self.preflightRoute
        context.access = nil
        let origin = context.request.header("Origin")
        if let response = policy.preflight(origin: origin) { return .answer(response) }
        return .refuse(
            Problem(
                slug: "origin-not-allowed", title: "The origin is not allowed", status: 403,
                detail: origin.map { "origin \($0.prefix(200)) is not one of listd's --cors-origin values" }
                    ?? "OPTIONS is answered only as a CORS preflight, with an Origin header"))
    }

    func answering(_ response: inout Response, to context: Context, after elapsed: Duration) {
        // A preflight's answer carries its own fields (or, refused, none).
        guard policy.isEnabled, context.route != Self.preflightRoute else { return }
        policy.addHeaders(to: &response.headers, origin: context.request.header("Origin"))
    }

    func refusing(_ response: inout Response) {
        policy.addHeadersWithoutRequest(to: &response.headers)
    }
}
