import Testing

@testable import JSON

@Suite struct JSONLimitsTests {
    @Test func defaultsAreListdsLimits() {
        let limits = JSONLimits()
        #expect(limits.maxDepth == 64)
        #expect(limits.maxBytes == 65_536)
    }
}
