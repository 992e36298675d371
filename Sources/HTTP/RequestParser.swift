/// An incremental HTTP/1.1 request parser: a value-type state machine fed arbitrary byte slices.
///
/// Feed it whatever each read returned with ``append(_:)-(UnsafeRawBufferPointer)``, then call
/// ``next()`` until it returns nil. Every request yields ``RequestParserEvent/head(_:)`` when
/// its head is complete and valid, then ``RequestParserEvent/request(_:)`` with its whole body,
/// or ``RequestParserEvent/failure(_:)``, after which the parser is dead and returns nil.
/// Pipelined requests in one buffer come out one after another.
///
/// The parser is strict (RFC 9110 and 9112), because a lenient reading that differs from a
/// proxy's is how request smuggling works. Decisions where the RFCs leave a choice:
/// - Lines end with CRLF only; a bare LF is 400, as is a CR anywhere else.
/// - Empty lines (CRLF) before a request line are skipped (RFC 9112, section 2.2).
/// - The request line is exactly `method SP target SP HTTP/d.d`; methods are GET, HEAD, POST,
///   PUT, PATCH, DELETE and OPTIONS, any other token is 501. Versions other than 1.0 and 1.1
///   are 505.
/// - The target must be origin-form (`/…`, with valid percent-escapes and no fragment), or `*`
///   for OPTIONS only; absolute-form and authority-form are 400, since listd is no proxy.
/// - `Content-Length` may repeat (as fields or as a list) only with identical values.
/// - `Transfer-Encoding` may only be `chunked`, once, last: another coding is 501, `chunked`
///   twice or not last is 400, and so is any `Transfer-Encoding` on HTTP/1.0 or together with
///   `Content-Length`.
/// - `Expect: 100-continue` sets ``RequestHead/expectsContinue`` on HTTP/1.1 when a body
///   follows (HTTP/1.0 ignores it); any other expectation is 417.
/// - Chunk extensions are checked for syntax and ignored, and a chunk-size line may not end in
///   white space (`a \r\n` is 400, and the connection closes); the line is bounded by
///   ``HTTPLimits/maxChunkLineBytes``. Trailer fields are checked like header fields, bounded
///   by the header limits, and discarded: they arrive after the handler's inputs are fixed, and
///   merging them would let a client smuggle fields past checks made on the head.
///
/// - Complexity: O(n) in the bytes received, however they are split: scanning resumes where
///   the last call stopped, and consumed bytes are dropped in amortised O(1) per byte.
public struct RequestParser: Sendable {
    private enum State: Sendable, Equatable {
        case requestLine
        case headers
        case body(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers(bytes: Int, fields: Int)
        case complete
        case dead
    }

    /// What is known about the head while its lines arrive.
    private struct Scratch: Sendable {
        var method = HTTPMethod.get
        var target = ""
        var path = ""
        var query: String?
        var version = HTTPVersion.http1_1
        var headers = HTTPHeaders()
        var headBytes = 0
        var contentLength: Int?
        var hostCount = 0
        var transferCodings = 0
        var chunkedCount = 0
        var lastCodingIsChunked = false
        var unknownCoding: String?
        var connectionClose = false
        var connectionKeepAlive = false
        var expectContinue = false
        var unknownExpectation: String?
    }

    private let limits: HTTPLimits
    private var buffer: [UInt8] = []
    /// The first byte not yet consumed.
    private var position = 0
    /// Where the search for the next line feed resumes; bytes before it hold none.
    private var scanFrom = 0
    private var state = State.requestLine
    private var scratch = Scratch()
    /// The head of the request whose body is being read; a shared placeholder in between, so
    /// an idle parser holds no strings of the last request.
    private var head = RequestParser.placeholderHead
    private static let placeholderHead = RequestHead(method: .get, target: "/")
    private var body: [UInt8] = []
    private var bodyTotal = 0

    /// Creates a parser enforcing `limits`.
    public init(limits: HTTPLimits = HTTPLimits()) {
        self.limits = limits
    }

    /// Copies received bytes into the parser's buffer.
    ///
    /// Bytes after a failure are ignored. Consumed bytes are dropped first, once they are at
    /// least half the buffer, so the buffer holds only what is still to be parsed.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard state != .dead, !bytes.isEmpty else { return }
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Copies received bytes into the parser's buffer.
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// The next event, or nil when more input is needed. After a failure the parser is dead
    /// and returns nil forever.
    public mutating func next() -> RequestParserEvent? {
        let bytes = buffer
        // `bytes` shares the buffer's storage; `step` never writes `buffer`, so nothing is copied.
        return bytes.withUnsafeBytes { raw in
            while true {
                switch step(raw) {
                case .needMore: return nil
                case .again: continue
                case .event(let event): return event
                }
            }
        }
    }

    /// Whether unparsed bytes (for example pipelined requests) are waiting.
    public var hasBufferedBytes: Bool { position < buffer.count }

    /// Whether the parser is between requests with nothing buffered.
    public var isIdle: Bool { state == .requestLine && position == buffer.count }

    /// Whether a failure was reported; the parser then ignores all input.
    public var hasFailed: Bool { state == .dead }

    /// Gives back the buffer's capacity while a connection idles or parks, so an idle
    /// connection costs no buffer memory. Does nothing unless ``isIdle``.
    public mutating func releaseMemoryIfIdle() {
        guard isIdle else { return }
        buffer = []
        body = []
        position = 0
        scanFrom = 0
    }

    private mutating func compact() {
        if position == buffer.count {
            // Keep a small buffer for the next read; give back what a large body grew it to.
            buffer.removeAll(keepingCapacity: buffer.capacity <= 64 * 1024)
            scanFrom = 0
            position = 0
        } else if position > 0 && position >= buffer.count / 2 {
            buffer.removeSubrange(0..<position)
            scanFrom -= position
            position = 0
        }
    }

    // MARK: - The state machine

    private enum Step {
        case needMore
        case again
        case event(RequestParserEvent)
    }

    private mutating func fail(_ status: HTTPStatus, _ reason: String) -> Step {
        state = .dead
        buffer = []
        body = []
        position = 0
        scanFrom = 0
        scratch = Scratch()
        return .event(.failure(HTTPParseError(status: status, reason: reason)))
    }

    private mutating func step(_ raw: UnsafeRawBufferPointer) -> Step {
        switch state {
        case .dead:
            return .needMore

        case .requestLine:
            guard let lineFeed = findLineFeed(raw) else { return checkPartialRequestLine(raw) }
            guard lineFeed > position, raw[lineFeed - 1] == ASCII.cr else {
                return fail(.badRequest, "line ending without carriage return (bare LF)")
            }
            let line = UnsafeRawBufferPointer(rebasing: raw[position..<(lineFeed - 1)])
            let length = lineFeed + 1 - position
            position = lineFeed + 1
            if line.isEmpty { return .again }  // an empty line before the request line
            scratch.headBytes = length
            if length > limits.maxHeaderBytes {
                return fail(.requestHeaderFieldsTooLarge, "request head is over \(limits.maxHeaderBytes) bytes")
            }
            if let failure = parseRequestLine(line) { return failure }
            state = .headers
            return .again

        case .headers:
            guard let lineFeed = findLineFeed(raw) else {
                if scratch.headBytes + (raw.count - position) > limits.maxHeaderBytes {
                    return fail(.requestHeaderFieldsTooLarge, "request head is over \(limits.maxHeaderBytes) bytes")
                }
                return .needMore
            }
            guard lineFeed > position, raw[lineFeed - 1] == ASCII.cr else {
                return fail(.badRequest, "line ending without carriage return (bare LF)")
            }
            let line = UnsafeRawBufferPointer(rebasing: raw[position..<(lineFeed - 1)])
            scratch.headBytes += lineFeed + 1 - position
            position = lineFeed + 1
            if scratch.headBytes > limits.maxHeaderBytes {
                return fail(.requestHeaderFieldsTooLarge, "request head is over \(limits.maxHeaderBytes) bytes")
            }
            if line.isEmpty { return finishHead() }
            if scratch.headers.count >= limits.maxHeaderFields {
                return fail(.requestHeaderFieldsTooLarge, "more than \(limits.maxHeaderFields) header fields")
            }
            return parseHeaderField(line, store: true) ?? .again

        case .body(let remaining):
            let available = raw.count - position
            if body.isEmpty && available >= remaining {
                body = Array(UnsafeRawBufferPointer(rebasing: raw[position..<(position + remaining)]))
                position += remaining
                return completeRequest()
            }
            let take = min(available, remaining)
            guard take > 0 else { return .needMore }
            if body.isEmpty { body.reserveCapacity(min(remaining, 64 * 1024)) }
            body.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[position..<(position + take)]))
            position += take
            if take == remaining { return completeRequest() }
            state = .body(remaining: remaining - take)
            return .needMore

        case .chunkSize:
            guard let lineFeed = findLineFeed(raw) else {
                if raw.count - position > limits.maxChunkLineBytes {
                    return fail(.badRequest, "chunk-size line is over \(limits.maxChunkLineBytes) bytes")
                }
                return .needMore
            }
            guard lineFeed > position, raw[lineFeed - 1] == ASCII.cr else {
                return fail(.badRequest, "chunk-size line without carriage return (bare LF)")
            }
            if lineFeed + 1 - position > limits.maxChunkLineBytes {
                return fail(.badRequest, "chunk-size line is over \(limits.maxChunkLineBytes) bytes")
            }
            let line = UnsafeRawBufferPointer(rebasing: raw[position..<(lineFeed - 1)])
            position = lineFeed + 1
            return parseChunkSize(line)

        case .chunkData(let remaining):
            let take = min(raw.count - position, remaining)
            guard take > 0 else { return .needMore }
            body.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[position..<(position + take)]))
            position += take
            state = take == remaining ? .chunkDataEnd : .chunkData(remaining: remaining - take)
            return take == remaining ? .again : .needMore

        case .chunkDataEnd:
            guard raw.count - position >= 2 else {
                if raw.count > position && raw[position] != ASCII.cr {
                    return fail(.badRequest, "chunk data is longer than its chunk size")
                }
                return .needMore
            }
            guard raw[position] == ASCII.cr, raw[position + 1] == ASCII.lf else {
                return fail(.badRequest, "chunk data is longer than its chunk size")
            }
            position += 2
            scanFrom = position
            state = .chunkSize
            return .again

        case .trailers(let bytes, let fields):
            guard let lineFeed = findLineFeed(raw) else {
                if bytes + (raw.count - position) > limits.maxHeaderBytes {
                    return fail(.requestHeaderFieldsTooLarge, "trailer section is over \(limits.maxHeaderBytes) bytes")
                }
                return .needMore
            }
            guard lineFeed > position, raw[lineFeed - 1] == ASCII.cr else {
                return fail(.badRequest, "line ending without carriage return (bare LF)")
            }
            let line = UnsafeRawBufferPointer(rebasing: raw[position..<(lineFeed - 1)])
            let total = bytes + lineFeed + 1 - position
            position = lineFeed + 1
            if total > limits.maxHeaderBytes {
                return fail(.requestHeaderFieldsTooLarge, "trailer section is over \(limits.maxHeaderBytes) bytes")
            }
            if line.isEmpty { return completeRequest() }
            if fields >= limits.maxHeaderFields {
                return fail(.requestHeaderFieldsTooLarge, "more than \(limits.maxHeaderFields) trailer fields")
            }
            if let failure = parseHeaderField(line, store: false) { return failure }
            state = .trailers(bytes: total, fields: fields + 1)
            return .again

        case .complete:
            return completeRequest()
        }
    }

    /// Drops the request whose head ``next()`` just reported, when no body follows it, so the
    /// next event is the next request's; the server does this when it refuses a request on its
    /// head. Returns false, and changes nothing, when a body follows: its bytes could only be
    /// skipped by reading them, so the caller must close the connection instead.
    public mutating func skipBodylessRequest() -> Bool {
        guard state == .complete else { return false }
        head = RequestParser.placeholderHead
        body = []
        bodyTotal = 0
        scanFrom = position
        state = .requestLine
        return true
    }

    /// Hands out the finished request and gets ready for the next one.
    private mutating func completeRequest() -> Step {
        let request = Request(head: head, body: body)
        head = RequestParser.placeholderHead
        body = []
        bodyTotal = 0
        scanFrom = position
        state = .requestLine
        return .event(.request(request))
    }

    /// Finds the next line feed at or after `scanFrom`, remembering how far it looked.
    ///
    /// Scans eight bytes at a time: a word has a zero byte after XOR with LFs exactly when the
    /// classic `(x - 0x01…) & ~x & 0x80…` test says so.
    private mutating func findLineFeed(_ raw: UnsafeRawBufferPointer) -> Int? {
        var index = max(scanFrom, position)
        let end = raw.count
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let lineFeeds: UInt64 = 0x0A0A_0A0A_0A0A_0A0A
        while index + 8 <= end {
            // Little-endian order puts the first byte lowest, so the lowest flag is the first LF;
            // the borrow can only raise false flags above a real one.
            let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)) ^ lineFeeds
            let found = (word &- ones) & ~word & highs
            if found != 0 {
                let lineFeed = index + found.trailingZeroBitCount / 8
                scanFrom = lineFeed + 1
                return lineFeed
            }
            index += 8
        }
        while index < end {
            if raw[index] == ASCII.lf {
                scanFrom = index + 1
                return index
            }
            index += 1
        }
        scanFrom = end
        return nil
    }

    // MARK: - Request line

    /// Refuses a request line that can no longer become valid, before its end has arrived, so
    /// a client cannot make the server buffer an endless first line.
    private mutating func checkPartialRequestLine(_ raw: UnsafeRawBufferPointer) -> Step {
        let pending = raw.count - position
        if pending > limits.maxHeaderBytes {
            return fail(.requestHeaderFieldsTooLarge, "request head is over \(limits.maxHeaderBytes) bytes")
        }
        // The longest method is OPTIONS: a space must come within its length plus one.
        let methodWindow = min(pending, 8)
        var space: Int?
        for offset in 0..<methodWindow where raw[position + offset] == ASCII.space {
            space = offset
            break
        }
        guard let methodLength = space else {
            if pending >= 8 {
                let prefix = UnsafeRawBufferPointer(rebasing: raw[position..<(position + 8)])
                return prefix.allSatisfy(ASCII.isToken)
                    ? fail(.notImplemented, "unknown request method")
                    : fail(.badRequest, "invalid character in request method")
            }
            return .needMore
        }
        // Method, space, target, space, "HTTP/1.1" and CR: anything longer cannot be valid.
        // Only the pending length is compared here, so byte-by-byte input stays linear.
        guard pending > methodLength + 1 + limits.maxRequestTargetBytes + 10 else { return .needMore }
        let targetStart = position + methodLength + 1
        let targetEnd = raw[targetStart...].firstIndex(of: ASCII.space) ?? raw.count
        if targetEnd - targetStart > limits.maxRequestTargetBytes {
            return fail(.uriTooLong, "request-target is over \(limits.maxRequestTargetBytes) bytes")
        }
        return fail(.badRequest, "malformed request line")
    }

    private mutating func parseRequestLine(_ line: UnsafeRawBufferPointer) -> Step? {
        guard let firstSpace = line.firstIndex(of: ASCII.space) else {
            return fail(.badRequest, "malformed request line")
        }
        let methodBytes = UnsafeRawBufferPointer(rebasing: line[0..<firstSpace])
        guard !methodBytes.isEmpty, methodBytes.allSatisfy(ASCII.isToken) else {
            return fail(.badRequest, "invalid character in request method")
        }
        let rest = line[(firstSpace + 1)...]
        guard let secondSpace = rest.firstIndex(of: ASCII.space) else {
            if rest.count > limits.maxRequestTargetBytes {
                return fail(.uriTooLong, "request-target is over \(limits.maxRequestTargetBytes) bytes")
            }
            return fail(.badRequest, "malformed request line")
        }
        let targetBytes = UnsafeRawBufferPointer(rebasing: line[(firstSpace + 1)..<secondSpace])
        if targetBytes.count > limits.maxRequestTargetBytes {
            return fail(.uriTooLong, "request-target is over \(limits.maxRequestTargetBytes) bytes")
        }
        let versionBytes = UnsafeRawBufferPointer(rebasing: line[(secondSpace + 1)...])

        guard let version = Self.parseVersion(versionBytes) else {
            return fail(.badRequest, "malformed HTTP version")
        }
        let method = Self.knownMethod(methodBytes)
        let isAsterisk = targetBytes.count == 1 && targetBytes[0] == UInt8(ascii: "*")
        if !isAsterisk, let reason = Self.originFormProblem(targetBytes) {
            return fail(.badRequest, reason)
        }
        guard version == .http1_1 || version == .http1_0 else {
            return fail(.httpVersionNotSupported, "HTTP/\(version.major).\(version.minor) is not supported")
        }
        guard let method else {
            return fail(.notImplemented, "method \(String(decoding: methodBytes, as: UTF8.self)) is not supported")
        }
        if isAsterisk && method != .options {
            return fail(.badRequest, "request-target * is only allowed with OPTIONS")
        }

        scratch.method = method
        scratch.version = version
        scratch.target = String(decoding: targetBytes, as: UTF8.self)
        if let mark = targetBytes.firstIndex(of: UInt8(ascii: "?")) {
            scratch.path = String(decoding: targetBytes[..<mark], as: UTF8.self)
            scratch.query = String(decoding: targetBytes[(mark + 1)...], as: UTF8.self)
        } else {
            scratch.path = scratch.target
            scratch.query = nil
        }
        return nil
    }

    /// `HTTP/d.d`, or nil when the bytes are not a version at all.
    private static func parseVersion(_ bytes: UnsafeRawBufferPointer) -> HTTPVersion? {
        guard bytes.count == 8, bytes[0] == UInt8(ascii: "H"), bytes[1] == UInt8(ascii: "T"),
            bytes[2] == UInt8(ascii: "T"), bytes[3] == UInt8(ascii: "P"), bytes[4] == UInt8(ascii: "/"),
            bytes[6] == UInt8(ascii: ".")
        else { return nil }
        let major = bytes[5] &- UInt8(ascii: "0")
        let minor = bytes[7] &- UInt8(ascii: "0")
        guard major < 10, minor < 10 else { return nil }
        return HTTPVersion(major: Int(major), minor: Int(minor))
    }

    /// The shared constant for a supported method (so no string is built), or nil.
    private static func knownMethod(_ bytes: UnsafeRawBufferPointer) -> HTTPMethod? {
        func matches(_ name: StaticString) -> Bool {
            bytes.count == name.utf8CodeUnitCount && memcmpEqual(bytes, name)
        }
        switch bytes.count {
        case 3:
            if matches("GET") { return .get }
            if matches("PUT") { return .put }
        case 4:
            if matches("POST") { return .post }
            if matches("HEAD") { return .head }
        case 5:
            if matches("PATCH") { return .patch }
        case 6:
            if matches("DELETE") { return .delete }
        case 7:
            if matches("OPTIONS") { return .options }
        default:
            break
        }
        return nil
    }

    private static func memcmpEqual(_ bytes: UnsafeRawBufferPointer, _ name: StaticString) -> Bool {
        let other = name.utf8Start
        for index in 0..<bytes.count where bytes[index] != other[index] { return false }
        return true
    }

    /// Why `bytes` is not an origin-form target (RFC 9112, section 3.2.1), or nil if it is.
    private static func originFormProblem(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard bytes.first == UInt8(ascii: "/") else {
            return bytes.isEmpty ? "empty request-target" : "request-target is not in origin-form"
        }
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            guard ASCII.isTargetByte(byte) else { return "invalid character in request-target" }
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, ASCII.hexValue(bytes[index + 1]) != nil,
                    ASCII.hexValue(bytes[index + 2]) != nil
                else { return "malformed percent-encoding in request-target" }
                index += 3
            } else {
                index += 1
            }
        }
        return nil
    }

    // MARK: - Header fields

    /// Checks one field line; stores it (and notes the fields that frame the message) when
    /// `store`, which trailer fields are not.
    private mutating func parseHeaderField(_ line: UnsafeRawBufferPointer, store: Bool) -> Step? {
        let first = line[0]
        if first == ASCII.space || first == ASCII.tab {
            return fail(.badRequest, "obsolete line folding (a field line starting with white space)")
        }
        var colon = 0
        while colon < line.count && ASCII.isToken(line[colon]) { colon += 1 }
        guard colon < line.count, line[colon] == ASCII.colon else {
            if colon < line.count && (line[colon] == ASCII.space || line[colon] == ASCII.tab) {
                return fail(.badRequest, "white space between field name and colon")
            }
            return fail(
                .badRequest, colon < line.count ? "invalid character in field name" : "field line without colon")
        }
        guard colon > 0 else { return fail(.badRequest, "empty field name") }
        var start = colon + 1
        var end = line.count
        while start < end && (line[start] == ASCII.space || line[start] == ASCII.tab) { start += 1 }
        while end > start && (line[end - 1] == ASCII.space || line[end - 1] == ASCII.tab) { end -= 1 }
        guard ASCII.isValidFieldValue(UnsafeRawBufferPointer(rebasing: line[start..<end])) else {
            return fail(.badRequest, "control character in field value")
        }
        guard store else { return nil }
        let name = UnsafeRawBufferPointer(rebasing: line[0..<colon])
        let value = UnsafeRawBufferPointer(rebasing: line[start..<end])
        if let failure = noteFramingField(name: name, value: value) { return failure }
        if scratch.headers.isEmpty { scratch.headers.reserveCapacity(8) }
        scratch.headers.add(
            name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self))
        return nil
    }

    /// Records what the fields that decide framing and connection handling say.
    private mutating func noteFramingField(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Step? {
        switch name.count {
        case 4 where ASCII.equalsLowercase(name, "host"):
            scratch.hostCount += 1
            if scratch.hostCount > 1 { return fail(.badRequest, "more than one Host field") }
            for byte in value where !Self.isHostByte(byte) {
                return fail(.badRequest, "invalid character in Host")
            }
        case 14 where ASCII.equalsLowercase(name, "content-length"):
            var problem: String?
            Self.forEachListElement(value) { element in
                guard let length = Self.parseDecimal(element) else {
                    problem = "Content-Length is not a non-negative decimal number"
                    return false
                }
                if let known = scratch.contentLength, known != length {
                    problem = "differing Content-Length values"
                    return false
                }
                scratch.contentLength = length
                return true
            }
            if let problem { return fail(.badRequest, problem) }
        case 17 where ASCII.equalsLowercase(name, "transfer-encoding"):
            var sawElement = false
            var invalid = false
            Self.forEachListElement(value) { coding in
                if coding.isEmpty { return true }  // empty list elements are ignored (RFC 9110, 5.6.1)
                sawElement = true
                scratch.transferCodings += 1
                if ASCII.equalsLowercase(coding, "chunked") {
                    scratch.chunkedCount += 1
                    scratch.lastCodingIsChunked = true
                    return true
                }
                scratch.lastCodingIsChunked = false
                // A coding is a token, perhaps with parameters; the name is reported in the 501.
                guard
                    coding.allSatisfy({
                        ASCII.isToken($0) || $0 == UInt8(ascii: ";") || $0 == UInt8(ascii: "=")
                            || $0 == ASCII.space || $0 == ASCII.tab || $0 == UInt8(ascii: "\"")
                    })
                else {
                    invalid = true
                    return false
                }
                if scratch.unknownCoding == nil { scratch.unknownCoding = String(decoding: coding, as: UTF8.self) }
                return true
            }
            if invalid { return fail(.badRequest, "invalid transfer coding") }
            if !sawElement { return fail(.badRequest, "empty Transfer-Encoding") }
        case 10 where ASCII.equalsLowercase(name, "connection"):
            Self.forEachListElement(value) { option in
                if ASCII.equalsLowercase(option, "close") { scratch.connectionClose = true }
                if ASCII.equalsLowercase(option, "keep-alive") { scratch.connectionKeepAlive = true }
                return true
            }
        case 6 where ASCII.equalsLowercase(name, "expect"):
            Self.forEachListElement(value) { expectation in
                if expectation.isEmpty { return true }
                if ASCII.equalsLowercase(expectation, "100-continue") {
                    scratch.expectContinue = true
                } else if scratch.unknownExpectation == nil {
                    scratch.unknownExpectation = String(decoding: expectation, as: UTF8.self)
                }
                return true
            }
        default:
            break
        }
        return nil
    }

    /// Calls `body` with each element of a comma-separated list, blanks trimmed, empty ones
    /// included, until it returns false. Allocates nothing.
    private static func forEachListElement(
        _ value: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Bool
    ) {
        var start = 0
        while true {
            var end = start
            while end < value.count && value[end] != UInt8(ascii: ",") { end += 1 }
            var first = start
            var last = end
            while first < last && (value[first] == ASCII.space || value[first] == ASCII.tab) { first += 1 }
            while last > first && (value[last - 1] == ASCII.space || value[last - 1] == ASCII.tab) { last -= 1 }
            guard body(UnsafeRawBufferPointer(rebasing: value[first..<last])) else { return }
            if end == value.count { return }
            start = end + 1
        }
    }

    /// `uri-host [ ":" port ]`: reg-name, IPv4 or bracketed IPv6 characters.
    private static func isHostByte(_ byte: UInt8) -> Bool {
        (ASCII.isTargetByte(byte) && byte != UInt8(ascii: "/") && byte != UInt8(ascii: "?")
            && byte != UInt8(ascii: "@")) || byte == UInt8(ascii: "[") || byte == UInt8(ascii: "]")
    }

    /// `1*DIGIT` as an Int, or nil when empty, not all digits, or too large for Int.
    private static func parseDecimal(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard !bytes.isEmpty else { return nil }
        var value = 0
        for byte in bytes {
            let digit = byte &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int(digit))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        return value
    }

    /// Checks the head as a whole, hands it out, and picks how the body is read.
    private mutating func finishHead() -> Step {
        let isHTTP11 = scratch.version == .http1_1
        if isHTTP11 && scratch.hostCount == 0 { return fail(.badRequest, "HTTP/1.1 request without Host") }
        let chunked: Bool
        if scratch.transferCodings > 0 {
            if scratch.contentLength != nil {
                return fail(.badRequest, "both Content-Length and Transfer-Encoding")
            }
            if !isHTTP11 { return fail(.badRequest, "Transfer-Encoding in an HTTP/1.0 request") }
            if !scratch.lastCodingIsChunked { return fail(.badRequest, "chunked is not the final transfer coding") }
            if scratch.chunkedCount > 1 { return fail(.badRequest, "chunked applied more than once") }
            if let unknown = scratch.unknownCoding {
                return fail(.notImplemented, "transfer coding \(unknown) is not supported")
            }
            chunked = true
        } else {
            chunked = false
        }
        let contentLength = scratch.contentLength ?? 0
        if contentLength > limits.maxBodyBytes {
            return fail(.contentTooLarge, "body of \(contentLength) bytes is over \(limits.maxBodyBytes)")
        }
        if let expectation = scratch.unknownExpectation {
            return fail(.expectationFailed, "expectation \(expectation) is not supported")
        }
        let hasBody = chunked || contentLength > 0
        let keepAlive = scratch.connectionClose ? false : (isHTTP11 || scratch.connectionKeepAlive)
        head = RequestHead(
            method: scratch.method, target: scratch.target, path: scratch.path, query: scratch.query,
            version: scratch.version, headers: scratch.headers, keepAlive: keepAlive,
            expectsContinue: hasBody && isHTTP11 && scratch.expectContinue)
        scratch = Scratch()
        scanFrom = position
        if chunked {
            state = .chunkSize
        } else if contentLength > 0 {
            state = .body(remaining: contentLength)
        } else {
            state = .complete
        }
        return .event(.head(head))
    }

    // MARK: - Chunked bodies

    /// `chunk-size [ chunk-ext ]` (RFC 9112, section 7.1): hex digits, then extensions whose
    /// syntax is checked and whose meaning is ignored.
    private mutating func parseChunkSize(_ line: UnsafeRawBufferPointer) -> Step {
        var index = 0
        var size = 0
        while index < line.count, let digit = ASCII.hexValue(line[index]) {
            guard size <= (Int.max >> 4) else { return fail(.badRequest, "chunk size overflows") }
            size = size << 4 | Int(digit)
            index += 1
        }
        guard index > 0 else { return fail(.badRequest, "invalid chunk size") }
        guard Self.isValidChunkExtensions(line[index...]) else {
            return fail(.badRequest, "invalid chunk extension")
        }
        if size == 0 {
            state = .trailers(bytes: 0, fields: 0)
            return .again
        }
        let (total, overflow) = bodyTotal.addingReportingOverflow(size)
        guard !overflow, total <= limits.maxBodyBytes else {
            return fail(.contentTooLarge, "chunked body is over \(limits.maxBodyBytes) bytes")
        }
        bodyTotal = total
        state = .chunkData(remaining: size)
        return .again
    }

    /// `*( BWS ";" BWS ext-name [ BWS "=" BWS ( token / quoted-string ) ] )`, and nothing after:
    /// white space at the end of the line (`a \r\n`, `a;x=y \r\n`) is rejected, as llhttp does.
    private static func isValidChunkExtensions(_ bytes: UnsafeRawBufferPointer.SubSequence) -> Bool {
        var index = bytes.startIndex
        let end = bytes.endIndex
        func skipWhitespace() {
            while index < end && (bytes[index] == ASCII.space || bytes[index] == ASCII.tab) { index += 1 }
        }
        func token() -> Bool {
            let start = index
            while index < end && ASCII.isToken(bytes[index]) { index += 1 }
            return index > start
        }
        while true {
            // BWS is allowed only before a ";": white space ending the line is not in the grammar,
            // and a proxy that reads `a \r\n` differently is how a request gets smuggled.
            let blank = index
            skipWhitespace()
            if index == end { return index == blank }
            guard bytes[index] == UInt8(ascii: ";") else { return false }
            index += 1
            skipWhitespace()
            guard token() else { return false }
            let afterName = index
            skipWhitespace()
            guard index < end, bytes[index] == UInt8(ascii: "=") else {
                index = afterName  // the white space is checked again: before a ";" only
                continue
            }
            index += 1
            skipWhitespace()
            guard index < end else { return false }
            if bytes[index] == UInt8(ascii: "\"") {
                index += 1
                var closed = false
                while index < end {
                    let byte = bytes[index]
                    if byte == UInt8(ascii: "\"") {
                        closed = true
                        index += 1
                        break
                    }
                    if byte == UInt8(ascii: "\\") {
                        index += 1
                        guard index < end, ASCII.isFieldValueByte(bytes[index]) else { return false }
                    } else if !ASCII.isFieldValueByte(byte) {
                        return false
                    }
                    index += 1
                }
                guard closed else { return false }
            } else if !token() {
                return false
            }
        }
    }
}
