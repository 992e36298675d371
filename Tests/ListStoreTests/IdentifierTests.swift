import ListModel
import Testing

@testable import ListStore

@Suite struct IdentifierTests {
    @Test(arguments: ["a", "groceries", "A-Z_a.z~0-9", String(repeating: "x", count: 128)])
    func acceptsValidIds(_ text: String) {
        #expect(Identifier(text)?.rawValue == text)
    }

    @Test(arguments: ["", String(repeating: "x", count: 129), "a b", "a/b", "é", "a%20", "a\u{0}"])
    func rejectsInvalidIdsWithAReason(_ text: String) {
        #expect(Identifier(text) == nil)
        #expect(Identifier.validationFailure(text) != nil)
    }

    @Test func generatedIdsAreValidAndSortByTime() {
        var rng = SystemRandomNumberGenerator()
        let earlier = Identifier.generate(milliseconds: 1_700_000_000_000, using: &rng)
        let later = Identifier.generate(milliseconds: 1_700_000_000_001, using: &rng)
        #expect(earlier.rawValue.count == 26)
        #expect(Identifier(earlier.rawValue) != nil)
        #expect(earlier < later)
        #expect(Identifier.generate() != Identifier.generate())
    }
}
