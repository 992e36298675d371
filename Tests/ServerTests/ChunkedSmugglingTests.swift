import HTTP
import Testing

@testable import Server

/// A chunk-size line that a lenient proxy and listd could read differently must end the
/// connection: 400, then close, and the handler never sees a request.
@Suite struct ChunkedSmugglingTests {
    @Test(arguments: ["a \r\n", "a\t\r\n", "a;x=y \r\n"])
    func chunkSizeLineEndingInWhiteSpaceIs400AndClose(_ sizeLine: String) throws {
        let handled = Counter()
        let (server, port) = try startServer { _, responder in
            handled.increment()
            responder.respond(ok("x"))
        }
        defer { stop(server) }
        let client = try TestClient(port: port)
        // What follows the bad line is a second request a smuggler would hide in the body.
        client.send(
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\(sizeLine)0123456789\r\n0\r\n\r\n"
                + "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n")
        let reply = try client.readReply()
        #expect(reply.status == 400)
        // The server's own refusal (the application may render it; the test server does not).
        #expect(reply.header("content-type") == "text/plain; charset=utf-8")
        #expect(reply.text.contains("chunk"))
        #expect(client.closesWithoutMoreBytes())
        #expect(handled.value == 0)
    }
}
