// libFuzzer target: the HTTP/1.1 request parser. See Fuzz/README.md.
//
// Beyond "never crashes": the input parsed in one append and the same bytes fed in pieces
// (cut where the input's first byte says, and one byte at a time) must give the same requests
// and fail or not alike, since a server sees whatever split the network made.

import Glibc
import HTTP

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPParser(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let whole = HTTPParserFuzzer.outcome([bytes])
    let cut = Int(bytes[0]) % bytes.count
    let halves = HTTPParserFuzzer.outcome([Array(bytes[..<cut]), Array(bytes[cut...])])
    let single = HTTPParserFuzzer.outcome(bytes.map { [$0] })
    for other in [halves, single] where other != whole {
        HTTPParserFuzzer.fail("the parse depends on how the bytes were split:\n\(whole)\nvs\n\(other)")
    }
    return 0
}

enum HTTPParserFuzzer {
    /// What a server would see: each request (method, target, fields, body) in order, then
    /// whether the parse failed. Failure statuses may differ by split (a line found too long
    /// before it ends is 400 or 431 depending on what arrived), so only failing is compared.
    struct Outcome: Equatable, CustomStringConvertible {
        var requests: [String] = []
        var failed = false
        var description: String { requests.joined(separator: "\n") + (failed ? "\nfailed" : "") }
    }

    static func outcome(_ pieces: [[UInt8]]) -> Outcome {
        var parser = RequestParser(limits: HTTPLimits(maxBodyBytes: 64 * 1024))
        var outcome = Outcome()
        for piece in pieces {
            parser.append(piece)
            var events = 0
            while let event = parser.next() {
                events += 1
                if events > 100_000 { fail("next() never returns nil") }
                switch event {
                case .head: break
                case .request(let request):
                    let fields = request.head.headers.map { "\($0.name): \($0.value)" }.joined(separator: "|")
                    outcome.requests.append(
                        "\(request.method) \(request.head.target) \(fields) body \(request.body.count) \(request.body.hashValue)"
                    )
                case .failure:
                    outcome.failed = true
                }
            }
            if outcome.failed { break }
        }
        return outcome
    }

    static func fail(_ message: String) -> Never {
        let text = Array("HTTPParserFuzzer: \(message)\n".utf8)
        _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        abort()
    }
}

// SwiftPM links an executable's `main` to `<module>_main`; here that hands over to libFuzzer's
// driver, with the function above as the target.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@_cdecl("HTTPParserFuzzer_main")
public func HTTPParserFuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, fuzzHTTPParser)
}
