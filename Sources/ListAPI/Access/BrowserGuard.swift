import HTTP

/// What keeps web pages out of a listd they should not reach (docs/API.md,
/// "Browsers and the open loopback default"):
/// - **DNS rebinding.** Without any token, only requests whose `Host` is a
///   loopback name or address, the address listd is bound to, or a
///   `--public-host` name are answered; a page on `rebind.evil.example`
///   that resolves to 127.0.0.1 gets 403. Routes that hold no data
///   (`/healthz`, the inspector's files) answer any `Host`.
/// - **Cross-site writes.** A write (a route that needs `write` or `admin`)
///   carrying an `Origin` that is neither the server's own (`Host`'s) nor a
///   `--cors-origin` gets 403, whatever its content type, so no page can post
///   a form or `text/plain` to a local listd. curl sends no `Origin` and is
///   not affected.
struct BrowserGuard: Middleware {
    let hosts: HostAllowList
    let cors: CORSPolicy
    /// Whether tokens are required: then `Host` is not checked (a rebinding
    /// page has no token), only `Origin`.
    let authenticated: Bool

    func admit(_ context: inout Context) -> Admission {
        // Routes that hold no data (`/healthz`, the inspector's files) answer any
        // Host: a probe may name the machine by any address.
        if !authenticated, context.access != nil, let host = context.request.header("Host"), !hosts.allows(host) {
            return .refuse(
                Problem(
                    slug: "host-not-allowed", title: "The Host is not allowed", status: 403,
                    detail:
                        "Host \"\(host.prefix(200))\" is not a loopback name or address; listd without a token answers only those "
                        + "(start it with --public-host NAME to answer another name)"))
        }
        if context.access == .write || context.access == .admin, let origin = context.request.header("Origin"),
            !Self.isSameOrigin(origin, host: context.request.header("Host")), cors.allowedOrigin(origin) == nil
        {
            return .refuse(
                Problem(
                    slug: "origin-not-allowed", title: "The origin is not allowed", status: 403,
                    detail:
                        "a write from origin \(origin.prefix(200)) is refused: it is neither this server's own origin nor one of its --cors-origin values"
                ))
        }
        return .proceed
    }

    /// Whether `origin` (`scheme://host[:port]`) is the origin of a page this
    /// server served under `host` (the request's `Host`).
    static func isSameOrigin(_ origin: String, host: String?) -> Bool {
        guard let host, !host.isEmpty else { return false }
        let lowered = origin.lowercased()
        let target = host.lowercased()
        return lowered == "http://" + target || lowered == "https://" + target
    }
}

/// The `Host` names an open (tokenless) listd answers: loopback names and
/// addresses, the address it is bound to, and the `--public-host` names.
public struct HostAllowList: Sendable {
    private let names: Set<String>

    /// Creates the list; `boundHost` is the address listd listens on
    /// (wildcards such as `0.0.0.0` add nothing), `publicHosts` the names an
    /// operator allowed.
    public init(boundHost: String? = nil, publicHosts: [String] = []) {
        var names: Set<String> = ["localhost", "::1"]
        if let boundHost, boundHost != "0.0.0.0", boundHost != "::" { names.insert(boundHost.lowercased()) }
        for name in publicHosts { names.insert(name.lowercased()) }
        self.names = names
    }

    /// Whether a `Host` field's value (`name[:port]`, `[v6]:port`) names this server.
    public func allows(_ field: String) -> Bool {
        let host = Self.hostname(field).lowercased()
        if names.contains(host) { return true }
        if host.hasSuffix(".localhost") { return true }
        return Self.isLoopbackIPv4(host)
    }

    /// The name or address of a `Host` value, without its port or brackets.
    static func hostname(_ field: String) -> Substring {
        if field.hasPrefix("[") {
            guard let end = field.firstIndex(of: "]") else { return field[...] }
            return field[field.index(after: field.startIndex)..<end]
        }
        if let colon = field.firstIndex(of: ":") { return field[..<colon] }
        return field[...]
    }

    /// `127.0.0.0/8` written as four decimal numbers.
    static func isLoopbackIPv4(_ host: String) -> Bool {
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "127" else { return false }
        return parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCII) && UInt8(part) != nil
        }
    }
}
