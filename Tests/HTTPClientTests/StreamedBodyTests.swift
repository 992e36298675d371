import Foundation
import Glibc
import HTTP
import ListdTestSupport
import POSIXIO
import Synchronization
import Testing

@testable import HTTPClient

/// Streamed bodies (issue 26): the parser hands a body on as it is framed, and
/// `KeepAliveClient.stream` delivers a real listd's event stream piece by piece
/// as the server writes it, fails a silent one, and closes on cancellation.
@Suite struct StreamedBodyTests {
    @Test(arguments: [1, 3, 7, 1000])
    func theParserHandsOnEachChunkAsItIsFramed(piece: Int) throws {
        let text =
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "7\r\nabc\ndef\r\n3\r\n\n\n:\r\n0\r\n\r\n"
        var parser = ResponseParser(method: .get)
        var body: [UInt8] = []
        var headSeen = false
        var complete = false
        let bytes = Array(text.utf8)
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + piece)
            parser.append(Array(bytes[start..<end]))
            start = end
            let taken = try parser.takeBody()
            guard let head = parser.head else {
                #expect(taken.bytes.isEmpty)
                continue
            }
            if !headSeen {
                #expect(head.status == .ok && head.body.isEmpty)
                headSeen = true
            }
            body += taken.bytes
            complete = taken.complete
        }
        #expect(headSeen && complete)
        #expect(String(decoding: body, as: UTF8.self) == "abc\ndef\n\n:")
    }

    @Test func aBodyToTheEndOfTheStreamIsHandedOnAsItArrives() throws {
        var parser = ResponseParser(method: .get)
        parser.append(Array("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: 1\n".utf8))
        #expect(parser.head == nil)
        #expect(try parser.takeBody().bytes == Array("data: 1\n".utf8))
        #expect(parser.head?.status == .ok)
        parser.append(Array("\n".utf8))
        #expect(try parser.takeBody() == (Array("\n".utf8), false))
        #expect(try parser.finishBody().isEmpty)
    }

    static func request(_ port: Int, _ target: String, timeout: Duration = .seconds(60)) -> HTTPClientCall.Request {
        HTTPClientCall.Request(
            method: .get, host: "127.0.0.1", port: port, target: target, headers: ["Accept": "text/event-stream"],
            body: nil, timeout: timeout)
    }

    /// Reads pieces until the text read so far contains `marker`.
    static func read(_ body: ResponseBodyStream, until marker: String, into text: inout String) async throws {
        while !text.contains(marker) {
            guard let piece = try await body.next() else { throw TestFailure("the stream ended before \(marker)") }
            text += String(decoding: piece, as: UTF8.self)
        }
    }

    @Test func anEventStreamArrivesPieceByPieceAndCancelClosesIt() async throws {
        let server = try await ListdProcess()
        defer { server.stop() }
        let client = KeepAliveClient()
        let created = try await client.perform(
            KeepAliveClientTests.request(server.port, .post, "/lists", body: Array(#"{"id":"s"}"#.utf8)))
        #expect(created.status.code == 201)
        let (head, body) = try await client.stream(Self.request(server.port, "/lists/s/events?since=now"))
        #expect(head.status == .ok)
        #expect(head.headers["Content-Type"] == "text/event-stream")
        var text = ""
        try await Self.read(body, until: "listd event stream", into: &text)
        #expect(!text.contains("event: change"))
        // A write while the stream is open: its event arrives on the same answer.
        let written = try await client.perform(
            KeepAliveClientTests.request(
                server.port, .patch, "/lists/s",
                body: Array(#"{"ops":[{"op":"insertSection","section":{"id":"a","model":{}}}]}"#.utf8)))
        #expect(written.status == .ok)
        try await Self.read(body, until: "event: change", into: &text)
        #expect(text.contains(#""id":"a""#))
        #expect(try await KeepAliveClientTests.gauge("listd_event_streams", server) == 1)
        body.cancel()
        // What arrived before the cancel may still be handed out; then the end.
        var after = 0
        while try await body.next() != nil, after < 1_000 { after += 1 }
        #expect(after < 1_000)
        #expect(body.isFinished)
        // The server sees the stream's connection close.
        #expect(try await eventually(30) { try await KeepAliveClientTests.gauge("listd_event_streams", server) == 0 })
    }

    @Test func aStreamSilentLongerThanItsTimeoutFailsWithETIMEDOUT() async throws {
        // No heartbeat for an hour, so the silence can outlast a timeout long enough
        // for a loaded machine's first bytes (5 s ran out before them in a CI run).
        let server = try await ListdProcess(["--event-heartbeat", "1h"])
        defer { server.stop() }
        let client = KeepAliveClient()
        _ = try await client.perform(
            KeepAliveClientTests.request(server.port, .post, "/lists", body: Array(#"{"id":"q"}"#.utf8)))
        let (_, body) = try await client.stream(
            Self.request(server.port, "/lists/q/events?since=now", timeout: .seconds(20)))
        var text = ""
        try await Self.read(body, until: "listd event stream", into: &text)
        // The heartbeat is an hour away: 20 s of silence end the stream first.
        let error = await #expect(throws: SystemError.self) {
            while try await body.next() != nil {}
        }
        #expect(error?.errno == ETIMEDOUT)
    }

    @Test func cancellingTheReadingTaskEndsTheStream() async throws {
        let server = try await ListdProcess()
        defer { server.stop() }
        let client = KeepAliveClient()
        _ = try await client.perform(
            KeepAliveClientTests.request(server.port, .post, "/lists", body: Array(#"{"id":"c"}"#.utf8)))
        let (_, body) = try await client.stream(Self.request(server.port, "/lists/c/events?since=now"))
        var text = ""
        try await Self.read(body, until: "listd event stream", into: &text)
        let reader = Task { () throws(SystemError) -> Int in
            var pieces = 0
            while try await body.next() != nil { pieces += 1 }
            return pieces
        }
        #expect(try await eventually(30) { try await KeepAliveClientTests.gauge("listd_event_streams", server) == 1 })
        reader.cancel()
        // The reading task ends (a heartbeat may have arrived before the cancel on a slow machine).
        _ = try await reader.value
        #expect(try await eventually(30) { try await KeepAliveClientTests.gauge("listd_event_streams", server) == 0 })
    }

    @Test func anErrorAnswerComesWholeThroughAStream() async throws {
        let server = try await ListdProcess()
        defer { server.stop() }
        let (head, body) = try await KeepAliveClient().stream(Self.request(server.port, "/lists/nope/events?since=0"))
        #expect(head.status.code == 404)
        var bytes: [UInt8] = []
        while let piece = try await body.next() { bytes += piece }
        #expect(String(decoding: bytes, as: UTF8.self).contains("unknown-list"))
    }
}
