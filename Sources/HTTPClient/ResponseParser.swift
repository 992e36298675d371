import Glibc
import HTTP
import POSIXIO

/// Frames one HTTP/1.1 response from bytes as they arrive, as a value with no I/O.
///
/// Why a value: ``HTTPClientLoop`` reads whatever a readable socket holds and
/// hands it here, so the framing rules (the status line, headers, a
/// `Content-Length`, chunked or read-to-close body, `100 Continue`) are tested
/// without sockets, and the loop only moves bytes. The rules and the error
/// texts are those of ``HTTPClientCall``'s blocking reader.
///
/// ```swift
/// var parser = ResponseParser(method: .get)
/// parser.append(bytes)
/// if let response = try parser.response() { … }  // nil: more bytes needed
/// ```
struct ResponseParser: Sendable {
    private enum Stage {
        /// Waiting for the whole head (up to its empty line).
        case head
        /// `remaining` body bytes to come.
        case body(remaining: Int)
        /// A chunk-size line is next.
        case chunkSize
        /// `remaining` bytes of a chunk, then its CRLF.
        case chunkData(remaining: Int)
        /// The trailer lines after the last chunk, up to the empty line.
        case trailers
        /// The body runs to the end of the stream.
        case toClose
        /// The response is complete.
        case done
    }

    /// The request's method: a `HEAD` answer has no body whatever its headers say.
    let method: HTTPMethod
    /// Bytes received so far: 0 means the server has said nothing yet.
    private(set) var received = 0
    private var buffer: [UInt8] = []
    private var position = 0
    /// Where the search for the head's end resumes, so a head arriving in many reads is scanned once.
    private var scanned = 0
    private var stage = Stage.head
    private var answer = HTTPClientCall.Response(status: .ok, headers: [:], body: [])
    /// Whether the body ran (or will run) to the end of the stream, or the server spoke HTTP/1.0.
    private var readToClose = false
    private var closed = false

    /// A parser for the answer to a `method` request.
    init(method: HTTPMethod) {
        self.method = method
    }

    /// Adds bytes read from the connection.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        received += bytes.count
        if position > 0 && position == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            scanned = 0
            position = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Adds bytes read from the connection.
    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// The response once all of it has arrived; `nil` while more bytes are needed.
    ///
    /// Throws a `SystemError` (EPROTO, EMSGSIZE) when the bytes are not an HTTP/1.1 response.
    mutating func response() throws(SystemError) -> HTTPClientCall.Response? {
        while true {
            switch stage {
            case .done:
                return answer
            case .head:
                guard let end = try headEnd() else { return nil }
                try parseHead(upTo: end)
            case .body(let remaining):
                guard buffer.count - position >= remaining else { return nil }
                answer.body = Array(buffer[position..<position + remaining])
                position += remaining
                stage = .done
            case .chunkSize:
                guard let line = try line(limit: 1024) else { return nil }
                let sizeLine = String(decoding: line, as: UTF8.self)
                let sizeText = sizeLine.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
                guard let size = Int(sizeText.trimmed(), radix: 16), size >= 0,
                    answer.body.count + size <= HTTPClientCall.maximumBodyBytes
                else { throw SystemError(call: "read (bad chunk size \(sizeLine.prefix(20)))", errno: EPROTO) }
                stage = size == 0 ? .trailers : .chunkData(remaining: size)
            case .chunkData(let remaining):
                // The chunk and its CRLF.
                guard buffer.count - position >= remaining + 2 else { return nil }
                guard buffer[position + remaining] == UInt8(ascii: "\r"),
                    buffer[position + remaining + 1] == UInt8(ascii: "\n")
                else { throw SystemError(call: "read (chunk without CRLF)", errno: EPROTO) }
                answer.body += buffer[position..<position + remaining]
                position += remaining + 2
                stage = .chunkSize
            case .trailers:
                guard let line = try line(limit: HTTPClientCall.maximumHeadBytes) else { return nil }
                if line.isEmpty { stage = .done }
            case .toClose:
                guard buffer.count - position <= HTTPClientCall.maximumBodyBytes else {
                    throw SystemError(call: "read (response body too large)", errno: EMSGSIZE)
                }
                return nil
            }
        }
    }

    /// The connection reached its end (a read returned 0): the response if the
    /// body ran to the end of the stream, else the error that says where it broke off.
    mutating func finish() throws(SystemError) -> HTTPClientCall.Response {
        closed = true
        if let complete = try response() { return complete }
        switch stage {
        case .toClose:
            answer.body = Array(buffer[position...])
            position = buffer.count
            stage = .done
            return answer
        case .head where received == 0:
            throw SystemError(call: "read (connection closed before a response)", errno: ECONNRESET)
        case .head:
            throw SystemError(call: "read (connection closed mid-head)", errno: ECONNRESET)
        default:
            throw SystemError(call: "read (connection closed mid-body)", errno: ECONNRESET)
        }
    }

    /// The status and headers (with an empty body) once ``takeBody()`` has framed
    /// the head, else `nil`: for a streamed answer, whose body is taken piece by piece.
    var head: HTTPClientCall.Response? {
        if case .head = stage { return nil }
        var head = answer
        head.body = []
        return head
    }

    /// The body bytes framed since the last call (chunked coding removed), and
    /// whether the body is complete; for a streamed answer, after ``head``.
    ///
    /// A chunk is handed on once all of it has arrived; a body that runs to the
    /// end of the stream as it arrives. Nothing is kept once taken, so a stream
    /// may run for ever in bounded memory.
    mutating func takeBody() throws(SystemError) -> (bytes: [UInt8], complete: Bool) {
        let complete = try response() != nil
        var bytes = answer.body
        answer.body = []
        if case .toClose = stage, position < buffer.count {
            bytes += buffer[position...]
            position = buffer.count
        }
        return (bytes, complete)
    }

    /// The connection reached its end while a streamed body was read: the bytes
    /// framed since the last ``takeBody()``, or the error when the body broke off.
    mutating func finishBody() throws(SystemError) -> [UInt8] {
        closed = true
        let (bytes, complete) = try takeBody()
        if complete { return bytes }
        if case .toClose = stage {
            stage = .done
            return bytes
        }
        throw SystemError(call: "read (connection closed mid-body)", errno: ECONNRESET)
    }

    /// Whether the connection may carry the next request: the response was
    /// framed, nothing follows it, and neither side asked to close.
    var canCarryAnotherRequest: Bool {
        guard case .done = stage, !closed, !readToClose, position == buffer.count else { return false }
        for value in answer.headers.values(for: "Connection") {
            for token in value.split(separator: ",") where token.trimmed().lowercased() == "close" { return false }
        }
        return true
    }

    /// The index just past the head's empty line, or nil when it has not all arrived.
    private mutating func headEnd() throws(SystemError) -> Int? {
        let lineFeed = UInt8(ascii: "\n")
        var index = max(position, scanned)
        while index < buffer.count {
            if buffer[index] == lineFeed {
                // An empty line: LF right after the previous LF, or after a CR that follows it.
                if index > position && buffer[index - 1] == lineFeed { return index + 1 }
                if index > position + 1 && buffer[index - 1] == UInt8(ascii: "\r")
                    && buffer[index - 2] == lineFeed
                {
                    return index + 1
                }
            }
            index += 1
        }
        // Keep the last two bytes unscanned: they may start the empty line.
        scanned = max(position, buffer.count - 2)
        guard buffer.count - position <= HTTPClientCall.maximumHeadBytes else {
            throw SystemError(call: "read (response head too large)", errno: EMSGSIZE)
        }
        return nil
    }

    /// Parses the status line and headers in `buffer[position..<end]` and picks the body's framing.
    ///
    /// Works on the bytes in place (no array of lines, no split strings): the
    /// loop's one thread frames every answer of a write's wake-up in a row.
    private mutating func parseHead(upTo end: Int) throws(SystemError) {
        guard end - position <= HTTPClientCall.maximumHeadBytes else {
            throw SystemError(call: "read (response head too large)", errno: EMSGSIZE)
        }
        var lineStart = position
        position = end
        scanned = end
        var status: (code: Int, reason: String, http10: Bool)?
        var headers = HTTPHeaders()
        headers.reserveCapacity(8)
        for index in lineStart..<end where buffer[index] == UInt8(ascii: "\n") {
            var lineEnd = index
            if lineEnd > lineStart && buffer[lineEnd - 1] == UInt8(ascii: "\r") { lineEnd -= 1 }
            defer { lineStart = index + 1 }
            if status == nil {
                status = try statusLine(lineStart..<lineEnd)
            } else if lineEnd > lineStart {
                guard let colon = buffer[lineStart..<lineEnd].firstIndex(of: UInt8(ascii: ":")) else {
                    throw SystemError(call: "read (a header line without a colon)", errno: EPROTO)
                }
                var valueStart = colon + 1
                var valueEnd = lineEnd
                while valueStart < valueEnd && Self.isBlank(buffer[valueStart]) { valueStart += 1 }
                while valueEnd > valueStart && Self.isBlank(buffer[valueEnd - 1]) { valueEnd -= 1 }
                headers.add(
                    name: String(decoding: buffer[lineStart..<colon], as: UTF8.self),
                    value: String(decoding: buffer[valueStart..<valueEnd], as: UTF8.self))
            }
        }
        guard let (code, reason, http10) = status else {
            throw SystemError(call: "read (not an HTTP status line)", errno: EPROTO)
        }
        if code == 100 {
            // An interim answer: the real one follows.
            stage = .head
            return
        }
        answer = HTTPClientCall.Response(
            status: HTTPStatus(code: code, reasonPhrase: reason), headers: headers, body: [])
        if http10 { readToClose = true }
        if method == .head || code == 204 || code == 304 || code < 200 {
            stage = .done
        } else if headers["Transfer-Encoding"]?.lowercased().contains("chunked") == true {
            stage = .chunkSize
        } else if let lengthText = headers["Content-Length"] {
            guard let length = Int(lengthText), length >= 0, length <= HTTPClientCall.maximumBodyBytes else {
                throw SystemError(call: "read (bad Content-Length \(lengthText.prefix(20)))", errno: EPROTO)
            }
            stage = .body(remaining: length)
        } else {
            readToClose = true
            stage = .toClose
        }
    }

    /// `HTTP/1.x CODE [REASON]`: the code, the reason phrase and whether the server speaks HTTP/1.0.
    private func statusLine(_ line: Range<Int>) throws(SystemError) -> (code: Int, reason: String, http10: Bool) {
        let prefix = "HTTP/1.".utf8
        let space = UInt8(ascii: " ")
        var index = line.lowerBound
        guard line.count > prefix.count, buffer[index..<index + prefix.count].elementsEqual(prefix),
            let versionEnd = buffer[index..<line.upperBound].firstIndex(of: space)
        else { throw SystemError(call: "read (not an HTTP status line)", errno: EPROTO) }
        let http10 = versionEnd - index == prefix.count + 1 && buffer[index + prefix.count] == UInt8(ascii: "0")
        index = versionEnd
        while index < line.upperBound && buffer[index] == space { index += 1 }
        var code = 0
        var digits = 0
        while index < line.upperBound && buffer[index] != space {
            let digit = Int(buffer[index]) - Int(UInt8(ascii: "0"))
            guard (0...9).contains(digit), digits < 3 else {
                throw SystemError(call: "read (not an HTTP status line)", errno: EPROTO)
            }
            code = code * 10 + digit
            digits += 1
            index += 1
        }
        guard digits == 3, code >= 100 else { throw SystemError(call: "read (not an HTTP status line)", errno: EPROTO) }
        while index < line.upperBound && buffer[index] == space { index += 1 }
        return (code, String(decoding: buffer[index..<line.upperBound], as: UTF8.self), http10)
    }

    private static func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }

    /// The next line without its CRLF, or nil when it has not all arrived.
    private mutating func line(limit: Int) throws(SystemError) -> ArraySlice<UInt8>? {
        guard let end = buffer[position...].firstIndex(of: UInt8(ascii: "\n")) else {
            guard buffer.count - position <= limit else {
                throw SystemError(call: "read (response head too large)", errno: EMSGSIZE)
            }
            return nil
        }
        var line = buffer[position..<end]
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        position = end + 1
        return line
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    fileprivate func trimmed() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return String(slice)
    }
}
