import Foundation
import Testing

/// Regression tests for what checking listd against docs/openapi.yaml found.
@Suite struct OpenAPIFindingsTests {
    /// `POST /changes` read its body's `timeout` only when the query had none,
    /// so `?timeout=0` hid a mistyped body field (unknown or mistyped fields
    /// are 400 in every body), and a bad body `timeout` was reported as a bad
    /// query parameter.
    @Test func postChangesChecksTheBodysTimeoutAsABodyField() async throws {
        let server = try await ListdServer()
        defer { _ = server.stop() }
        let created = try await server.request("POST", "/lists", body: ["id": "groceries"])
        #expect(created.status == 201)
        let version = try #require(try created.object()["version"] as? Int)

        for path in ["/changes", "/changes?timeout=0"] {
            let reply = try await server.request(
                "POST", path, body: #"{"lists": {"groceries": \#(version)}, "timeout": "soon"}"#, timeout: 10)
            #expect(reply.status == 400, "\(path): \(reply.status) \(reply.text)")
            let problem = try reply.object()
            #expect(
                problem["type"] as? String == "https://listd.dev/problems/invalid-request", "\(path): \(reply.text)")
            #expect((problem["detail"] as? String)?.contains("timeout") == true, "\(path): \(reply.text)")
        }

        // A valid body timeout still works, and the query's still wins.
        let quick = try await server.request(
            "POST", "/changes?timeout=0", body: #"{"lists": {"groceries": \#(version)}, "timeout": 300}"#, timeout: 10)
        #expect(quick.status == 200, "\(quick.text)")
        #expect(quick.text.contains(#""lists":{}"#))
        let bodyOnly = try await server.request(
            "POST", "/changes", body: #"{"lists": {"groceries": \#(version)}, "timeout": 0}"#, timeout: 10)
        #expect(bodyOnly.status == 200, "\(bodyOnly.text)")
    }
}
