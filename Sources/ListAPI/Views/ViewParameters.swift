import HTTP
import ListView

extension Context {
    /// The view a request names with `where`, `q`, `order`, `group` and
    /// `limit` (docs/API.md, "Views"), or `nil` when it names none: the whole list.
    ///
    /// A route that serves views takes no query parameter it does not know,
    /// so a mistyped one (`grup=status`) is a 400 that names it rather than a
    /// silently different answer: any name other than the view's, `pretty`
    /// and the route's own `others` is refused.
    /// - Throws: `invalid-parameter` naming the parameter at fault.
    func view(allowing others: [String]) throws(Problem) -> ViewSpec? {
        let items = request.queryItems
        for item in items
        where !ViewSpec.isViewParameter(item.name) && item.name != "pretty" && !others.contains(item.name) {
            let known = (others + ["where", "q", "order", "group", "limit", "pretty"]).joined(separator: ", ")
            throw .invalidParameter("unknown query parameter \"\(item.name.prefix(60))\"; this route takes \(known)")
        }
        let spec: ViewSpec
        do {
            spec = try ViewSpec(queryItems: items.lazy.map { (name: $0.name, value: $0.value) })
        } catch {
            throw .invalidParameter(error.detail)
        }
        return try caller.forcing(spec.isWholeList ? nil : spec)
    }
}

extension Caller {
    /// `client`'s view narrowed by the view this caller's token forces
    /// (docs/API.md, "Auth"), or `client` itself when it forces none.
    /// - Throws: 403 `forbidden` naming the parameter that would widen the
    ///   forced view.
    func forcing(_ client: ViewSpec?) throws(Problem) -> ViewSpec? {
        guard let view else { return client }
        switch view.narrowed(by: client ?? .wholeList) {
        case .success(let narrowed): return narrowed
        case .failure(let refusal):
            throw .forbidden("this token's view is forced (\(view.canonicalQuery)); \(refusal.reason)")
        }
    }
}
