/// Maps a method and a path to a handler, with `{name}` parameters in path patterns.
///
/// Patterns are split into `/`-separated segments, each either literal (`lists`) or a
/// parameter (`{list}`) that matches one non-empty segment. When several patterns match a
/// path, the one with a literal segment where another has a parameter wins, first difference
/// deciding, so `/lists/new` beats `/lists/{list}`.
///
/// Paths are matched raw, segment by segment, before any percent-decoding, so an encoded
/// slash (`%2F`) can never change which route matches: it is data inside one segment, and
/// decodes to `/` in the parameter's value. A parameter with a malformed escape (`%zz`) or
/// that does not decode to valid UTF-8 matches no route (``RouteMatch/notFound``), as does
/// any path not starting with `/`. A literal segment matches a raw segment containing escapes
/// only if that segment decodes to the literal.
///
/// HEAD requests match GET routes when no HEAD route exists; the server sends GET's head
/// without the body.
///
/// - Complexity: ``match(method:path:)`` is O(routes × segments); listd has a handful of routes.
public struct Router<Handler: Sendable>: Sendable {
    private enum Segment: Sendable, Equatable {
        case literal([UInt8])
        case parameter(String)
    }

    private struct Route: Sendable {
        var method: HTTPMethod
        var pattern: String
        var segments: [Segment]
        var handler: Handler
    }

    private var routes: [Route] = []

    /// Creates a router with no routes.
    public init() {}

    /// Adds a route. `pattern` starts with `/`; a segment `{name}` is a parameter.
    ///
    /// Registering the same method and pattern twice, or a malformed pattern, is a programming
    /// error and traps.
    public mutating func add(_ method: HTTPMethod, _ pattern: String, _ handler: Handler) {
        precondition(pattern.hasPrefix("/"), "route pattern \(pattern) must start with /")
        let segments = pattern.utf8.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
            .map { raw -> Segment in
                if raw.first == UInt8(ascii: "{") {
                    precondition(raw.count > 2 && raw.last == UInt8(ascii: "}"), "malformed parameter in \(pattern)")
                    return .parameter(String(decoding: raw.dropFirst().dropLast(), as: UTF8.self))
                }
                precondition(!raw.contains(UInt8(ascii: "{")), "malformed parameter in \(pattern)")
                return .literal(Array(raw))
            }
        precondition(
            !routes.contains { $0.method == method && $0.segments == segments },
            "route \(method) \(pattern) registered twice")
        routes.append(Route(method: method, pattern: pattern, segments: segments, handler: handler))
    }

    /// The handler for `method` and a raw (percent-encoded) `path`, with decoded parameters;
    /// or why there is none.
    public func match(method: HTTPMethod, path: String) -> RouteMatch<Handler> {
        var path = path
        return path.withUTF8 { bytes in match(method: method, path: UnsafeRawBufferPointer(bytes)) }
    }

    private func match(method: HTTPMethod, path: UnsafeRawBufferPointer) -> RouteMatch<Handler> {
        guard path.first == UInt8(ascii: "/") else { return .notFound }
        let rawSegments = path.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)

        var best: (route: Route, parameters: [String: String])?
        var bestGet: (route: Route, parameters: [String: String])?
        var allowed: [HTTPMethod] = []
        for route in routes {
            guard let parameters = Router.parameters(of: route.segments, in: rawSegments) else { continue }
            if !allowed.contains(route.method) { allowed.append(route.method) }
            if route.method == method {
                if best.map({ Router.isMoreSpecific(route.segments, than: $0.route.segments) }) ?? true {
                    best = (route, parameters)
                }
            } else if method == .head && route.method == .get {
                if bestGet.map({ Router.isMoreSpecific(route.segments, than: $0.route.segments) }) ?? true {
                    bestGet = (route, parameters)
                }
            }
        }
        if let found = best ?? bestGet {
            return .matched(found.route.handler, parameters: found.parameters, pattern: found.route.pattern)
        }
        guard !allowed.isEmpty else { return .notFound }
        if allowed.contains(.get) && !allowed.contains(.head) { allowed.append(.head) }
        return .methodNotAllowed(allowed: allowed)
    }

    /// The decoded parameters when `segments` matches the raw path segments, else nil.
    private static func parameters(
        of segments: [Segment], in raw: [UnsafeRawBufferPointer.SubSequence]
    ) -> [String: String]? {
        guard segments.count == raw.count else { return nil }
        var parameters: [String: String] = [:]
        for (segment, rawSegment) in zip(segments, raw) {
            switch segment {
            case .literal(let literal):
                if rawSegment.elementsEqual(literal) { continue }
                guard rawSegment.contains(UInt8(ascii: "%")),
                    let decoded = PercentDecoding.decodeStrict(rawSegment),
                    decoded.utf8.elementsEqual(literal)
                else { return nil }
            case .parameter(let name):
                guard !rawSegment.isEmpty, let decoded = PercentDecoding.decodeStrict(rawSegment) else { return nil }
                parameters[name] = decoded
            }
        }
        return parameters
    }

    /// Whether `lhs` has a literal where `rhs` has a parameter at their first difference.
    private static func isMoreSpecific(_ lhs: [Segment], than rhs: [Segment]) -> Bool {
        for (left, right) in zip(lhs, rhs) {
            switch (left, right) {
            case (.literal, .parameter): return true
            case (.parameter, .literal): return false
            default: continue
            }
        }
        return false
    }
}

/// The outcome of ``Router/match(method:path:)``.
public enum RouteMatch<Handler> {
    /// A route matched: its handler, its decoded parameters by name, and its pattern (for logs
    /// and metrics, which should not see raw paths).
    case matched(Handler, parameters: [String: String], pattern: String)
    /// No route has this path: answer 404.
    case notFound
    /// Routes have this path but not this method: answer 405 with `Allow` listing `allowed`
    /// (HEAD is included whenever GET is).
    case methodNotAllowed(allowed: [HTTPMethod])
}

extension RouteMatch: Sendable where Handler: Sendable {}
