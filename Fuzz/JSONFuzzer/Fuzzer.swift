// libFuzzer target: the JSON parser and the canonicalizer. See Fuzz/README.md.
//
// Beyond "never crashes": the tree parser and the streaming canonicalizer accept and reject
// the same inputs, canonical text is a fixed point, and the writer reproduces it from the tree.

import Glibc
import JSON

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let limits = JSONLimits(maxDepth: 64, maxBytes: 1 << 20)
    let tree = try? JSONValue(parsing: bytes, limits: limits)
    let canonical = try? CanonicalJSON.canonicalBytes(bytes, limits: limits)
    switch (tree, canonical) {
    case (nil, nil):
        return 0
    case (.some, nil), (nil, .some):
        JSONFuzzer.fail("the parser and the canonicalizer disagree on accepting \(JSONFuzzer.show(bytes))")
    case (.some(let value), .some(let canonical)):
        guard let again = try? CanonicalJSON.canonicalBytes(canonical, limits: limits), again == canonical else {
            JSONFuzzer.fail("canonical text is not a fixed point: \(JSONFuzzer.show(canonical))")
        }
        guard let reparsed = try? JSONValue(parsing: canonical, limits: limits) else {
            JSONFuzzer.fail("canonical text does not parse: \(JSONFuzzer.show(canonical))")
        }
        guard Array(value.canonicalText.utf8) == canonical, Array(reparsed.canonicalText.utf8) == canonical else {
            JSONFuzzer.fail("the tree's canonical text differs from the canonicalizer's: \(JSONFuzzer.show(bytes))")
        }
        return 0
    }
}

enum JSONFuzzer {
    static func show(_ bytes: [UInt8]) -> String { String(decoding: bytes.prefix(300), as: UTF8.self).debugDescription }

    static func fail(_ message: String) -> Never {
        let text = Array("JSONFuzzer: \(message)\n".utf8)
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

@_cdecl("JSONFuzzer_main")
public func JSONFuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, fuzzJSON)
}
