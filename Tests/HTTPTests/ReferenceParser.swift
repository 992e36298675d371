@testable import HTTP

/// An independent, deliberately simple reading of the request grammar, for checking the real
/// parser on mutated input. It works on the whole input at once with plain array searches and
/// sets of allowed characters spelled out as strings, sharing no code with ``RequestParser``.
enum ReferenceParser {
    enum End: Equatable {
        /// All input was consumed by complete requests.
        case clean
        /// The last request is cut short.
        case incomplete
        /// The input breaks a rule.
        case rejected
    }

    struct Message: Equatable {
        var method: String
        var target: String
        var version: String
        var headers: [[String]]
        var keepAlive: Bool
        var body: [UInt8]
    }

    static let cr: UInt8 = 13
    static let lf: UInt8 = 10
    static let alphaDigit = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
    static let tchar = alphaDigit.union("!#$%&'*+-.^_`|~".utf8)
    static let targetChars = alphaDigit.union("-._~!$&'()*+,;=:@/?%".utf8)
    static let hostChars = alphaDigit.union("-._~!$&'()*+,;=:%[]".utf8)
    static let hexDigits = Set("0123456789abcdefABCDEF".utf8)
    static let methods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    static func parse(_ input: [UInt8], limits: HTTPLimits) -> (messages: [Message], end: End) {
        var messages: [Message] = []
        var index = 0
        while true {
            while index + 1 < input.count && input[index] == cr && input[index + 1] == lf { index += 2 }
            if index == input.count { return (messages, .clean) }
            guard let headEnd = find([cr, lf, cr, lf], in: input, from: index) else { return (messages, .incomplete) }
            let lines = splitLines(Array(input[index..<(headEnd + 2)]))
            if headEnd + 4 - index > limits.maxHeaderBytes { return (messages, .rejected) }
            index = headEnd + 4
            guard let (head, contentLength, chunked) = readHead(lines, limits: limits) else {
                return (messages, .rejected)
            }
            var message = head
            if chunked {
                switch readChunked(input, from: &index, limits: limits) {
                case .success(let body): message.body = body
                case .failure(let stop): return (messages, stop.end)
                }
            } else if contentLength > 0 {
                guard input.count - index >= contentLength else { return (messages, .incomplete) }
                message.body = Array(input[index..<(index + contentLength)])
                index += contentLength
            }
            messages.append(message)
        }
    }

    struct Stop: Error { var end: End }

    private static func readChunked(_ input: [UInt8], from index: inout Int, limits: HTTPLimits) -> Result<
        [UInt8], Stop
    > {
        var body: [UInt8] = []
        while true {
            guard let lineEnd = find([cr, lf], in: input, from: index) else { return .failure(Stop(end: .incomplete)) }
            let line = Array(input[index..<lineEnd])
            if line.contains(lf) || line.count + 2 > limits.maxChunkLineBytes { return .failure(Stop(end: .rejected)) }
            index = lineEnd + 2
            let digits = line.prefix { hexDigits.contains($0) }
            let significant = digits.drop { $0 == UInt8(ascii: "0") }
            guard !digits.isEmpty, significant.count <= 15,
                extensionsAreValid(Array(line[digits.count...]))
            else { return .failure(Stop(end: .rejected)) }
            let size = Int(String(decoding: significant, as: UTF8.self), radix: 16) ?? 0
            if size == 0 { break }
            if body.count + size > limits.maxBodyBytes { return .failure(Stop(end: .rejected)) }
            guard input.count - index >= size + 2 else { return .failure(Stop(end: .incomplete)) }
            body += input[index..<(index + size)]
            guard input[index + size] == cr, input[index + size + 1] == lf else {
                return .failure(Stop(end: .rejected))
            }
            index += size + 2
        }
        var trailerBytes = 0
        var trailerCount = 0
        while true {
            guard let lineEnd = find([cr, lf], in: input, from: index) else { return .failure(Stop(end: .incomplete)) }
            let line = Array(input[index..<lineEnd])
            trailerBytes += line.count + 2
            index = lineEnd + 2
            if trailerBytes > limits.maxHeaderBytes { return .failure(Stop(end: .rejected)) }
            if line.isEmpty { return .success(body) }
            trailerCount += 1
            if trailerCount > limits.maxHeaderFields || readField(line) == nil { return .failure(Stop(end: .rejected)) }
        }
    }

    /// Chunk extensions, read as a sequence of `;name[=value]` items with optional blanks.
    private static func extensionsAreValid(_ bytes: [UInt8]) -> Bool {
        var rest = bytes[...]
        func dropBlanks() { rest = rest.drop { $0 == 32 || $0 == 9 } }
        func takeToken() -> Bool {
            let token = rest.prefix { tchar.contains($0) }
            rest = rest.dropFirst(token.count)
            return !token.isEmpty
        }
        while true {
            let before = rest.count
            dropBlanks()
            guard let first = rest.first else { return rest.count == before }  // no trailing blanks
            guard first == UInt8(ascii: ";") else { return false }
            rest = rest.dropFirst()
            dropBlanks()
            guard takeToken() else { return false }
            let afterName = rest
            dropBlanks()
            guard rest.first == UInt8(ascii: "=") else {
                rest = afterName
                continue
            }
            rest = rest.dropFirst()
            dropBlanks()
            if rest.first == UInt8(ascii: "\"") {
                rest = rest.dropFirst()
                var closed = false
                while let byte = rest.first {
                    rest = rest.dropFirst()
                    if byte == UInt8(ascii: "\"") {
                        closed = true
                        break
                    }
                    if byte == UInt8(ascii: "\\") {
                        guard let escaped = rest.first, isValueByte(escaped) else { return false }
                        rest = rest.dropFirst()
                    } else if !isValueByte(byte) {
                        return false
                    }
                }
                guard closed else { return false }
            } else if !takeToken() {
                return false
            }
        }
    }

    private static func isValueByte(_ byte: UInt8) -> Bool { byte == 9 || (byte >= 32 && byte != 127) }

    /// The head, its Content-Length (0 when absent) and whether the body is chunked; nil if rejected.
    private static func readHead(_ lines: [[UInt8]], limits: HTTPLimits) -> (Message, Int, Bool)? {
        guard let requestLine = lines.first, lines.allSatisfy({ !$0.contains(cr) && !$0.contains(lf) }) else {
            return nil
        }
        let parts = requestLine.split(separator: 32, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        guard parts.count == 3, methods.contains(parts[0]), parts[2] == "HTTP/1.1" || parts[2] == "HTTP/1.0" else {
            return nil
        }
        let (method, target, version) = (parts[0], Array(parts[1].utf8), parts[2])
        guard target.count <= limits.maxRequestTargetBytes else { return nil }
        if target == Array("*".utf8) {
            guard method == "OPTIONS" else { return nil }
        } else {
            guard target.first == UInt8(ascii: "/"), target.allSatisfy({ targetChars.contains($0) }) else { return nil }
            for (offset, byte) in target.enumerated() where byte == UInt8(ascii: "%") {
                guard offset + 2 < target.count, hexDigits.contains(target[offset + 1]),
                    hexDigits.contains(target[offset + 2])
                else { return nil }
            }
        }
        var headers: [[String]] = []
        for line in lines.dropFirst() {
            guard let field = readField(line) else { return nil }
            headers.append(field)
        }
        guard headers.count <= limits.maxHeaderFields else { return nil }
        func values(_ name: String) -> [String] { headers.filter { $0[0].lowercased() == name }.map { $0[1] } }
        func elements(_ name: String) -> [String] {
            values(name).flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }.map(
                \.trimmingSpacesAndTabs)
        }
        let hosts = values("host")
        guard hosts.count <= 1, version == "HTTP/1.0" || hosts.count == 1,
            hosts.allSatisfy({ $0.utf8.allSatisfy { hostChars.contains($0) } })
        else { return nil }
        let lengths = elements("content-length")
        var contentLength = 0
        if !values("content-length").isEmpty {
            guard lengths.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } }),
                let first = lengths.first.flatMap({ Int($0) }), lengths.allSatisfy({ Int($0) == first }),
                first <= limits.maxBodyBytes
            else { return nil }
            contentLength = first
        }
        if !values("transfer-encoding").isEmpty {
            let codings = elements("transfer-encoding").filter { !$0.isEmpty }.map { $0.lowercased() }
            guard codings == ["chunked"], values("content-length").isEmpty, version == "HTTP/1.1" else { return nil }
        }
        guard elements("expect").filter({ !$0.isEmpty }).allSatisfy({ $0.lowercased() == "100-continue" }) else {
            return nil
        }
        let options = Set(elements("connection").map { $0.lowercased() })
        let keepAlive = !options.contains("close") && (version == "HTTP/1.1" || options.contains("keep-alive"))
        let message = Message(
            method: method, target: String(decoding: target, as: UTF8.self), version: version, headers: headers,
            keepAlive: keepAlive, body: [])
        return (message, contentLength, !values("transfer-encoding").isEmpty)
    }

    /// `name: value` with a token name and a value of visible characters, blanks and obs-text.
    private static func readField(_ line: [UInt8]) -> [String]? {
        guard let first = line.first, first != 32, first != 9, let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            return nil
        }
        let name = line[..<colon]
        guard !name.isEmpty, name.allSatisfy({ tchar.contains($0) }) else { return nil }
        var value = line[(colon + 1)...]
        while let byte = value.first, byte == 32 || byte == 9 { value = value.dropFirst() }
        while let byte = value.last, byte == 32 || byte == 9 { value = value.dropLast() }
        guard value.allSatisfy(isValueByte) else { return nil }
        return [String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)]
    }

    private static func find(_ needle: [UInt8], in input: [UInt8], from start: Int) -> Int? {
        guard input.count >= needle.count else { return nil }
        var index = start
        while index + needle.count <= input.count {
            if input[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }

    /// Splits at every CRLF; the input ends with one.
    private static func splitLines(_ bytes: [UInt8]) -> [[UInt8]] {
        var lines: [[UInt8]] = []
        var start = 0
        var index = 0
        while index + 1 < bytes.count {
            if bytes[index] == cr && bytes[index + 1] == lf {
                lines.append(Array(bytes[start..<index]))
                index += 2
                start = index
            } else {
                index += 1
            }
        }
        return lines
    }
}

extension StringProtocol {
    /// The string without leading and trailing spaces and tabs.
    var trimmingSpacesAndTabs: String {
        var scalars = Substring(self).unicodeScalars[...]
        while let first = scalars.first, first == " " || first == "\t" { scalars = scalars.dropFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars = scalars.dropLast() }
        return String(scalars)
    }
}
