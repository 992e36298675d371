import Testing

@testable import JSON

enum TestSettings {
    /// `LISTD_LONG_TESTS=1` runs the property tests with many more cases.
    static let long = ProcessInfoLite.environment("LISTD_LONG_TESTS") == "1"

    /// The seed for property tests: `LISTD_SEED` when set, so a failure can be replayed.
    static let seed: UInt64 = ProcessInfoLite.environment("LISTD_SEED").flatMap { UInt64($0) } ?? 0x6C69_7374_64

    static func cases(_ normal: Int) -> Int { long ? normal * 25 : normal }
}

/// Reads the environment without Foundation.
enum ProcessInfoLite {
    static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs both entry points (tree parser and streaming canonicalizer) on `bytes` and
/// requires them to agree: both succeed with the same canonical text, or both
/// throw the same error.
func parseBothWays(
    _ bytes: [UInt8], limits: JSONLimits = JSONLimits(), sourceLocation: SourceLocation = #_sourceLocation
) -> Result<JSONValue, JSONError> {
    let tree = Result { () throws(JSONError) -> JSONValue in try JSONValue(parsing: bytes, limits: limits) }
    let canonical = Result { () throws(JSONError) -> String in
        try CanonicalJSON.canonicalize(bytes, limits: limits)
    }
    switch (tree, canonical) {
    case (.success(let value), .success(let text)):
        #expect(value.canonicalText == text, "paths disagree on canonical text", sourceLocation: sourceLocation)
    case (.failure(let a), .failure(let b)):
        #expect(a == b, "paths disagree on the error: \(a) vs \(b)", sourceLocation: sourceLocation)
    case (.success, .failure(let error)):
        Issue.record("tree parser accepted, canonicalizer threw \(error)", sourceLocation: sourceLocation)
    case (.failure(let error), .success):
        Issue.record("canonicalizer accepted, tree parser threw \(error)", sourceLocation: sourceLocation)
    }
    return tree
}

func parseBothWays(
    _ text: String, limits: JSONLimits = JSONLimits(), sourceLocation: SourceLocation = #_sourceLocation
) -> Result<JSONValue, JSONError> {
    parseBothWays(Array(text.utf8), limits: limits, sourceLocation: sourceLocation)
}
