import Testing

@testable import HTTP

/// One row of a parser table: a raw request and the status it must be refused with.
struct RejectionCase: Sendable, CustomTestStringConvertible {
    var name: String
    var raw: String
    var status: Int
    var limits = HTTPLimits()
    var testDescription: String { "\(name) → \(status)" }
}

/// One row of a parser table: a raw request the parser must accept.
struct AcceptanceCase: Sendable, CustomTestStringConvertible {
    var name: String
    var raw: String
    var testDescription: String { name }
}

private let host = "Host: example.com\r\n"

@Suite struct RequestParserTests {
    static let rejections: [RejectionCase] = [
        // Line endings and the request line
        .init(name: "bare LF ending the request line", raw: "GET / HTTP/1.1\n\(host)\r\n", status: 400),
        .init(name: "bare LF ending a field line", raw: "GET / HTTP/1.1\r\nHost: a\n\r\n", status: 400),
        .init(name: "bare LF ending the head", raw: "GET / HTTP/1.1\r\n\(host)\n", status: 400),
        .init(name: "bare CR inside a field value", raw: "GET / HTTP/1.1\r\n\(host)X: a\rb\r\n\r\n", status: 400),
        .init(name: "double space in request line", raw: "GET  / HTTP/1.1\r\n\(host)\r\n", status: 400),
        .init(name: "missing version", raw: "GET /\r\n\(host)\r\n", status: 400),
        .init(name: "trailing space after version", raw: "GET / HTTP/1.1 \r\n\(host)\r\n", status: 400),
        .init(name: "lower-case version", raw: "GET / http/1.1\r\n\(host)\r\n", status: 400),
        .init(name: "malformed version", raw: "GET / HTTP/1.x\r\n\(host)\r\n", status: 400),
        .init(name: "HTTP/2.0", raw: "GET / HTTP/2.0\r\n\(host)\r\n", status: 505),
        .init(name: "HTTP/0.9", raw: "GET / HTTP/0.9\r\n\r\n", status: 505),
        .init(name: "HTTP/1.2", raw: "GET / HTTP/1.2\r\n\(host)\r\n", status: 505),
        .init(name: "invalid token character in method", raw: "GE(T / HTTP/1.1\r\n\(host)\r\n", status: 400),
        .init(name: "empty method", raw: " / HTTP/1.1\r\n\(host)\r\n", status: 400),
        .init(name: "unknown method", raw: "BREW / HTTP/1.1\r\n\(host)\r\n", status: 501),
        .init(name: "CONNECT is not implemented", raw: "CONNECT / HTTP/1.1\r\n\(host)\r\n", status: 501),
        .init(name: "lower-case method is unknown", raw: "get / HTTP/1.1\r\n\(host)\r\n", status: 501),
        .init(name: "long unknown method before its line ends", raw: "PROPFINDX /", status: 501),
        .init(name: "absolute-form target", raw: "GET http://a/ HTTP/1.1\r\n\(host)\r\n", status: 400),
        .init(name: "authority-form target", raw: "GET a:80 HTTP/1.1\r\n\(host)\r\n", status: 400),
        .init(name: "asterisk target for GET", raw: "GET * HTTP/1.1\r\n\(host)\r\n", status: 400),
        .init(name: "fragment in target", raw: "GET /a#b HTTP/1.1\r\n\(host)\r\n", status: 400),
        .init(name: "malformed percent-escape", raw: "GET /a%zz HTTP/1.1\r\n\(host)\r\n", status: 400),
        .init(name: "truncated percent-escape", raw: "GET /a%2 HTTP/1.1\r\n\(host)\r\n", status: 400),
        .init(name: "control character in target", raw: "GET /a\u{1}b HTTP/1.1\r\n\(host)\r\n", status: 400),
        .init(name: "non-ASCII target", raw: "GET /é HTTP/1.1\r\n\(host)\r\n", status: 400),
        .init(
            name: "target over the limit",
            raw: "GET /\(String(repeating: "a", count: 8 * 1024)) HTTP/1.1\r\n\(host)\r\n",
            status: 414),
        .init(
            name: "target over the limit before its line ends",
            raw: "GET /\(String(repeating: "a", count: 8 * 1024 + 20))",
            status: 414),
        // Header fields
        .init(name: "obs-fold", raw: "GET / HTTP/1.1\r\n\(host)X: a\r\n b\r\n\r\n", status: 400),
        .init(name: "obs-fold with a tab", raw: "GET / HTTP/1.1\r\n\(host)X: a\r\n\tb\r\n\r\n", status: 400),
        .init(name: "white space before the first field", raw: "GET / HTTP/1.1\r\n \(host)\r\n", status: 400),
        .init(name: "space between name and colon", raw: "GET / HTTP/1.1\r\nHost : a\r\n\r\n", status: 400),
        .init(name: "tab between name and colon", raw: "GET / HTTP/1.1\r\n\(host)X\t: a\r\n\r\n", status: 400),
        .init(name: "invalid character in field name", raw: "GET / HTTP/1.1\r\n\(host)X(y): a\r\n\r\n", status: 400),
        .init(name: "empty field name", raw: "GET / HTTP/1.1\r\n\(host): a\r\n\r\n", status: 400),
        .init(name: "field line without colon", raw: "GET / HTTP/1.1\r\n\(host)Xyz\r\n\r\n", status: 400),
        .init(name: "NUL in field value", raw: "GET / HTTP/1.1\r\n\(host)X: a\u{0}b\r\n\r\n", status: 400),
        .init(name: "other CTL in field value", raw: "GET / HTTP/1.1\r\n\(host)X: a\u{1b}b\r\n\r\n", status: 400),
        .init(name: "DEL in field value", raw: "GET / HTTP/1.1\r\n\(host)X: a\u{7f}b\r\n\r\n", status: 400),
        .init(name: "HTTP/1.1 without Host", raw: "GET / HTTP/1.1\r\n\r\n", status: 400),
        .init(name: "two Host fields", raw: "GET / HTTP/1.1\r\n\(host)\(host)\r\n", status: 400),
        .init(name: "two Host fields on HTTP/1.0", raw: "GET / HTTP/1.0\r\n\(host)\(host)\r\n", status: 400),
        .init(name: "invalid Host", raw: "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", status: 400),
        .init(
            name: "too many fields",
            raw: "GET / HTTP/1.1\r\n\(host)" + String(repeating: "X: y\r\n", count: 100) + "\r\n",
            status: 431),
        .init(
            name: "head over the byte limit",
            raw: "GET / HTTP/1.1\r\n\(host)"
                + String(repeating: "X-Long: \(String(repeating: "v", count: 1000))\r\n", count: 17)
                + "\r\n",
            status: 431),
        .init(
            name: "head over the byte limit before it ends",
            raw: "GET / HTTP/1.1\r\n\(host)X: \(String(repeating: "v", count: 16 * 1024))", status: 431),
        // Framing
        .init(
            name: "Content-Length with Transfer-Encoding",
            raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            status: 400),
        .init(
            name: "differing Content-Length fields",
            raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", status: 400),
        .init(
            name: "differing Content-Length list", raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 3, 4\r\n\r\nabcd",
            status: 400),
        .init(
            name: "negative Content-Length", raw: "POST / HTTP/1.1\r\n\(host)Content-Length: -1\r\n\r\n", status: 400),
        .init(name: "signed Content-Length", raw: "POST / HTTP/1.1\r\n\(host)Content-Length: +1\r\n\r\na", status: 400),
        .init(
            name: "non-numeric Content-Length", raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 1a\r\n\r\n", status: 400
        ),
        .init(name: "hex Content-Length", raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 0x10\r\n\r\n", status: 400),
        .init(name: "empty Content-Length", raw: "POST / HTTP/1.1\r\n\(host)Content-Length:\r\n\r\n", status: 400),
        .init(
            name: "overflowing Content-Length",
            raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 99999999999999999999\r\n\r\n",
            status: 400),
        .init(
            name: "Content-Length over the body limit",
            raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 8388609\r\n\r\n", status: 413),
        .init(
            name: "unknown transfer coding", raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: gzip, chunked\r\n\r\n",
            status: 501),
        .init(
            name: "chunked not last", raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked, gzip\r\n\r\n",
            status: 400),
        .init(
            name: "chunked twice", raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked, chunked\r\n\r\n",
            status: 400),
        .init(
            name: "chunked twice in two fields",
            raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            status: 400),
        .init(
            name: "empty Transfer-Encoding", raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding:\r\n\r\n", status: 400),
        .init(
            name: "Transfer-Encoding on HTTP/1.0",
            raw: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            status: 400),
        .init(
            name: "unknown expectation", raw: "POST / HTTP/1.1\r\n\(host)Expect: 200-ok\r\nContent-Length: 1\r\n\r\na",
            status: 417),
        // Chunked bodies
        .init(
            name: "non-hex chunk size", raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\nxyz\r\n",
            status: 400),
        .init(
            name: "empty chunk size", raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n\r\n",
            status: 400),
        .init(
            name: "negative chunk size", raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n-1\r\n",
            status: 400),
        .init(
            name: "space before chunk size",
            raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n 1\r\na\r\n0\r\n\r\n",
            status: 400),
        .init(
            name: "overflowing chunk size",
            raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n10000000000000000\r\n", status: 400),
        .init(
            name: "chunk data longer than its size",
            raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n", status: 400),
        .init(
            name: "chunk size line ending in bare LF",
            raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n1\na\r\n0\r\n\r\n", status: 400),
        .init(
            name: "malformed chunk extension",
            raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n1;=x\r\na\r\n0\r\n\r\n", status: 400),
        .init(
            name: "unterminated quoted chunk extension",
            raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n1;a=\"x\r\na\r\n0\r\n\r\n", status: 400),
        .init(
            name: "chunk extensions over the line limit",
            raw:
                "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n1;\(String(repeating: "a", count: 1100))\r\n",
            status: 400),
        .init(
            name: "chunk-size line over the limit before it ends",
            raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n1;\(String(repeating: "a", count: 1100))",
            status: 400),
        .init(
            name: "chunked body over the limit",
            raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n800001\r\n", status: 413),
        .init(
            name: "chunked body over the limit in total",
            raw:
                "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n40\r\n\(String(repeating: "a", count: 0x40))\r\n41\r\n",
            status: 413, limits: HTTPLimits(maxBodyBytes: 128)),
        .init(
            name: "obs-fold in a trailer",
            raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n0\r\nX: a\r\n b\r\n\r\n", status: 400),
        .init(
            name: "trailer section over the limit",
            raw:
                "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n0\r\nX: \(String(repeating: "v", count: 16 * 1024))\r\n\r\n",
            status: 431),
    ]

    @Test(arguments: rejections)
    func rejects(_ row: RejectionCase) {
        let events = parse(row.raw, limits: row.limits)
        #expect(failureStatus(in: events) == row.status, "events: \(events)")
        #expect(requests(in: events).isEmpty)
    }

    @Test(arguments: rejections)
    func rejectsTheSameWhenFedByteByByte(_ row: RejectionCase) {
        let bytes = Array(row.raw.utf8)
        let events = parse(bytes.map { [$0] }, limits: row.limits)
        #expect(failureStatus(in: events) != nil, "events: \(events)")
        #expect(requests(in: events).isEmpty)
    }

    static let acceptances: [AcceptanceCase] = [
        .init(name: "simple GET", raw: "GET / HTTP/1.1\r\n\(host)\r\n"),
        .init(name: "HTTP/1.0 without Host", raw: "GET /x HTTP/1.0\r\n\r\n"),
        .init(name: "OPTIONS *", raw: "OPTIONS * HTTP/1.1\r\n\(host)\r\n"),
        .init(
            name: "every method",
            raw: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"].map {
                "\($0) / HTTP/1.1\r\n\(host)Content-Length: 0\r\n\r\n"
            }.joined()),
        .init(name: "empty lines before the request line", raw: "\r\n\r\nGET / HTTP/1.1\r\n\(host)\r\n"),
        .init(
            name: "identical Content-Length fields",
            raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc"),
        .init(name: "identical Content-Length list", raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 3 , 3\r\n\r\nabc"),
        .init(
            name: "Content-Length with leading zeros", raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 003\r\n\r\nabc"),
        .init(name: "obs-text in a field value", raw: "GET / HTTP/1.1\r\n\(host)X: caf\u{e9}\r\n\r\n"),
        .init(name: "empty field value", raw: "GET / HTTP/1.1\r\n\(host)X:\r\n\r\n"),
        .init(name: "empty Host on HTTP/1.1", raw: "GET / HTTP/1.1\r\nHost:\r\n\r\n"),
        .init(name: "IPv6 Host", raw: "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n"),
        .init(
            name: "chunked in upper case", raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: CHUNKED\r\n\r\n0\r\n\r\n"),
        .init(
            name: "chunk extensions",
            raw:
                "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n3 ; a=b;c ;d=\"x;\\\"y\"\r\nabc\r\n0;z\r\n\r\n"
        ),
        .init(
            name: "trailers",
            raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX-Sum: 1\r\nY: 2\r\n\r\n"),
        .init(name: "percent-escapes and query", raw: "GET /a%20b/c?x=1&y=%2F HTTP/1.1\r\n\(host)\r\n"),
    ]

    @Test(arguments: acceptances)
    func accepts(_ row: AcceptanceCase) {
        let events = parse(row.raw)
        #expect(failureStatus(in: events) == nil, "events: \(events)")
        #expect(!requests(in: events).isEmpty)
        let byteByByte = parse(Array(row.raw.utf8).map { [$0] })
        #expect(byteByByte == events)
    }

    @Test func parsesARequestWithItsParts() throws {
        let events = parse(
            "POST /lists/a%20b?x=1&y=2 HTTP/1.1\r\nHost: h\r\nX-Thing:  v  \r\nContent-Length: 5\r\n\r\nhello")
        #expect(events.count == 2)
        guard case .head(let head) = events.first else {
            Issue.record("expected a head first, got \(events)")
            return
        }
        let request = try #require(requests(in: events).first)
        #expect(
            head
                == ParsedRequest(
                    RequestHead(
                        method: .post, target: "/lists/a%20b?x=1&y=2",
                        headers: ["Host": "h", "X-Thing": "v", "Content-Length": "5"]),
                    body: []))
        #expect(request.method == "POST")
        #expect(request.target == "/lists/a%20b?x=1&y=2")
        #expect(request.path == "/lists/a%20b")
        #expect(request.query == "x=1&y=2")
        #expect(request.version == "HTTP/1.1")
        #expect(request.headers == [["Host", "h"], ["X-Thing", "v"], ["Content-Length", "5"]])
        #expect(request.body == Array("hello".utf8))
        #expect(request.keepAlive)
        #expect(!request.expectsContinue)
    }

    @Test func decodesChunkedBodiesAndDiscardsTrailers() throws {
        let raw =
            "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nA;x=y\r\n, world!!!\r\n0\r\nX-T: 1\r\n\r\n"
        let request = try #require(requests(in: parse(raw)).first)
        #expect(request.body == Array("hello, world!!!".utf8))
        #expect(!request.headers.contains { $0[0] == "X-T" })
    }

    @Test func keepAliveFollowsVersionAndConnection() throws {
        func keepAlive(_ raw: String) throws -> Bool {
            try #require(requests(in: parse(raw)).first).keepAlive
        }
        #expect(try keepAlive("GET / HTTP/1.1\r\n\(host)\r\n"))
        #expect(try !keepAlive("GET / HTTP/1.1\r\n\(host)Connection: close\r\n\r\n"))
        #expect(try !keepAlive("GET / HTTP/1.1\r\n\(host)Connection: Upgrade, CLOSE\r\n\r\n"))
        #expect(try !keepAlive("GET / HTTP/1.0\r\n\r\n"))
        #expect(try keepAlive("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"))
        #expect(try !keepAlive("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n"))
    }

    @Test func expectContinueComesWithTheHeadBeforeTheBody() throws {
        var parser = RequestParser()
        parser.append(Array("PUT /x HTTP/1.1\r\n\(host)Expect: 100-Continue\r\nContent-Length: 4\r\n\r\n".utf8))
        guard case .head(let head) = parser.next() else {
            Issue.record("expected a head")
            return
        }
        #expect(head.expectsContinue)
        #expect(parser.next() == nil)
        parser.append(Array("body".utf8))
        guard case .request(let request) = parser.next() else {
            Issue.record("expected the request")
            return
        }
        #expect(request.body == Array("body".utf8))
        #expect(parser.isIdle)
    }

    @Test func expectContinueIsIgnoredWithoutABodyOrOnHTTP10() throws {
        let noBody = try #require(requests(in: parse("GET / HTTP/1.1\r\n\(host)Expect: 100-continue\r\n\r\n")).first)
        #expect(!noBody.expectsContinue)
        let old = try #require(
            requests(in: parse("PUT / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\na")).first)
        #expect(!old.expectsContinue)
    }

    @Test func expectContinueOverTheBodyLimitFailsInsteadOfAHead() {
        let events = parse(
            "PUT / HTTP/1.1\r\n\(host)Expect: 100-continue\r\nContent-Length: 11\r\n\r\n",
            limits: HTTPLimits(maxBodyBytes: 10))
        #expect(events == [.failure(413)])
    }

    @Test func parsesPipelinedRequestsInOrder() {
        let raw =
            "GET /1 HTTP/1.1\r\n\(host)\r\nPOST /2 HTTP/1.1\r\n\(host)Content-Length: 2\r\n\r\nhiGET /3 HTTP/1.1\r\n\(host)\r\n"
        let events = parse(raw)
        #expect(requests(in: events).map(\.target) == ["/1", "/2", "/3"])
        #expect(events.count == 6)
        var parser = RequestParser()
        parser.append(Array(raw.utf8))
        _ = parser.next()
        _ = parser.next()
        #expect(parser.hasBufferedBytes)
        while parser.next() != nil {}
        #expect(!parser.hasBufferedBytes)
        #expect(parser.isIdle)
    }

    @Test func aFailedParserStaysDead() {
        var parser = RequestParser()
        parser.append(Array("GET / HTTP/1.1\r\n\r\n".utf8))
        guard case .failure(let error) = parser.next() else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.status == .badRequest)
        #expect(error.reason.contains("Host"))
        #expect(parser.hasFailed)
        parser.append(Array("GET / HTTP/1.1\r\n\(host)\r\n".utf8))
        #expect(parser.next() == nil)
        #expect(!parser.hasBufferedBytes)
    }

    @Test func releasesMemoryOnlyWhenIdle() {
        var parser = RequestParser()
        parser.append(Array("GET / HTTP/1.1\r\n".utf8))
        #expect(parser.next() == nil)
        #expect(!parser.isIdle)
        parser.releaseMemoryIfIdle()
        parser.append(Array("\(host)\r\n".utf8))
        #expect(requests(in: [parser.next(), parser.next()].compactMap { $0.map(summary) }).count == 1)
        #expect(parser.isIdle)
        parser.releaseMemoryIfIdle()
        parser.append(Array("GET /again HTTP/1.1\r\n\(host)\r\n".utf8))
        #expect(
            requests(in: [parser.next(), parser.next()].compactMap { $0.map(summary) }).map(\.target) == ["/again"])
    }

    @Test func acceptsAppendsFromRawBuffers() {
        var parser = RequestParser()
        let bytes = Array("GET /raw HTTP/1.1\r\n\(host)\r\n".utf8)
        bytes.withUnsafeBytes { parser.append($0) }
        _ = parser.next()
        guard case .request(let request) = parser.next() else {
            Issue.record("expected a request")
            return
        }
        #expect(request.path == "/raw")
    }

    @Test func bodyLimitAllowsExactlyTheLimit() {
        let limits = HTTPLimits(maxBodyBytes: 4)
        #expect(
            failureStatus(in: parse("PUT / HTTP/1.1\r\n\(host)Content-Length: 4\r\n\r\nabcd", limits: limits)) == nil)
        #expect(
            failureStatus(
                in: parse(
                    "PUT / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n2\r\nab\r\n2\r\ncd\r\n0\r\n\r\n",
                    limits: limits)) == nil)
        #expect(
            failureStatus(
                in: parse("PUT / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n2\r\nab\r\n3\r\n", limits: limits)
            ) == 413)
    }

    @Test func headLimitsCountExactly() {
        let limits = HTTPLimits(maxHeaderFields: 3)
        #expect(failureStatus(in: parse("GET / HTTP/1.1\r\n\(host)A: 1\r\nB: 2\r\n\r\n", limits: limits)) == nil)
        #expect(
            failureStatus(in: parse("GET / HTTP/1.1\r\n\(host)A: 1\r\nB: 2\r\nC: 3\r\n\r\n", limits: limits)) == 431)
        let head = "GET / HTTP/1.1\r\n\(host)\r\n"
        #expect(failureStatus(in: parse(head, limits: HTTPLimits(maxHeaderBytes: head.utf8.count))) == nil)
        #expect(failureStatus(in: parse(head, limits: HTTPLimits(maxHeaderBytes: head.utf8.count - 1))) == 431)
    }

    @Test func largeBodiesInManySmallReadsAreLinear() throws {
        // A 1 MiB body fed in 1 KiB reads: quadratic rescanning or copying would take minutes.
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: 1 << 20)
        var bytes = Array("PUT / HTTP/1.1\r\n\(host)Content-Length: \(body.count)\r\n\r\n".utf8) + body
        bytes += Array("GET / HTTP/1.1\r\n\(host)X: \(String(repeating: "y", count: 8000))\r\n\r\n".utf8)
        var chunks: [[UInt8]] = []
        var start = 0
        while start < bytes.count {
            chunks.append(Array(bytes[start..<min(start + 1024, bytes.count)]))
            start += 1024
        }
        let found = requests(in: parse(chunks))
        #expect(found.count == 2)
        #expect(try #require(found.first).body == body)
    }
}

private func summary(_ event: RequestParserEvent) -> ParsedEvent {
    switch event {
    case .head(let head): return .head(ParsedRequest(head, body: []))
    case .request(let request): return .request(ParsedRequest(request.head, body: request.body))
    case .failure(let error): return .failure(error.status.code)
    }
}
