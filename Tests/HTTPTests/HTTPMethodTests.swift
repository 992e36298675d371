import Testing

@testable import HTTP

@Suite struct HTTPMethodTests {
    @Test func methodsAreCaseSensitiveTokens() {
        #expect(HTTPMethod(rawValue: "GET") == .get)
        #expect(HTTPMethod(rawValue: "get") != .get)
    }
}
