import Foundation
import Glibc
import HTTP
import POSIXIO
import Testing

@testable import HTTPClient

/// The event loop's response framing, as a value fed bytes the way reads deliver them.
@Suite struct ResponseParserTests {
    /// Feeds `text` in pieces of `piece` bytes; the response once complete, and whether it came only with the last byte.
    static func parse(
        _ text: String, method: HTTPMethod = .get, piece: Int = .max
    ) throws(SystemError) -> (response: HTTPClientCall.Response?, parser: ResponseParser, early: Bool) {
        var parser = ResponseParser(method: method)
        let bytes = Array(text.utf8)
        var start = 0
        var early = false
        while start < bytes.count {
            let end = min(bytes.count, start + piece)
            parser.append(Array(bytes[start..<end]))
            start = end
            if let response = try parser.response() {
                if start < bytes.count { early = true }
                return (response, parser, early)
            }
        }
        return (nil, parser, early)
    }

    static let plain = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}"

    @Test(arguments: [1, 2, 3, 7, 64, Int.max])
    func aLengthFramedAnswerInPieces(piece: Int) throws {
        let (response, parser, early) = try Self.parse(Self.plain, piece: piece)
        let answer = try #require(response)
        #expect(!early, "complete only once the last byte arrived")
        #expect(answer.status.code == 200)
        #expect(answer.headers["content-type"] == "application/json")
        #expect(answer.body == Array(#"{"a":1}"#.utf8))
        #expect(parser.canCarryAnotherRequest)
        #expect(parser.received == Self.plain.utf8.count)
    }

    @Test(arguments: [1, 5, Int.max])
    func aChunkedAnswerWithExtensionsAndTrailers(piece: Int) throws {
        let text =
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\nWiki\r\n5\r\npedia\r\n0\r\nTrailer: t\r\n\r\n"
        let (response, parser, early) = try Self.parse(text, piece: piece)
        #expect(try #require(response).body == Array("Wikipedia".utf8))
        #expect(!early)
        #expect(parser.canCarryAnotherRequest)
    }

    @Test func theStatusLine() throws {
        let notFound = try #require(try Self.parse("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n").response)
        #expect(notFound.status == HTTPStatus(code: 404, reasonPhrase: "Not Found"))
        let bare = try #require(try Self.parse("HTTP/1.1 200\r\nX-A:  spaced \t\r\nContent-Length: 0\r\n\r\n").response)
        #expect(bare.status == HTTPStatus(code: 200, reasonPhrase: ""))
        #expect(bare.headers["x-a"] == "spaced")
    }

    @Test func anInterimContinueIsSkipped() throws {
        let (response, _, _) = try Self.parse("HTTP/1.1 100 Continue\r\n\r\n" + Self.plain)
        #expect(try #require(response).status.code == 200)
    }

    @Test func answersWithoutBodies() throws {
        let head = try Self.parse("HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n", method: .head)
        #expect(try #require(head.response).body.isEmpty)
        #expect(head.parser.canCarryAnotherRequest)
        for code in [204, 304] {
            let answer = try Self.parse("HTTP/1.1 \(code) X\r\n\r\n")
            #expect(try #require(answer.response).status.code == code)
        }
    }

    @Test func aBodyThatRunsToTheEndOfTheStream() throws {
        var (response, parser, _) = try Self.parse("HTTP/1.1 200 OK\r\n\r\nall of it")
        #expect(response == nil)
        let answer = try parser.finish()
        #expect(answer.body == Array("all of it".utf8))
        #expect(!parser.canCarryAnotherRequest)
    }

    @Test func whatEndsTheConnection() throws {
        #expect(
            try !Self.parse(Self.plain.replacingFirst("200 OK", "200 OK\r\nConnection: keep-alive, close"))
                .parser.canCarryAnotherRequest)
        #expect(try !Self.parse(Self.plain.replacingFirst("HTTP/1.1", "HTTP/1.0")).parser.canCarryAnotherRequest)
        // Bytes after the answer: the server is out of step with us.
        var parser = ResponseParser(method: .get)
        parser.append(Array((Self.plain + "HTTP/1.1").utf8))
        #expect(try parser.response() != nil)
        #expect(!parser.canCarryAnotherRequest)
    }

    @Test(arguments: [
        ("HTTP/2 200 OK\r\n\r\n", EPROTO, "not an HTTP status line"),
        ("HTTP/1.1 2xx OK\r\n\r\n", EPROTO, "not an HTTP status line"),
        ("HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n", EPROTO, "without a colon"),
        ("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", EPROTO, "bad Content-Length"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", EPROTO, "bad chunk size"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcd\r\n", EPROTO, "chunk without CRLF"),
    ])
    func malformedAnswers(text: String, errno: Int32, words: String) {
        let error = #expect(throws: SystemError.self) { try Self.parse(text) }
        #expect(error?.errno == errno)
        #expect(error?.call.contains(words) == true)
    }

    @Test func aHeadBeyondTheLimitIsRefused() {
        let text = "HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: HTTPClientCall.maximumHeadBytes)
        let error = #expect(throws: SystemError.self) { try Self.parse(text, piece: 4096) }
        #expect(error?.errno == EMSGSIZE)
    }

    /// Where the stream ended says what the caller may do: nothing received means
    /// a reused connection went stale, so an idempotent request may go again.
    @Test func anEndBeforeTheAnswerIsComplete() throws {
        var silent = ResponseParser(method: .get)
        let none = #expect(throws: SystemError.self) { try silent.finish() }
        #expect(none?.call.contains("before a response") == true)
        #expect(silent.received == 0)

        var (_, midHead, _) = try Self.parse("HTTP/1.1 200 OK\r\nContent-")
        #expect((#expect(throws: SystemError.self) { try midHead.finish() })?.call.contains("mid-head") == true)

        var (_, midBody, _) = try Self.parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        let error = #expect(throws: SystemError.self) { try midBody.finish() }
        #expect(error?.call.contains("mid-body") == true)
        #expect(error?.errno == ECONNRESET)
    }
}

extension String {
    fileprivate func replacingFirst(_ target: String, _ replacement: String) -> String {
        guard let range = range(of: target) else { return self }
        return replacingCharacters(in: range, with: replacement)
    }
}
