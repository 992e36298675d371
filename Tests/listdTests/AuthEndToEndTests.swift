import Foundation
import Glibc
import ListdTestSupport
import Testing

/// The front door through the real binary (docs/API.md, "Auth"): a request is
/// authenticated from its head, so an unauthenticated body is never read.
@Suite struct AuthEndToEndTests {
    @Test func anUnauthenticatedExpectContinueGets401Not100AndTheConnectionCloses() async throws {
        let server = try await ListdServer(environment: ["LISTD_WRITE_TOKEN": "w-token"])
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        try connection.send(
            "POST /lists HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Content-Length: 33554432\r\nExpect: 100-continue\r\n\r\n")
        let reply = try #require(try await connection.reply(timeout: .seconds(10)))
        #expect(reply.status == 401)
        #expect(reply.header("connection") == "close")
        #expect(reply.header("www-authenticate")?.hasPrefix("Bearer") == true)
        #expect(await connection.closedByPeer())
    }

    @Test func anAuthenticatedExpectContinueGets100() async throws {
        let server = try await ListdServer(environment: ["LISTD_WRITE_TOKEN": "w-token"])
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        let body = #"{"id":"l"}"#
        try connection.send(
            "POST /lists HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer w-token\r\n"
                + "Content-Length: \(body.utf8.count)\r\nExpect: 100-continue\r\n\r\n")
        let interim = try #require(try await connection.reply(timeout: .seconds(10)))
        #expect(interim.status == 100)
        try connection.send(body)
        let reply = try #require(try await connection.reply(timeout: .seconds(10)))
        #expect(reply.status == 201)
    }

    @Test func aReadTokensWriteIsRefusedBeforeItsBody() async throws {
        let server = try await ListdServer(environment: ["LISTD_WRITE_TOKEN": "w-token", "LISTD_READ_TOKEN": "r-token"])
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        try connection.send(
            "POST /lists HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer r-token\r\n"
                + "Content-Length: 1048576\r\nExpect: 100-continue\r\n\r\n")
        let reply = try #require(try await connection.reply(timeout: .seconds(10)))
        #expect(reply.status == 403)
        #expect(reply.header("connection") == "close")
    }
}
