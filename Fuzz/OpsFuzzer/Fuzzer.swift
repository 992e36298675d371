// libFuzzer target: decoding a PATCH body's ops (and single section and item bodies) into the
// store's operations. See Fuzz/README.md.
//
// Beyond "never crashes": every refusal is a 4xx problem whose detail says something, and a
// decoded batch holds one operation per op sent.

import Glibc
import HTTP
import JSON
import ListWire

@testable import ListAPI

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOps(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    var decoder = RequestDecoder()
    decoder.models = ModelLimits(maxDepth: 16)
    let request = Request(head: RequestHead(method: .patch, target: "/lists/x"), body: bytes)
    let value: JSONValue
    do {
        value = try decoder.json(request)
    } catch {
        OpsFuzzer.check(error)
        return 0
    }
    do {
        let operations = try decoder.operations(value)
        if operations.count != value["ops"]?.arrayValue?.count {
            OpsFuzzer.fail("\(operations.count) operations decoded from a body with a different number of ops")
        }
    } catch {
        OpsFuzzer.check(error)
    }
    do {
        _ = try decoder.operation(value, index: 0)
    } catch {
        OpsFuzzer.check(error)
    }
    return 0
}

enum OpsFuzzer {
    static func check(_ problem: Problem) {
        guard (400..<500).contains(problem.status), !problem.detail.isEmpty, !problem.slug.isEmpty else {
            fail("a refusal that is not a 4xx problem with a detail: \(problem)")
        }
    }

    static func fail(_ message: String) -> Never {
        let text = Array("OpsFuzzer: \(message)\n".utf8)
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

@_cdecl("OpsFuzzer_main")
public func OpsFuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, fuzzOps)
}
