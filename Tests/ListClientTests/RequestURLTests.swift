import Foundation
import ListClient
import Testing

/// The URLs the client asks for: base URL, percent-encoded path segments and
/// query, as the transport receives them.
@Suite struct RequestURLTests {
    /// Sends one request through a fake transport and returns the URL it was given.
    static func url(
        base: String, _ path: [String], query: [(String, String)] = []
    ) async throws -> String {
        let transport = FakeTransport { _, _ in FakeTransport.json("{}") }
        let client = ListClient(baseURL: try #require(URL(string: base)), token: nil, transport: transport)
        _ = try await client.json("GET", path, query: query)
        return try #require(transport.requests.first).url.absoluteString
    }

    @Test func segmentsAndQueryKeepOnlyUnreservedCharactersUnescaped() async throws {
        let url = try await Self.url(
            base: "http://127.0.0.1:8080", ["lists", "a b/c?d#e%f", "é"],
            query: [("since", "12"), ("where", "tags.0:c++ & x=y"), ("q", "a~b_c-d.e")])
        #expect(
            url == "http://127.0.0.1:8080/lists/a%20b%2Fc%3Fd%23e%25f/%C3%A9"
                + "?since=12&where=tags.0%3Ac%2B%2B%20%26%20x%3Dy&q=a~b_c-d.e")
        // What the server decodes is what was given: a plus is a plus, not a space.
        let components = try #require(URLComponents(string: url))
        #expect(components.queryItems?.first { $0.name == "where" }?.value == "tags.0:c++ & x=y")
        #expect(components.path == "/lists/a b/c?d#e%f/é")
    }

    @Test(arguments: [
        ("http://h.invalid:1", "http://h.invalid:1/lists/a"),
        ("http://h.invalid:1/", "http://h.invalid:1/lists/a"),
        ("http://h.invalid:1/api//", "http://h.invalid:1/api/lists/a"),
        ("http://h.invalid:1/api?x=1#top", "http://h.invalid:1/api/lists/a"),
        ("http://user@h.invalid/base", "http://user@h.invalid/base/lists/a"),
    ])
    func theBaseURLsPathIsThePrefix(base: String, expected: String) async throws {
        #expect(try await Self.url(base: base, ["lists", "a"]) == expected)
    }

    @Test func anEmptySegmentIsAnInvalidRequest() async throws {
        let transport = FakeTransport { _, _ in FakeTransport.json("{}") }
        let client = ListClient(
            baseURL: try #require(URL(string: "http://h.invalid:1")), token: nil, transport: transport)
        let error = await #expect(throws: ListClientError.self) { try await client.list("") }
        #expect(error?.kind == .invalidRequest)
        #expect(transport.requests.isEmpty)
    }
}
