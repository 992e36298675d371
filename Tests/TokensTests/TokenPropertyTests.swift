import Foundation
import ListdTestSupport
import Testing

@testable import Tokens

/// Seeded random damage to valid tokens, and random strings: nothing but the unchanged token is
/// ever accepted, and nothing traps (a trap would end the test process).
@Suite struct TokenPropertyTests {
    typealias F = TokenFixtures

    @Test(arguments: TokenAlgorithm.allCases)
    func onlyTheUnchangedTokenIsAccepted(_ algorithm: TokenAlgorithm) async throws {
        let (signing, verifying) = try await TokenVerifierTests.keys(algorithm)
        let verifier = TokenVerifier(key: verifying)
        let minter = try TokenMinter(key: signing)
        let seed = SeededGenerator.seed(for: "onlyTheUnchangedTokenIsAccepted(\(algorithm))")
        var random = SeededGenerator(seed: seed)
        let tokens = try [
            minter.mint(F.fullClaims, issuedAt: F.now),
            minter.mint(TokenClaims(lists: [.everyList], rights: .read, expires: F.now + 60), issuedAt: F.now),
        ]
        for token in tokens {
            let original = Array(token.utf8)
            #expect(verifier.verify(original, now: F.now).success != nil)
            // Every truncation.
            for length in 0..<original.count {
                if verifier.verify(original[..<length], now: F.now).success != nil {
                    Issue.record("seed \(seed): a truncation to \(length) bytes was accepted")
                }
            }
            // Random damage: bit flips, replaced, deleted and inserted bytes, swapped parts.
            for _ in 0..<SeededGenerator.cases(normal: 3000, long: 100_000) {
                let damaged = Self.damage(original, using: &random)
                let result = verifier.verify(damaged, now: F.now)
                if damaged == original {
                    #expect(result.success != nil)
                } else if result.success != nil {
                    Issue.record(
                        "seed \(seed): a damaged token was accepted: \(String(decoding: damaged, as: UTF8.self))")
                }
            }
        }
    }

    @Test func randomStringsAreNeverAccepted() async throws {
        let (key, _) = try await F.hs256()
        let verifier = TokenVerifier(key: key)
        let seed = SeededGenerator.seed(for: "randomStringsAreNeverAccepted")
        var random = SeededGenerator(seed: seed)
        let alphabet = Array("eyJhbGciOiJIUzI1NiJ9.-_=+/ \u{0}{}\":,".utf8)
        for _ in 0..<SeededGenerator.cases(normal: 5000, long: 200_000) {
            let length = Int.random(in: 0...200, using: &random)
            let bytes: [UInt8] =
                Bool.random(using: &random)
                ? (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
                : (0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] }
            if verifier.verify(bytes, now: F.now).success != nil {
                Issue.record("seed \(seed): random bytes were accepted: \(bytes)")
            }
        }
    }

    /// One random change to `token` (which may, rarely, leave it as it was).
    static func damage(_ token: [UInt8], using random: inout SeededGenerator) -> [UInt8] {
        var bytes = token
        let index = Int.random(in: 0..<bytes.count, using: &random)
        switch Int.random(in: 0..<6, using: &random) {
        case 0:
            bytes[index] ^= 1 << UInt8.random(in: 0..<8, using: &random)
        case 1:
            bytes[index] = UInt8.random(in: 0...255, using: &random)
        case 2:
            bytes.remove(at: index)
        case 3:
            let base64url = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.".utf8)
            bytes.insert(base64url[Int.random(in: 0..<base64url.count, using: &random)], at: index)
        case 4:
            let other = Int.random(in: 0..<bytes.count, using: &random)
            bytes.swapAt(index, other)
        default:
            // A base64url character replaced by another: stays well-formed, so reaches the signature check.
            let base64url = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
            if bytes[index] != UInt8(ascii: ".") {
                bytes[index] = base64url[Int.random(in: 0..<base64url.count, using: &random)]
            }
        }
        return bytes
    }
}
