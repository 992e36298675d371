import Foundation
import Testing

/// Keeps docs/openapi.yaml and the server's routes in step.
///
/// The route list below is written by hand from
/// Sources/ListAPI/Routes/RouteTable.swift (this test target cannot see the
/// internal table). Two checks keep it honest: the spec must declare exactly
/// these routes (plus HEAD wherever GET is), and a live listd must route
/// every one of them and answer 405 to every other common method on the same
/// paths, so a route added to the server but not to this list fails too.
@Suite struct OpenAPIRouteTests {
    /// The server's routes, as in RouteTable.swift.
    static let routes: [(method: String, path: String)] = [
        ("GET", "/healthz"),
        ("GET", "/metrics"),
        ("GET", "/lists"),
        ("POST", "/lists"),
        ("GET", "/lists/{list}"),
        ("PUT", "/lists/{list}"),
        ("PATCH", "/lists/{list}"),
        ("DELETE", "/lists/{list}"),
        ("GET", "/lists/{list}/sections"),
        ("POST", "/lists/{list}/sections"),
        ("GET", "/lists/{list}/sections/{section}"),
        ("PUT", "/lists/{list}/sections/{section}"),
        ("PATCH", "/lists/{list}/sections/{section}"),
        ("DELETE", "/lists/{list}/sections/{section}"),
        ("GET", "/lists/{list}/sections/{section}/items"),
        ("POST", "/lists/{list}/sections/{section}/items"),
        ("GET", "/lists/{list}/items"),
        ("GET", "/lists/{list}/items/{item}"),
        ("PUT", "/lists/{list}/items/{item}"),
        ("PATCH", "/lists/{list}/items/{item}"),
        ("DELETE", "/lists/{list}/items/{item}"),
        ("GET", "/lists/{list}/indexes"),
        ("PUT", "/lists/{list}/indexes/{path}"),
        ("DELETE", "/lists/{list}/indexes/{path}"),
        ("PUT", "/lists/{list}/text-index"),
        ("DELETE", "/lists/{list}/text-index"),
        ("GET", "/lists/{list}/changes"),
        ("POST", "/changes"),
        ("GET", "/lists/{list}/events"),
        ("GET", "/events"),
        ("GET", "/"),
        ("GET", "/ui"),
        ("GET", "/ui/"),
        ("GET", "/ui/{file}"),
    ]

    /// What the spec must declare: the routes, and HEAD wherever GET is.
    static var expected: Set<String> {
        var operations = Set(routes.map { "\($0.method) \($0.path)" })
        for route in routes where route.method == "GET" { operations.insert("HEAD \(route.path)") }
        return operations
    }

    static var specURL: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/openapi.yaml")
    }

    /// The `METHOD /path` pairs under `paths:` in the spec, read from its text:
    /// a path is a two-space-indented key starting with `/`, an operation a
    /// four-space-indented HTTP method key below it.
    static func specOperations() throws -> Set<String> {
        let text = try String(contentsOf: specURL, encoding: .utf8)
        let methods: Set<String> = ["get", "head", "post", "put", "patch", "delete", "options", "trace"]
        var operations = Set<String>()
        var inPaths = false
        var path: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.hasPrefix(" ") && !line.isEmpty {
                inPaths = line == "paths:"
                path = nil
                continue
            }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
            } else if let path, line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":"),
                methods.contains(String(line.dropFirst(4).dropLast()))
            {
                operations.insert("\(line.dropFirst(4).dropLast().uppercased()) \(path)")
            }
        }
        return operations
    }

    @Test func specDeclaresExactlyTheServersRoutes() throws {
        let declared = try Self.specOperations()
        #expect(declared.count >= 30, "the spec parser found only \(declared.sorted())")
        let missing = Self.expected.subtracting(declared)
        let extra = declared.subtracting(Self.expected)
        #expect(missing.isEmpty, "routes the server has but docs/openapi.yaml lacks: \(missing.sorted())")
        #expect(extra.isEmpty, "operations docs/openapi.yaml has but the server lacks: \(extra.sorted())")
    }

    @Test func specKeepsHealthzOpenAndEverythingElseBehindTheBearerScheme() throws {
        let text = try String(contentsOf: Self.specURL, encoding: .utf8)
        #expect(text.contains("openapi: 3.1"))
        #expect(text.contains("security:\n  - bearer: []"), "the bearer scheme must be the spec's default")
        let healthz = try #require(text.range(of: "  /healthz:\n"))
        let nextPath = try #require(text.range(of: "\n  /metrics:\n", range: healthz.upperBound..<text.endIndex))
        let block = text[healthz.upperBound..<nextPath.lowerBound]
        #expect(block.components(separatedBy: "security: []").count - 1 == 2, "GET and HEAD /healthz need no token")
    }

    /// The path with each `{parameter}` filled with an id that exists nowhere.
    static func concrete(_ path: String) -> String {
        path.replacingOccurrences(of: "{list}", with: "no-such-list")
            .replacingOccurrences(of: "{section}", with: "no-such-section")
            .replacingOccurrences(of: "{item}", with: "no-such-item")
            .replacingOccurrences(of: "{file}", with: "listd.js")
            .replacingOccurrences(of: "{path}", with: "done")
    }

    @Test func liveServerRoutesExactlyTheListedRoutes() async throws {
        let server = try await ListdServer()
        defer { _ = server.stop() }
        for route in Self.routes {
            // Bodies that fail fast: no route here parks or writes with them.
            let body: Any? = ["POST", "PUT", "PATCH"].contains(route.method) ? "{}" : nil
            let reply = try await server.request(route.method, Self.concrete(route.path), body: body, timeout: 10)
            let type = (try? reply.object())?["type"] as? String
            #expect(
                reply.status != 405 && type != "https://listd.dev/problems/not-found",
                "\(route.method) \(route.path) is not routed: \(reply.status) \(reply.text)")
        }
        let paths = Set(Self.routes.map(\.path))
        for path in paths.sorted() {
            let served = Set(Self.routes.filter { $0.path == path }.map(\.method))
            for method in ["GET", "POST", "PUT", "PATCH", "DELETE"] where !served.contains(method) {
                let reply = try await server.request(method, Self.concrete(path), timeout: 10)
                #expect(reply.status == 405, "\(method) \(path) answered \(reply.status), so the route list misses it")
                let allow = Set(
                    (reply.header("Allow") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
                var expectedAllow = served
                if served.contains("GET") { expectedAllow.insert("HEAD") }
                #expect(
                    allow == expectedAllow,
                    "Allow for \(path) is \(allow.sorted()), the list says \(expectedAllow.sorted())")
            }
        }
    }
}
