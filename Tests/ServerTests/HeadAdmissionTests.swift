import Glibc
import HTTP
import Testing

@testable import Server

/// A handler that refuses every request whose head lacks `X-Key: k` and sees
/// what the admitted ones carried from their head.
private struct KeyedHandler: HTTPHandler {
    let handled: Recorder<String>

    func admit(_ head: RequestHead, remoteAddress: String) -> HeadDecision {
        guard head.headers["X-Key"] == "k" else {
            return .refuse(Response(status: .unauthorized, headers: [:], body: Array("no key".utf8)))
        }
        return .admit("admitted \(head.path)")
    }

    func handle(_ request: Request, responder: Responder) {
        let admission = request.admission as? String ?? "none"
        handled.append(admission)
        responder.respond(ok("\(admission) with \(request.body.count) bytes"))
    }
}

@Suite(.serialized) struct HeadAdmissionTests {
    @Test func aRefusedHeadWithExpectContinueGetsTheRefusalNot100() throws {
        let handled = Recorder<String>()
        let (server, port) = try startServer(
            { $0.limits.maxBodyBytes = 64 << 20 }, handling: KeyedHandler(handled: handled))
        defer { stop(server) }
        let client = try TestClient(port: port)
        client.send("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 33554432\r\nExpect: 100-continue\r\n\r\n")
        let reply = try client.readReply()
        #expect(reply.status == 401)
        #expect(reply.text == "no key")
        #expect(reply.header("connection") == "close")
        #expect(client.closesWithoutMoreBytes())
        #expect(handled.count == 0)
    }

    @Test func aRefusedBodyIsNeverBuffered() throws {
        // 16 MiB sent anyway after the refusal: the server discards it while it
        // lingers (its parser never holds it) and closes.
        let handled = Recorder<String>()
        let (server, port) = try startServer(
            { $0.limits.maxBodyBytes = 64 << 20 }, handling: KeyedHandler(handled: handled))
        defer { stop(server) }
        let client = try TestClient(port: port)
        client.send("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 16777216\r\n\r\n")
        let reply = try client.readReply()
        #expect(reply.status == 401)
        #expect(reply.header("connection") == "close")
        let chunk = [UInt8](repeating: 0x61, count: 1 << 16)
        for _ in 0..<8 { client.send(chunk) }
        #expect(handled.count == 0)
    }

    @Test func aRefusedBodylessRequestKeepsTheConnection() throws {
        let handled = Recorder<String>()
        let (server, port) = try startServer(handling: KeyedHandler(handled: handled))
        defer { stop(server) }
        let client = try TestClient(port: port)
        client.send(
            "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\nX-Key: k\r\n\r\n"
                + "POST /c HTTP/1.1\r\nHost: x\r\nX-Key: k\r\nContent-Length: 3\r\n\r\nabc")
        let refused = try client.readReply()
        #expect(refused.status == 401)
        #expect(refused.header("connection") == nil)
        #expect(try client.readReply().text == "admitted /b with 0 bytes")
        #expect(try client.readReply().text == "admitted /c with 3 bytes")
        #expect(handled.all == ["admitted /b", "admitted /c"])
    }

    @Test func anAdmittedHeadGets100AndItsAdmission() throws {
        let handled = Recorder<String>()
        let (server, port) = try startServer(handling: KeyedHandler(handled: handled))
        defer { stop(server) }
        let client = try TestClient(port: port)
        client.send("POST /p HTTP/1.1\r\nHost: x\r\nX-Key: k\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        #expect(try client.readReply().status == 100)
        client.send("hello")
        #expect(try client.readReply().text == "admitted /p with 5 bytes")
    }
}
