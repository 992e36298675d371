import HTTP
import ListAPI
import Testing

/// The server's own refusals (the 503 at the connection limit above all) are
/// sent before any request is read, so before its `Origin` is known: they
/// carry CORS fields when those do not depend on it.
@Suite struct RefusalCORSTests {
    static func refusal(_ origins: [String]) async throws -> Response {
        let app = try await InProcessService.make(cors: CORSPolicy(origins: origins))
        defer { Task { await app.close() } }
        return app.service.errorResponse(status: .serviceUnavailable, detail: "at the limit")
    }

    @Test func anyOriginAllowedGivesAStar() async throws {
        let response = try await Self.refusal(["*"])
        #expect(response.headers["Access-Control-Allow-Origin"] == "*")
        #expect(response.headers["Access-Control-Expose-Headers"]?.contains("Retry-After") == true)
        #expect(response.headers["Vary"] == nil)
        #expect(response.status.code == 503)
    }

    @Test func oneOriginIsNamedWithVary() async throws {
        let response = try await Self.refusal(["https://app.example"])
        #expect(response.headers["Access-Control-Allow-Origin"] == "https://app.example")
        #expect(response.headers["Vary"] == "Origin")
    }

    @Test func severalOriginsOrNoneGiveNoField() async throws {
        for origins in [["https://a.example", "https://b.example"], []] {
            let response = try await Self.refusal(origins)
            #expect(response.headers["Access-Control-Allow-Origin"] == nil, "\(origins)")
            #expect(response.status.code == 503)
        }
    }
}
