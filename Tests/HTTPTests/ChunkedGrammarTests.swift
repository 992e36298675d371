import Testing

@testable import HTTP

/// RFC 9112, section 7.1, read strictly: every line here is one a lenient parser (or a proxy)
/// could read differently, which is how a request is smuggled. Each is 400 and ends the parse.
@Suite struct ChunkedGrammarTests {
    static func chunked(_ body: String) -> String {
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + body
    }

    static let rejections: [RejectionCase] = [
        // White space ending a chunk-size line (llhttp: "Invalid character in chunk size").
        .init(name: "chunk size followed by a space", raw: chunked("a \r\n0123456789\r\n0\r\n\r\n"), status: 400),
        .init(name: "chunk size followed by a tab", raw: chunked("1\t\r\na\r\n0\r\n\r\n"), status: 400),
        .init(name: "last-chunk followed by a space", raw: chunked("0 \r\n\r\n"), status: 400),
        .init(name: "chunk extension value followed by a space", raw: chunked("1;a=b \r\na\r\n0\r\n\r\n"), status: 400),
        .init(name: "chunk extension name followed by a space", raw: chunked("1;a \r\na\r\n0\r\n\r\n"), status: 400),
        .init(
            name: "quoted chunk extension followed by a space", raw: chunked("1;a=\"b\" \r\na\r\n0\r\n\r\n"),
            status: 400),
        .init(name: "chunk extension without a name", raw: chunked("1; \r\na\r\n0\r\n\r\n"), status: 400),
        .init(name: "chunk extension with an empty value", raw: chunked("1;a=\r\na\r\n0\r\n\r\n"), status: 400),
        // CR and LF only as the line ending.
        .init(name: "CR inside a chunk-size line", raw: chunked("1\r;a\r\na\r\n0\r\n\r\n"), status: 400),
        .init(name: "CR inside a quoted chunk extension", raw: chunked("1;a=\"\r\"\r\na\r\n0\r\n\r\n"), status: 400),
        .init(name: "chunk data ended by a bare LF", raw: chunked("1\r\na\n0\r\n\r\n"), status: 400),
        .init(name: "chunk data ended by a bare CR", raw: chunked("1\r\na\r0\r\n\r\n"), status: 400),
        .init(name: "trailer line ending in a bare LF", raw: chunked("0\r\nX: a\n\r\n"), status: 400),
        .init(name: "trailer section ending in a bare LF", raw: chunked("0\r\nX: a\r\n\n"), status: 400),
        // Sizes are bare hex digits.
        .init(name: "0x prefix on a chunk size", raw: chunked("0x1\r\na\r\n0\r\n\r\n"), status: 400),
        .init(name: "plus sign on a chunk size", raw: chunked("+1\r\na\r\n0\r\n\r\n"), status: 400),
        .init(name: "chunk size with an underscore", raw: chunked("1_0\r\n"), status: 400),
        // Trailer fields are checked like header fields.
        .init(name: "trailer without colon", raw: chunked("0\r\nX\r\n\r\n"), status: 400),
        .init(name: "control character in a trailer value", raw: chunked("0\r\nX: a\u{1}b\r\n\r\n"), status: 400),
        .init(name: "white space before a trailer's colon", raw: chunked("0\r\nX : a\r\n\r\n"), status: 400),
    ]

    @Test(arguments: rejections)
    func rejects(_ row: RejectionCase) {
        let events = parse(row.raw, limits: row.limits)
        #expect(failureStatus(in: events) == row.status, "events: \(events)")
        #expect(requests(in: events).isEmpty)
    }

    @Test(arguments: rejections)
    func rejectsTheSameWhenFedByteByByte(_ row: RejectionCase) {
        let events = parse(Array(row.raw.utf8).map { [$0] }, limits: row.limits)
        #expect(failureStatus(in: events) == row.status, "events: \(events)")
        #expect(requests(in: events).isEmpty)
    }

    /// What the grammar does allow stays allowed: BWS before `;` and around `=`.
    @Test func whiteSpaceInsideChunkExtensionsIsAccepted() {
        let events = parse(Self.chunked("3 ; a = b\t;c ;d=\"x y\"\r\nabc\r\n0 ;z\r\nX: 1 \r\n\r\n"))
        #expect(failureStatus(in: events) == nil, "events: \(events)")
        #expect(requests(in: events).map(\.body) == [Array("abc".utf8)])
    }
}
