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
        // An hour: this test's tasks may wait for a thread longer than the default 30 s of idle reuse.
        let transport = SocketTransport(idleTimeout: .seconds(3600))
        let watcher = ListClient(baseURL: server.baseURL, token: nil, transport: transport)
        var version = try await watcher.list("k").version
        // Counted after the first answer: a new connection the server closed before the
        // request went out (its 10 s head timeout, in a loaded run) is replaced.
        let first = transport.connectionsOpened
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
        #expect(transport.connectionsOpened == first, "every request after the first reused its connection")
        #expect(transport.idleConnections == 1)
    }

    /// Many requests at once through one transport: each finds or opens a
    /// connection, parked long-polls hold theirs, and every one is answered.
    @Test func manyConcurrentRequestsThroughOneTransport() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let writer = server.client()
        _ = try await writer.createList(id: "c", name: "C", sections: RandomWriter.initialSections)
        let transport = SocketTransport(maxIdleConnectionsPerEndpoint: 2)
        let client = ListClient(baseURL: server.baseURL, token: nil, transport: transport)
        let version = try await client.list("c").version
        try await withThrowingTaskGroup(of: Int64.self) { group in
            for _ in 0..<16 {
                group.addTask { try await client.changes(of: "c", since: version, timeout: .seconds(20)).to }
            }
            for _ in 0..<48 {
                group.addTask { try await client.list("c").version }
            }
            #expect(await eventually(10) { (try? await server.gauge("listd_parked_waiters")) == 16 })
            _ = try await writer.patchList("c", [.updateItem(id: "a2", model: Model(.number(JSONNumber(Int64(7)))))])
            var answers = 0
            for try await reached in group {
                #expect(reached >= version)
                answers += 1
            }
            #expect(answers == 64)
        }
        #expect(transport.idleConnections == 2)
        #expect(transport.connectionsOpened >= 16)
    }

    /// Disposing a follow parked in a long-poll cancels its task: the request ends
    /// at once as `.cancelled`, and the server releases the waiter.
    @Test func cancellingAParkedPollEndsItAtOnce() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        _ = try await server.client().createList(id: "x", name: "X", sections: RandomWriter.initialSections)
        let transport = SocketTransport()
        let client = ListClient(baseURL: server.baseURL, token: nil, transport: transport)
        let version = try await client.list("x").version
        let poll = Task { try await client.changes(of: "x", since: version, timeout: .seconds(60)) }
        #expect(await eventually(10) { (try? await server.gauge("listd_parked_waiters")) == 1 })
        poll.cancel()
        let error = await #expect(throws: ListClientError.self) { try await poll.value }
        #expect(error?.kind == .cancelled)
        #expect(await eventually(10) { (try? await server.gauge("listd_parked_waiters")) == 0 })
        #expect(transport.idleConnections == 0)
    }

    /// The server goes away while a long-poll is parked: the request fails as a
    /// transport error (which a follow retries), it does not hang.
    @Test func aServerThatDiesMidPollFailsTheRequest() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        _ = try await server.client().createList(id: "d", name: "D", sections: RandomWriter.initialSections)
        let client = ListClient(baseURL: server.baseURL, token: nil, transport: SocketTransport())
        let version = try await client.list("d").version
        let poll = Task { try await client.changes(of: "d", since: version, timeout: .seconds(60)) }
        #expect(await eventually(10) { (try? await server.gauge("listd_parked_waiters")) == 1 })
        kill(server.process.processIdentifier, SIGKILL)
        let error = await #expect(throws: ListClientError.self) { try await poll.value }
        #expect(error?.kind == .transport)
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
