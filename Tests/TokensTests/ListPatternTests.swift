import Testing

@testable import Tokens

/// `lists` patterns and `rights` words.
@Suite struct ListPatternTests {
    @Test func anExactPatternMatchesOneID() throws {
        let pattern = try #require(ListPattern("groceries"))
        #expect(pattern.kind == .exact("groceries"))
        #expect(pattern.matches("groceries"))
        #expect(pattern.matches("groceries"[...]))
        for other in ["grocerie", "groceries2", "Groceries", "", "groceries*"] { #expect(!pattern.matches(other)) }
    }

    @Test func aPrefixPatternMatchesIDsStartingWithIt() throws {
        let pattern = try #require(ListPattern("u42-*"))
        #expect(pattern.kind == .prefix("u42-"))
        for id in ["u42-", "u42-groceries", "u42-a.b_c~d"] { #expect(pattern.matches(id)) }
        for id in ["u42", "u4", "u43-groceries", "xu42-a", "U42-a", ""] { #expect(!pattern.matches(id)) }
    }

    @Test func aStarAloneMatchesEveryList() throws {
        let pattern = try #require(ListPattern("*"))
        #expect(pattern == .everyList)
        for id in ["a", "groceries", "u42-x", String(repeating: "z", count: 128)] { #expect(pattern.matches(id)) }
    }

    @Test(arguments: [
        "", "**", "*a", "a*b", "a**", "a b", "a/b", "é", "a\u{0}", "a?", String(repeating: "a", count: 129),
    ])
    func invalidPatternsAreRefused(_ text: String) {
        #expect(ListPattern(text) == nil)
        #expect(ListPattern.validationFailure(text) != nil)
    }

    @Test func patternsUpToTheIDLengthAreAccepted() throws {
        let longest = String(repeating: "a", count: 128)
        #expect(ListPattern(longest)?.kind == .exact(longest))
        #expect(ListPattern(longest + "*")?.kind == .prefix(longest))
        #expect(ListPattern("A-Za-z0-9._~-*") != nil)
    }

    @Test(arguments: ["groceries", "u42-*", "*"])
    func aPatternIsWrittenAsItWasRead(_ text: String) throws {
        #expect(try #require(ListPattern(text)).description == text)
    }

    @Test func claimsOpenTheListsOfAnyOfTheirPatterns() throws {
        let claims = TokenClaims(
            lists: [try #require(ListPattern("shared")), try #require(ListPattern("u42-*"))], rights: .read,
            expires: TokenFixtures.now)
        #expect(claims.opens("shared") && claims.opens("u42-a"))
        #expect(!claims.opens("shared-2") && !claims.opens("u43-a"))
    }

    @Test func rightsAreReadFromTheirWords() {
        #expect(TokenRights(word: "read") == .read)
        #expect(TokenRights(word: "write") == .write)
        #expect(TokenRights(word: "admin") == .admin)
        for word in ["", "Read", "READ", "delete", "read "] { #expect(TokenRights(word: word) == nil) }
        #expect(TokenRights([.admin, .read]).words == ["read", "admin"])
        #expect(TokenRights([.read, .write, .admin]).description == "read,write,admin")
    }
}
