import Testing

@testable import HTTP

@Suite struct ResponseSerializerTests {
    let date = "Sun, 06 Nov 1994 08:49:37 GMT"

    func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func writesStatusLineFramingDateAndServer() {
        let response = Response(status: .ok, headers: ["Content-Type": "application/json"], body: Array("{}".utf8))
        let head = text(
            ResponseSerializer.head(response, requestMethod: .get, version: .http1_1, keepAlive: true, date: date))
        #expect(
            head
                == "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: \(date)\r\nServer: listd\r\nContent-Length: 2\r\n\r\n"
        )
    }

    @Test func headAnswersWithGETsLengthAndNoBody() {
        let response = Response(body: Array("hello".utf8))
        let get = ResponseSerializer.head(response, requestMethod: .get, version: .http1_1, keepAlive: true, date: date)
        let head = ResponseSerializer.head(
            response, requestMethod: .head, version: .http1_1, keepAlive: true, date: date)
        #expect(get == head)
        #expect(text(head).contains("Content-Length: 5\r\n"))
        #expect(!ResponseSerializer.hasBody(status: .ok, requestMethod: .head))
        #expect(ResponseSerializer.hasBody(status: .ok, requestMethod: .get))
    }

    @Test(arguments: [HTTPStatus.continue, .noContent, .notModified])
    func statusesWithoutBodiesHaveNoFraming(_ status: HTTPStatus) {
        let head = text(
            ResponseSerializer.head(
                Response(status: status), requestMethod: .get, version: .http1_1, keepAlive: true, date: date))
        #expect(!head.contains("Content-Length"))
        #expect(!head.contains("Transfer-Encoding"))
        #expect(head.hasPrefix("HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\n"))
        #expect(!ResponseSerializer.hasBody(status: status, requestMethod: .get))
    }

    @Test func connectionHandlingFollowsTheVersion() {
        func head(_ version: HTTPVersion, _ keepAlive: Bool) -> String {
            text(
                ResponseSerializer.head(
                    Response(), requestMethod: .get, version: version, keepAlive: keepAlive, date: date))
        }
        #expect(!head(.http1_1, true).contains("Connection"))
        #expect(head(.http1_1, false).contains("Connection: close\r\n"))
        #expect(head(.http1_0, true).contains("Connection: keep-alive\r\n"))
        #expect(head(.http1_0, false).contains("Connection: close\r\n"))
    }

    @Test func chunkedStreamsWithChunksAndALastChunk() {
        let head = text(
            ResponseSerializer.head(
                Response(), requestMethod: .get, version: .http1_1, keepAlive: true, chunked: true, date: date))
        #expect(head.contains("Transfer-Encoding: chunked\r\n"))
        #expect(!head.contains("Content-Length"))
        #expect(text(ResponseSerializer.chunk(Array("hello".utf8))) == "5\r\nhello\r\n")
        #expect(text(ResponseSerializer.chunk([UInt8](repeating: 0x61, count: 300))).hasPrefix("12c\r\n"))
        #expect(ResponseSerializer.chunk([]).isEmpty)
        #expect(text(ResponseSerializer.lastChunk) == "0\r\n\r\n")
        #expect(text(ResponseSerializer.continueLine) == "HTTP/1.1 100 Continue\r\n\r\n")
        #expect(ResponseSerializer.canChunk(version: .http1_1))
        #expect(!ResponseSerializer.canChunk(version: .http1_0))
    }

    @Test func chunkedOnHTTP10ClosesInstead() {
        let head = text(
            ResponseSerializer.head(
                Response(), requestMethod: .get, version: .http1_0, keepAlive: true, chunked: true, date: date))
        #expect(!head.contains("Transfer-Encoding"))
        #expect(!head.contains("Content-Length"))
        #expect(head.contains("Connection: close\r\n"))
    }

    @Test func handlerFramingFieldsAreReplacedAndValuesSanitized() {
        let response = Response(
            headers: [
                "Content-Length": "999", "transfer-encoding": "gzip", "Connection": "upgrade", "Date": "mine",
                "Server": "other", "X-Echo": "a\r\nSet-Cookie: evil", "Bad Name": "x",
            ],
            body: Array("abc".utf8))
        let head = text(
            ResponseSerializer.head(response, requestMethod: .post, version: .http1_1, keepAlive: true, date: date))
        #expect(
            head
                == "HTTP/1.1 200 OK\r\nDate: mine\r\nServer: other\r\nX-Echo: a  Set-Cookie: evil\r\nContent-Length: 3\r\n\r\n"
        )
    }

    @Test func headIsWellFormedLines() throws {
        let head = ResponseSerializer.head(
            Response(body: Array("xyz".utf8)), requestMethod: .get, version: .http1_1, keepAlive: false, date: date)
        let lines = text(head).components(separatedBy: "\r\n")
        #expect(lines.first == "HTTP/1.1 200 OK")
        #expect(lines.suffix(2) == ["", ""])
        #expect(lines.contains("Content-Length: 3"))
        #expect(lines.contains("Connection: close"))
    }
}

@Suite struct HTTPDateTests {
    @Test(arguments: [
        (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
        (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
        (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
        (1_709_164_800, "Thu, 29 Feb 2024 00:00:00 GMT"),
        (4_102_444_799, "Thu, 31 Dec 2099 23:59:59 GMT"),
        (-1, "Wed, 31 Dec 1969 23:59:59 GMT"),
        (-2_208_988_800, "Mon, 01 Jan 1900 00:00:00 GMT"),
    ])
    func formatsIMFFixdate(_ seconds: Int, _ expected: String) {
        #expect(HTTPDate.imfFixdate(secondsSince1970: seconds) == expected)
    }

    @Test func formatsEveryDayOfFourHundredYearsConsistently() {
        // Walking day by day, the day of month and weekday must advance like a calendar.
        var previousDay = 31
        var weekdayIndex = 3  // 1970-01-01 was a Thursday
        let weekdays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
        for day in stride(from: 0, to: 146_097, by: 1) {
            let text = HTTPDate.imfFixdate(secondsSince1970: day * 86_400 + 43_200)
            let dayOfMonth = Int(text.dropFirst(5).prefix(2)) ?? 0
            #expect(dayOfMonth == previousDay + 1 || (dayOfMonth == 1 && previousDay >= 28), "\(text)")
            #expect(text.hasPrefix(weekdays[weekdayIndex]), "\(text)")
            #expect(text.hasSuffix(" 12:00:00 GMT"))
            if dayOfMonth != previousDay + 1 && dayOfMonth != 1 { return }
            previousDay = dayOfMonth
            weekdayIndex = (weekdayIndex + 1) % 7
        }
    }

    @Test func cacheFormatsOncePerSecond() {
        var cache = HTTPDateCache()
        let first = cache.string(secondsSince1970: 784_111_777)
        #expect(first == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(cache.string(secondsSince1970: 784_111_777) == first)
        #expect(cache.string(secondsSince1970: 784_111_778) == "Sun, 06 Nov 1994 08:49:38 GMT")
    }
}
