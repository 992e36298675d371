import HTTP

/// `GET /`, `GET /ui`, `GET /ui/` (the page) and `GET /ui/{file}`: the
/// inspector's files, compiled into the binary. Needs nothing but them.
///
/// The page holds no data (it asks for lists with the token the user
/// types), so it is served without a token, like `/healthz`. Its content
/// security policy allows nothing but this origin.
struct InspectorRoutes: RouteGroup {
    func register(in table: inout RouteTable) {
        table.add(.get, "/", nil, .sync { context in try inspectorFile(context, name: "index.html") })
        table.add(.get, "/ui", nil, .sync { context in try inspectorFile(context, name: "index.html") })
        table.add(.get, "/ui/", nil, .sync { context in try inspectorFile(context, name: "index.html") })
        table.add(.get, "/ui/{file}", nil, .sync { context in try inspectorFile(context) })
    }

    func inspectorFile(_ context: Context, name: String? = nil) throws(Problem) -> Response {
        let name = name ?? context.request.pathParameters["file"] ?? ""
        guard let file = InspectorAssets.files[name] else {
            throw Problem(
                slug: "not-found", title: "No such file", status: 404,
                detail:
                    "the inspector has no file \"\(name.prefix(80))\"; it serves \(InspectorAssets.files.keys.sorted().joined(separator: ", "))"
            )
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: file.contentType)
        headers.add(name: "Cache-Control", value: "no-cache")
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(
            name: "Content-Security-Policy",
            value: "default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
        return Response(status: .ok, headers: headers, body: Array(file.text.utf8))
    }
}
