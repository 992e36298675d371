import Foundation
import JSON
import ListClient
import ListdTestSupport
import ReactiveCore
import Synchronization
import Testing

/// A token provider (issue 26): asked before the first request, kept, asked
/// once more on a 401 (shared by requests that meet the 401 together), and a
/// follow whose token cannot be refreshed ends in `.needsAuth`.
@Suite struct TokenProviderTests {
    /// Answers the tokens of `sequence` in turn, then its last one for good, counting calls.
    final class Provider: Sendable {
        private let tokens: [String?]
        private let calls = Atomic<Int>(0)

        init(_ tokens: [String?]) { self.tokens = tokens }

        var count: Int { calls.load(ordering: .relaxed) }

        func next() async throws -> String? {
            let call = calls.add(1, ordering: .relaxed).oldValue
            return tokens[min(call, tokens.count - 1)]
        }
    }

    static let writeToken = "w-token-for-the-provider"

    /// A real listd that wants a token: a stale one is refused, the provider is
    /// asked again, and the request goes through with the new one, once.
    @Test func a401AsksTheProviderOnceMoreAndTheRequestGoesThrough() async throws {
        let server = try await TestServer(environment: ["LISTD_WRITE_TOKEN": Self.writeToken])
        defer { server.stop() }
        let provider = Provider(["expired", Self.writeToken])
        let client = ListClient(baseURL: server.baseURL) { try await provider.next() }
        #expect(client.token == nil)
        let created = try await client.createList(id: "p")
        #expect(created.id == "p")
        #expect(provider.count == 2)
        // The new token is kept: later requests ask the provider nothing.
        _ = try await client.patchList("p", [.insertSection(id: "a")])
        #expect(try await client.list("p").sections.count == 1)
        #expect(provider.count == 2)
    }

    /// A real listd and a provider that only ever has wrong tokens: one call before the
    /// follow, one refresh on its 401, then `.needsAuth` and the 401, and no more requests.
    @Test func aFollowWhoseTokenCannotBeRefreshedNeedsAuth() async throws {
        let server = try await TestServer(environment: ["LISTD_WRITE_TOKEN": Self.writeToken])
        defer { server.stop() }
        _ = try await server.client(token: Self.writeToken).createList(id: "p")
        let provider = Provider(["wrong-1", "wrong-2"])
        let client = ListClient(baseURL: server.baseURL) { try await provider.next() }
        var events: [FollowEvent] = []
        var caught: ListClientError?
        do {
            for try await event in client.events(list: "p", options: EndToEndTests.options) { events.append(event) }
        } catch {
            caught = error
        }
        #expect(events == [.connection(.connecting), .connection(.needsAuth)])
        #expect(caught?.status == 401)
        #expect(provider.count == 2)
    }

    /// A follow that starts with an expired token is live after one refresh.
    @Test func aFollowRefreshesItsTokenAndGoesLive() async throws {
        let server = try await TestServer(environment: ["LISTD_WRITE_TOKEN": Self.writeToken])
        defer { server.stop() }
        _ = try await server.client(token: Self.writeToken).createList(id: "p")
        let provider = Provider(["expired", Self.writeToken])
        let client = ListClient(baseURL: server.baseURL) { try await provider.next() }
        var states: [ConnectionState] = []
        for try await event in client.events(list: "p", options: EndToEndTests.options) {
            if let state = event.connection { states.append(state) }
            if states.last == .live { break }
        }
        #expect(states == [.connecting, .live])
        #expect(provider.count == 2)
    }

    /// Twenty requests that meet a 401 together cost one refresh, not twenty.
    @Test func requestsThatMeetA401TogetherShareOneRefresh() async throws {
        let transport = FakeTransport { request, _ in
            request.header("Authorization") == "Bearer new"
                ? FakeTransport.json("{}") : ConnectionStateTests.unauthorized
        }
        let provider = Provider(["old", "new"])
        let client = ListClient(baseURL: FollowLoopTests.base, transport: transport) {
            // Slow enough that all the requests are waiting on one call.
            try await Task.sleep(for: .milliseconds(20))
            return try await provider.next()
        }
        let statuses = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<20 {
                group.addTask { (try? await client.send("GET", ["healthz"]).status) ?? 0 }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: 20))
        #expect(provider.count == 2)
        #expect(transport.requests.filter { $0.header("Authorization") == "Bearer new" }.count == 20)
    }

    /// A provider that throws fails the request as a transport error (a follow retries it),
    /// and is asked again by the next request.
    @Test func aProviderThatThrowsIsATransportErrorAndIsAskedAgain() async throws {
        struct Offline: Error {}
        let calls = Atomic<Int>(0)
        let transport = FakeTransport { _, _ in FakeTransport.json("{}") }
        let client = ListClient(baseURL: FollowLoopTests.base, transport: transport) {
            if calls.add(1, ordering: .relaxed).oldValue == 0 { throw Offline() }
            return "t"
        }
        let failed = await #expect(throws: ListClientError.self) { try await client.send("GET", ["healthz"]) }
        #expect(failed?.kind == .transport && failed?.detail.contains("Offline") == true)
        #expect(transport.requests.isEmpty)
        #expect(try await client.send("GET", ["healthz"]).status == 200)
        #expect(transport.requests.first?.header("Authorization") == "Bearer t")
    }
}
