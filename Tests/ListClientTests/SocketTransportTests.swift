import Foundation
import JSON
import ListClient
import ListdTestSupport
import Testing

/// ListClient's socket transport (`listd watch`'s, and `http://`'s on Linux):
/// one keep-alive connection for a watch's snapshot and long-polls, not one
/// connection per request.
@Suite struct SocketTransportTests {
    @Test func aWatchsRequestsShareOneConnection() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let writer = server.client()
        _ = try await writer.createList(id: "k", name: "K", sections: RandomWriter.initialSections)
        let transport = SocketTransport()
        let watcher = ListClient(baseURL: server.baseURL, token: nil, transport: transport)
        var version = try await watcher.list("k").version
        for round in 0..<3 {
            // A long-poll parks, a write wakes it, the next one starts on the same connection.
            let since = version
            async let answer = watcher.changes(of: "k", since: since, timeout: .seconds(20))
            #expect(await eventually(10) { (try? await server.gauge("listd_parked_waiters")) == 1 })
            _ = try await writer.patchList(
                "k", [.updateItem(id: "a2", model: Model(.number(JSONNumber(Int64(round)))))])
            let changed = try await answer
            #expect(changed.to > version)
            version = changed.to
        }
        #expect(transport.connectionsOpened == 1)
        #expect(transport.idleConnections == 1)
    }

    /// No TLS: an https:// request fails before any connection, saying why.
    @Test func httpsIsRefusedAsAnInvalidRequest() async throws {
        let transport = SocketTransport()
        let url = try #require(URL(string: "https://127.0.0.1:1"))
        let client = ListClient(baseURL: url, token: nil, transport: transport)
        let error = await #expect(throws: ListClientError.self) { try await client.list("k") }
        #expect(error?.kind == .invalidRequest)
        #expect(error?.detail.contains("http:// only") == true)
        #expect(transport.connectionsOpened == 0)
    }
}
