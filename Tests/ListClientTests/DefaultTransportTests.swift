import Foundation
import ListClient
import ListClientNetworking
import ListdTestSupport
import Testing

/// What `ListClient(baseURL:token:)` sends with: on Linux plain sockets for
/// `http://` (no URLSession is ever made) and URLSession for `https://`.
@Suite struct DefaultTransportTests {
    #if os(Linux)
        @Test(arguments: [
            ("http://127.0.0.1:8080", DefaultTransport.Route.socket),
            ("HTTP://lists.example.com/prefix", .socket),
            ("https://lists.example.com", .urlSession),
            ("https://127.0.0.1:8443", .urlSession),
        ])
        func routeByScheme(_ url: String, _ route: DefaultTransport.Route) throws {
            #expect(DefaultTransport.route(for: try #require(URL(string: url))) == route)
        }

        @Test func anHTTPClientTalksOverOneSocketAndNeverMakesAURLSession() async throws {
            let server = try await TestServer()
            defer { server.stop() }
            let client = ListClient(baseURL: server.baseURL, token: nil)
            let transport = try #require(client.transport as? DefaultTransport)
            let created = try await client.createList(id: "d", name: "D", sections: RandomWriter.initialSections)
            _ = try await client.patchList("d", [.updateItem(id: "a2", model: 1)])
            let answer = try await client.changes(of: "d", since: created.version, timeout: .zero)
            #expect(answer.to > created.version)
            // Kept alive: fewer connections than requests. (Not exactly one: on a
            // loaded machine a gap past listd's 10 s idle timeout ends one, and the
            // client rightly opens another.)
            #expect(transport.socket.connectionsOpened < 3, "three requests, a kept-alive connection")
            #expect(!transport.hasMadeURLSession)
        }

        /// https:// goes through URLSession, not to the socket transport's
        /// refusal: against a plain-HTTP listd the TLS handshake fails, a
        /// transport error, and no socket of the pool was opened.
        @Test func anHTTPSClientGoesThroughURLSession() async throws {
            let server = try await TestServer()
            defer { server.stop() }
            let url = try #require(URL(string: "https://127.0.0.1:\(server.port)"))
            let client = ListClient(baseURL: url, token: nil)
            let transport = try #require(client.transport as? DefaultTransport)
            let error = await #expect(throws: ListClientError.self) { try await client.list("d") }
            #expect(error?.kind == .transport)
            #expect(transport.hasMadeURLSession)
            #expect(transport.socket.connectionsOpened == 0)
        }
    #else
        @Test func everythingGoesThroughURLSession() throws {
            #expect(DefaultTransport.route(for: try #require(URL(string: "http://127.0.0.1:8080"))) == .urlSession)
        }
    #endif
}
