import ListdTestSupport
import Testing

@testable import HTTP

/// A random valid request: its bytes on the wire and what the parser must make of them.
struct GeneratedRequest {
    var bytes: [UInt8]
    var expected: ParsedRequest
}

/// Builds random valid requests: every method, origin-form targets with escapes and queries,
/// HTTP/1.0 and 1.1, random fields with random blanks around values, and bodies framed by
/// Content-Length or chunked coding with extensions and trailers.
struct RequestGenerator {
    var random: SeededGenerator

    private static let pathChars = Array("abcxyzABCXYZ0189-._~!$&'()*+,;=:@".utf8)
    private static let queryChars = pathChars + Array("/?".utf8)
    private static let nameChars = Array(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~".utf8)
    private static let valueChars = Array(" !\"#abcXYZ019:;,=/\\{}~".utf8) + [0x80, 0xC3, 0xA9, 0xFF]
    private static let hex = Array("0123456789abcdef".utf8)

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }
    mutating func chance(_ percent: Int) -> Bool { int(1...100) <= percent }
    mutating func pick<T>(_ items: [T]) -> T { items[int(0...(items.count - 1))] }

    mutating func randomCase(_ text: String) -> String {
        String(text.map { chance(50) ? Character($0.uppercased()) : Character($0.lowercased()) })
    }

    mutating func blanks() -> String { pick(["", "", " ", "  ", "\t", " \t"]) }

    mutating func target(for method: String) -> String {
        if method == "OPTIONS" && chance(20) { return "*" }
        var bytes: [UInt8] = []
        for _ in 0..<int(1...4) {
            bytes.append(UInt8(ascii: "/"))
            for _ in 0..<int(0...8) {
                if chance(10) {
                    bytes += [UInt8(ascii: "%"), pick(Self.hex), pick(Self.hex)]
                } else {
                    bytes.append(pick(Self.pathChars))
                }
            }
        }
        if chance(30) {
            bytes.append(UInt8(ascii: "?"))
            for _ in 0..<int(0...12) { bytes.append(pick(Self.queryChars)) }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    mutating func fieldValue() -> String {
        var bytes: [UInt8] = []
        for _ in 0..<int(0...20) { bytes.append(pick(Self.valueChars)) }
        while bytes.last == UInt8(ascii: " ") { bytes.removeLast() }
        while bytes.first == UInt8(ascii: " ") { bytes.removeFirst() }
        return String(decoding: bytes, as: UTF8.self)
    }

    mutating func request() -> GeneratedRequest {
        let method = pick(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
        let target = target(for: method)
        let isHTTP11 = chance(85)
        var fields: [(String, String)] = []
        for _ in 0..<int(0...6) {
            var name = "X-"
            for _ in 0..<int(1...10) { name.append(Character(UnicodeScalar(pick(Self.nameChars)))) }
            fields.append((name, fieldValue()))
        }
        if isHTTP11 || chance(30) {
            fields.insert(
                (randomCase("host"), pick(["example.com", "localhost:8080", "[::1]:80", ""])), at: int(0...fields.count)
            )
        }
        var closes = false
        var asksKeepAlive = false
        if chance(30) {
            let option = pick(["close", "keep-alive", "Upgrade", "close, Upgrade", "Keep-Alive"])
            closes = option.lowercased().contains("close")
            asksKeepAlive = option.lowercased().contains("keep-alive")
            fields.insert(("Connection", option), at: int(0...fields.count))
        }
        let body = (0..<int(0...300)).map { _ in UInt8.random(in: 0...255, using: &random) }
        let framing = isHTTP11 ? int(0...2) : int(0...1)
        var framedBody: [UInt8] = []
        var sendsBody = false
        switch framing {
        case 1:
            fields.insert((randomCase("content-length"), String(body.count)), at: int(0...fields.count))
            if chance(10) { fields.append(("Content-Length", "\(body.count), \(body.count)")) }
            framedBody = body
            sendsBody = !body.isEmpty
        case 2:
            fields.insert(
                (randomCase("transfer-encoding"), chance(80) ? "chunked" : ", chunked"), at: int(0...fields.count))
            framedBody = chunked(body)
            sendsBody = true
        default:
            break
        }
        var expectsContinue = false
        if isHTTP11 && chance(15) {
            fields.append(("Expect", pick(["100-continue", "100-Continue"])))
            expectsContinue = sendsBody
        }
        var text = chance(5) ? "\r\n" : ""
        text += "\(method) \(target) HTTP/1.\(isHTTP11 ? 1 : 0)\r\n"
        for (name, value) in fields { text += "\(name):\(blanks())\(value)\(blanks())\r\n" }
        text += "\r\n"
        let head = RequestHead(
            method: HTTPMethod(rawValue: method), target: target, version: isHTTP11 ? .http1_1 : .http1_0,
            headers: HTTPHeaders(fields), keepAlive: !closes && (isHTTP11 || asksKeepAlive),
            expectsContinue: expectsContinue)
        return GeneratedRequest(
            bytes: Array(text.utf8) + framedBody, expected: ParsedRequest(head, body: framing == 0 ? [] : body))
    }

    mutating func chunked(_ body: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        var rest = body[...]
        while !rest.isEmpty {
            let size = int(1...rest.count)
            var line = String(size, radix: 16, uppercase: chance(50))
            if chance(10) { line = "00" + line }
            line += chunkExtension()
            output += Array("\(line)\r\n".utf8) + rest.prefix(size) + Array("\r\n".utf8)
            rest = rest.dropFirst(size)
        }
        output += Array("0\(chunkExtension())\r\n".utf8)
        for _ in 0..<(chance(20) ? int(1...3) : 0) { output += Array("X-Trailer: \(fieldValue())\r\n".utf8) }
        output += Array("\r\n".utf8)
        return output
    }

    mutating func chunkExtension() -> String {
        guard chance(15) else { return "" }
        return pick([";a", " ; name=value", ";q=\"quoted; \\\"text\\\"\"", ";x=1;y"])
    }

    /// Several requests back to back, as a pipelining client sends them.
    mutating func pipeline() -> (bytes: [UInt8], expected: [ParsedRequest]) {
        var bytes: [UInt8] = []
        var expected: [ParsedRequest] = []
        for _ in 0..<int(1...4) {
            let generated = request()
            bytes += generated.bytes
            expected.append(generated.expected)
        }
        return (bytes, expected)
    }

    /// Cuts `bytes` at random points; sometimes into single bytes.
    mutating func split(_ bytes: [UInt8]) -> [[UInt8]] {
        if chance(5) { return bytes.map { [$0] } }
        let cuts = Set((0..<int(0...8)).map { _ in int(0...bytes.count) }).sorted()
        var chunks: [[UInt8]] = []
        var start = 0
        for cut in cuts + [bytes.count] {
            chunks.append(Array(bytes[start..<cut]))
            start = cut
        }
        return chunks
    }

    /// One to three random edits: flip a bit, overwrite or insert an interesting byte, delete,
    /// duplicate a span, or truncate.
    mutating func mutate(_ input: [UInt8]) -> [UInt8] {
        var bytes = input
        let interesting = Array("\r\n \t:,;0fx\"\\%/?*aZ-".utf8) + [0, 0x7F, 0x80, 0xFF]
        for _ in 0..<int(1...3) where !bytes.isEmpty {
            let index = int(0...(bytes.count - 1))
            switch int(0...5) {
            case 0: bytes[index] ^= UInt8(1) << UInt8(int(0...7))
            case 1: bytes[index] = pick(interesting)
            case 2: bytes.insert(chance(70) ? pick(interesting) : UInt8.random(in: 0...255, using: &random), at: index)
            case 3: bytes.remove(at: index)
            case 4:
                let end = min(bytes.count, index + int(1...20))
                bytes.insert(contentsOf: Array(bytes[index..<end]), at: int(0...bytes.count))
            default: bytes.removeLast(int(1...bytes.count))
            }
        }
        return bytes
    }
}

@Suite struct RequestParserPropertyTests {
    @Test func randomSplitsParseLikeOneAppend() throws {
        let seed = propertySeed(0x5EED_0001)
        let cases = longTests ? 50_000 : 2_000
        var generator = RequestGenerator(random: SeededGenerator(seed: seed))
        for number in 0..<cases {
            let (bytes, expected) = generator.pipeline()
            let whole = parse([bytes])
            let pieces = generator.split(bytes)
            let split = parse(pieces)
            #expect(
                requests(in: whole) == expected,
                "seed \(seed), case \(number): \(String(decoding: bytes, as: UTF8.self))")
            #expect(split == whole, "seed \(seed), case \(number), pieces \(pieces.map(\.count))")
            #expect(whole.count == expected.count * 2)
            if requests(in: whole) != expected || split != whole { return }
        }
    }

    @Test func mutatedRequestsNeverCrashOrPassAStrictReading() throws {
        let seed = propertySeed(0x5EED_0002)
        let cases = longTests ? 100_000 : 3_000
        let limits = HTTPLimits(maxBodyBytes: 200)
        var generator = RequestGenerator(random: SeededGenerator(seed: seed))
        var rejections = 0
        for number in 0..<cases {
            let original = generator.pipeline().bytes
            let bytes = generator.mutate(original)
            let whole = parse([bytes], limits: limits)
            let split = parse(generator.split(bytes), limits: limits)
            let reference = ReferenceParser.parse(bytes, limits: limits)
            let accepted = requests(in: whole).map {
                ReferenceParser.Message(
                    method: $0.method, target: $0.target, version: $0.version, headers: $0.headers,
                    keepAlive: $0.keepAlive,
                    body: $0.body)
            }
            let context = "seed \(seed), case \(number): \(bytes)"
            #expect(accepted == reference.messages, "\(context)")
            #expect(requests(in: split) == requests(in: whole), "\(context)")
            #expect(split.contains(where: \.isFailure) == whole.contains(where: \.isFailure), "\(context)")
            switch reference.end {
            case .rejected:
                #expect(failureStatus(in: whole) != nil, "the reference rejects: \(context)")
                rejections += 1
            case .clean:
                #expect(failureStatus(in: whole) == nil, "the reference accepts all: \(context)")
            case .incomplete:
                break  // the parser may wait for more, or refuse early what can no longer become valid
            }
            if accepted != reference.messages { return }
        }
        // Mutations must actually exercise the rules, not just truncate.
        #expect(rejections > cases / 4)
    }
}
