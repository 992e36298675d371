import HTTP

/// The bearer tokens (``AccessPolicy``): a route that needs `read` or `write`
/// is refused 401 without a valid token and 403 with a read token where it
/// writes. Routes open to everyone (`/healthz`, the inspector's files) and
/// requests no route matched (404 and 405 come first) are not checked.
struct AccessControl: Middleware {
    let policy: AccessPolicy

    func admit(_ context: inout Context) -> Admission {
        guard let access = context.access else { return .proceed }
        switch policy.decide(authorization: context.request.header("Authorization"), access: access) {
        case .allowed: return .proceed
        case .unauthenticated(let reason): return .refuse(.unauthorized(reason))
        case .forbidden(let reason): return .refuse(.forbidden(reason))
        }
    }
}
