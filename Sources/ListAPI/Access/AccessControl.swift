import HTTP
import ListModel
import ListStore

/// The token check (``AccessPolicy``), made on the request's head: a route
/// that needs `read`, `write` or `admin` is refused 401 without a valid
/// token and 403 with one that may not do it. The caller it settles on goes
/// into the context for the routes, which answer by its scope:
/// - a list outside the token's `lists` is 404, as if it did not exist
///   (checked here for every route with a `{list}` in its path);
/// - a token with a `view` may read only what views can serve (snapshots,
///   item queries, changes, events, the lists) and may not write (403).
///
/// Routes open to everyone (`/healthz`, the inspector's files) and requests
/// no route matched (404 and 405 come first) are not checked.
struct AccessControl: Middleware {
    let policy: AccessPolicy

    /// Routes a token with a forced view may call: those that apply a view.
    static let viewRoutes: Set<String> = [
        "/lists", "/lists/{list}", "/lists/{list}/items", "/lists/{list}/changes", "/changes",
        "/lists/{list}/events", "/events",
    ]

    func admit(_ context: inout Context) -> Admission {
        guard let access = context.access else { return .proceed }
        let caller: Caller
        switch policy.decide(
            authorization: context.request.header("Authorization"), access: access,
            address: context.request.remoteAddress)
        {
        case .allowed(let allowed): caller = allowed
        case .unauthenticated(let reason): return .refuse(.unauthorized(reason))
        case .forbidden(let reason): return .refuse(.forbidden(reason))
        }
        if let scope = caller.lists, let list = context.request.pathParameters["list"], !scope.contains(text: list) {
            return .refuse(Problem(StoreError(.listNotFound, "list \"\(list.prefix(128))\" not found")))
        }
        if caller.view != nil {
            if access != .read && access != .metrics {
                return .refuse(.forbidden("a token with a view may only read"))
            }
            if access == .read, !Self.viewRoutes.contains(context.route) {
                return .refuse(
                    .forbidden(
                        "a token with a view reads through its view only: snapshots, item queries, changes and events, not \(context.route)"
                    ))
            }
        }
        context.caller = caller
        return .proceed
    }
}
