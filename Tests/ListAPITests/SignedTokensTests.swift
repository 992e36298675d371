import Foundation
import Synchronization
import Testing
import Tokens

@testable import ListAPI

/// Signed tokens as the access policy takes them: the caller a token makes,
/// and the cache of verified tokens, which must never outlive a token.
@Suite struct SignedTokensTests {
    final class Clock: Sendable {
        private let time = Mutex(Date(timeIntervalSince1970: 2_000_000_000))
        var now: Date { time.withLock { $0 } }
        func advance(_ seconds: TimeInterval) { time.withLock { $0 = $0.addingTimeInterval(seconds) } }
    }

    static func setUp() async throws -> (SignedTokens, TokenMinter, Clock) {
        let key = try await TokenKey(contents: Array("signed-tokens-tests-secret-of-32-bytes!!".utf8))
        let clock = Clock()
        return (SignedTokens(key: key, now: { clock.now }), try TokenMinter(key: key), clock)
    }

    static func caller(_ decision: AccessPolicy.Decision) -> Caller? {
        if case .allowed(let caller) = decision { return caller }
        return nil
    }

    @Test func aTokenMakesItsCaller() async throws {
        let (tokens, minter, clock) = try await Self.setUp()
        let token = try minter.mint(
            TokenClaims(
                subject: "u42", lists: ["u42-*", "shared"].compactMap(ListPattern.init), rights: [.write],
                view: "where=owner:u42", expires: clock.now.addingTimeInterval(600)),
            issuedAt: clock.now)
        let caller = try #require(Self.caller(tokens.decide(Array(token.utf8), access: .read)))
        #expect(caller.kind == .signed)
        #expect(caller.subject == "u42")
        #expect(caller.rights == [.read, .write])
        #expect(caller.view?.canonicalQuery == "where=owner%3Au42")
        #expect(caller.lists == ListScope(entries: [.prefix("u42-"), .exact("shared")]))
        #expect(caller.limitKey == "subject u42")
        guard case .forbidden = tokens.decide(Array(token.utf8), access: .admin) else {
            Issue.record("a token without admin must not administer")
            return
        }
    }

    @Test func aCachedTokenStillExpires() async throws {
        let (tokens, minter, clock) = try await Self.setUp()
        let token = Array(
            try minter.mint(
                TokenClaims(lists: [.everyList], rights: [.read], expires: clock.now.addingTimeInterval(10)),
                issuedAt: clock.now
            ).utf8)
        #expect(Self.caller(tokens.decide(token, access: .read)) != nil)
        #expect(Self.caller(tokens.decide(token, access: .read)) != nil)  // from the cache
        clock.advance(10 + 59)
        #expect(Self.caller(tokens.decide(token, access: .read)) != nil)  // within the leeway
        clock.advance(2)
        guard case .unauthenticated(let reason) = tokens.decide(token, access: .read) else {
            Issue.record("an expired token must be refused, cached or not")
            return
        }
        #expect(reason.contains("expired"))
    }

    @Test func aTokenNotYetValidIsNeitherAcceptedNorCached() async throws {
        let (tokens, minter, clock) = try await Self.setUp()
        let token = Array(
            try minter.mint(
                TokenClaims(
                    lists: [.everyList], rights: [.read], expires: clock.now.addingTimeInterval(3600),
                    notBefore: clock.now.addingTimeInterval(600)),
                issuedAt: clock.now
            ).utf8)
        guard case .unauthenticated = tokens.decide(token, access: .read) else {
            Issue.record("a token before its nbf must be refused")
            return
        }
        clock.advance(600)
        #expect(Self.caller(tokens.decide(token, access: .read)) != nil)
    }

    @Test func aBadViewClaimIsRefused() async throws {
        let (tokens, minter, clock) = try await Self.setUp()
        let token = try minter.mint(
            TokenClaims(
                lists: [.everyList], rights: [.read], view: "grup=x", expires: clock.now.addingTimeInterval(60)),
            issuedAt: clock.now)
        guard case .unauthenticated(let reason) = tokens.decide(Array(token.utf8), access: .read) else {
            Issue.record("a token whose view is not a view must be refused")
            return
        }
        #expect(reason.contains("view"))
    }

    @Test func theCacheStaysBounded() {
        let cache = VerifiedTokens(capacity: 8)
        let caller = Caller.open(address: "127.0.0.1:1")
        for index in 0..<100 {
            cache.keep(Array("token-\(index)".utf8), .init(caller: caller, expires: .distantFuture, notBefore: nil))
        }
        #expect(cache.count <= 8)
        #expect(cache.caller(for: Array("token-99".utf8), at: Date()) != nil)
    }
}
