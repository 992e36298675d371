import Testing

@testable import TortureCore

/// The shrinker keeps only what a failure needs.
@Suite struct ShrinkTests {
    @Test func aMinimalSubsetKeepsOnlyWhatTheFailureNeeds() {
        let items = Array(0..<40)
        // Fails when both 7 and 31 are in, and more than two elements are.
        let minimal = Shrink.minimal(items) { $0.contains(7) && $0.contains(31) && $0.count > 2 }
        #expect(minimal.count == 3 && minimal.contains(7) && minimal.contains(31))
    }
}
