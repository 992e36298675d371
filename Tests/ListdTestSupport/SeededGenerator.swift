import Foundation

/// SplitMix64: a small, fast, seeded generator, so every random test replays
/// exactly from its seed. Shared by every test target.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    /// The generator's whole state.
    public var state: UInt64

    /// A generator that starts from `seed`.
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The seed from `LISTD_SEED`, or a fresh one; printed so a failure can be replayed.
    public static func seed(for test: String) -> UInt64 {
        let seed =
            ProcessInfo.processInfo.environment["LISTD_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        print("\(test): seed \(seed) (replay with LISTD_SEED=\(seed))")
        return seed
    }

    /// `normal` cases, or `long` when `LISTD_LONG_TESTS=1`.
    public static func cases(normal: Int, long: Int) -> Int {
        ProcessInfo.processInfo.environment["LISTD_LONG_TESTS"] == "1" ? long : normal
    }
}
