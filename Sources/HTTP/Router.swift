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
    // Matching lives in the non-generic RouteTable: generic code called from another module
    // runs unspecialised and looks up type metadata at run time, which made matching 10x slower.
    private var table = RouteTable()
    private var handlers: [Handler] = []

    /// Creates a router with no routes.
    public init() {}

    /// Adds a route. `pattern` starts with `/`; a segment `{name}` is a parameter.
    ///
    /// Registering the same method and pattern twice, or a malformed pattern, is a programming
    /// error and traps.
    public mutating func add(_ method: HTTPMethod, _ pattern: String, _ handler: Handler) {
        table.add(method, pattern, handlerIndex: handlers.count)
        handlers.append(handler)
    }

    /// The handler for `method` and a raw (percent-encoded) `path`, with decoded parameters;
    /// or why there is none.
    public func match(method: HTTPMethod, path: String) -> RouteMatch<Handler> {
        switch table.match(method: method, path: path) {
        case .matched(let index, let parameters, let pattern):
            return .matched(handlers[index], parameters: parameters, pattern: pattern)
        case .notFound:
            return .notFound
        case .methodNotAllowed(let allowed):
            return .methodNotAllowed(allowed: allowed)
        }
    }
}

/// The routes of a ``Router`` without their handlers, so matching is plain, non-generic code.
struct RouteTable: Sendable {
    enum Segment: Sendable, Equatable {
        case literal([UInt8])
        case parameter(String)
    }

    struct Route: Sendable {
        var method: HTTPMethod
        var pattern: String
        var segments: [Segment]
        var handlerIndex: Int
    }

    enum Match {
        case matched(handlerIndex: Int, parameters: [String: String], pattern: String)
        case notFound
        case methodNotAllowed(allowed: [HTTPMethod])
    }

    private var routes: [Route] = []

    /// Adds a route whose handler is `handlerIndex` in the router's list.
    mutating func add(_ method: HTTPMethod, _ pattern: String, handlerIndex: Int) {
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
        routes.append(Route(method: method, pattern: pattern, segments: segments, handlerIndex: handlerIndex))
    }

    /// The best route for `method` and a raw path, with decoded parameters; or why there is none.
    func match(method: HTTPMethod, path: String) -> Match {
        var path = path
        return path.withUTF8 { bytes in match(method: method, path: UnsafeRawBufferPointer(bytes)) }
    }

    private func match(method: HTTPMethod, path: UnsafeRawBufferPointer) -> Match {
        guard path.first == UInt8(ascii: "/") else { return .notFound }
        var segments: [Range<Int>] = []
        segments.reserveCapacity(8)
        var start = 1
        for index in 1..<path.count where path[index] == UInt8(ascii: "/") {
            segments.append(start..<index)
            start = index + 1
        }
        segments.append(start..<path.count)

        var best: Int?
        var bestGet: Int?
        var pathExists = false
        for index in routes.indices where routes[index].segments.count == segments.count {
            guard RouteTable.matches(routes[index].segments, segments, in: path) else { continue }
            pathExists = true
            let routeMethod = routes[index].method
            if routeMethod == method {
                if best.map({ RouteTable.isMoreSpecific(routes[index].segments, than: routes[$0].segments) }) ?? true {
                    best = index
                }
            } else if method == .head && routeMethod == .get {
                if bestGet.map({ RouteTable.isMoreSpecific(routes[index].segments, than: routes[$0].segments) }) ?? true
                {
                    bestGet = index
                }
            }
        }
        if let found = best ?? bestGet {
            let route = routes[found]
            var parameters: [String: String] = [:]
            for (segment, range) in zip(route.segments, segments) {
                // `matches` has checked that every parameter decodes.
                if case .parameter(let name) = segment,
                    let value = PercentDecoding.decodeStrict(UnsafeRawBufferPointer(rebasing: path[range]))
                {
                    parameters[name] = value
                }
            }
            return .matched(handlerIndex: route.handlerIndex, parameters: parameters, pattern: route.pattern)
        }
        guard pathExists else { return .notFound }
        var allowed: [HTTPMethod] = []
        for route in routes
        where !allowed.contains(route.method) && RouteTable.matches(route.segments, segments, in: path) {
            allowed.append(route.method)
        }
        if allowed.contains(.get) && !allowed.contains(.head) { allowed.append(.head) }
        return .methodNotAllowed(allowed: allowed)
    }

    /// Whether a pattern matches the path's segments: literals equal (raw, or once decoded),
    /// parameters non-empty and decodable.
    private static func matches(_ pattern: [Segment], _ segments: [Range<Int>], in path: UnsafeRawBufferPointer) -> Bool
    {
        guard pattern.count == segments.count else { return false }
        for (segment, range) in zip(pattern, segments) {
            let raw = UnsafeRawBufferPointer(rebasing: path[range])
            switch segment {
            case .literal(let literal):
                if raw.count == literal.count && literal.withUnsafeBytes({ $0.elementsEqual(raw) }) { continue }
                guard raw.contains(UInt8(ascii: "%")), let decoded = PercentDecoding.decodeStrict(raw),
                    decoded.utf8.elementsEqual(literal)
                else { return false }
            case .parameter:
                guard !raw.isEmpty else { return false }
                // Plain ASCII needs no decoding; anything else must decode to valid UTF-8.
                if raw.contains(where: { $0 == UInt8(ascii: "%") || $0 >= 0x80 })
                    && PercentDecoding.decodeStrict(raw) == nil
                {
                    return false
                }
            }
        }
        return true
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
