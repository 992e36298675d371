import Foundation
import Testing

@testable import Tokens

/// What a minted token holds, and what minting refuses.
@Suite struct TokenMinterTests {
    typealias F = TokenFixtures

    @Test func aMintedTokenHasTheContractsHeaderAndClaims() async throws {
        let (key, _) = try await F.hs256()
        let token = try TokenMinter(key: key).mint(F.fullClaims, issuedAt: F.now)
        let parts = F.parts(token)
        #expect(parts.count == 3)
        #expect(try Self.decode(parts[0]) == #"{"alg":"HS256","typ":"JWT"}"#)
        #expect(
            try Self.decode(parts[1])
                == #"{"exp":1800003600,"iat":1800000000,"lists":["u42-*","shared"],"nbf":1799999940,"#
                + #""rights":["read","write","admin"],"sub":"u42","view":"where=owner:u42"}"#)
    }

    @Test func timesAreWrittenInWholeSecondsRoundedDown() async throws {
        let (key, _) = try await F.hs256()
        let claims = TokenClaims(lists: [.everyList], rights: .read, expires: F.now + 0.9, notBefore: F.now - 0.1)
        let token = try TokenMinter(key: key).mint(claims, issuedAt: F.now + 0.5)
        #expect(
            try Self.decode(F.parts(token)[1])
                == #"{"exp":1800000000,"iat":1800000000,"lists":["*"],"nbf":1799999999,"rights":["read"]}"#)
    }

    @Test func theEd25519HeaderNamesEdDSA() async throws {
        let (signing, _, _) = try await F.ed25519()
        let token = try TokenMinter(key: signing).mint(F.fullClaims, issuedAt: F.now)
        #expect(try Self.decode(F.parts(token)[0]) == #"{"alg":"EdDSA","typ":"JWT"}"#)
        #expect(F.parts(token)[2].count == 86)
    }

    @Test func claimsNoVerifierAcceptsAreNotMinted() async throws {
        let (key, _) = try await F.hs256()
        let minter = try TokenMinter(key: key)
        let refused: [(TokenClaims, String)] = [
            (TokenClaims(lists: [], rights: .read, expires: F.now), "lists"),
            (TokenClaims(lists: [.everyList], rights: [], expires: F.now), "rights"),
            (TokenClaims(lists: [.everyList], rights: TokenRights(rawValue: 8), expires: F.now), "rights"),
            (TokenClaims(lists: [.everyList], rights: .read, view: "", expires: F.now), "view"),
        ]
        for (claims, claim) in refused {
            let error = #expect(throws: TokenRejection.self) { try minter.mint(claims, issuedAt: F.now) }
            guard case .badClaim(let name, _) = error else {
                Issue.record("minting with a bad \(claim): \(String(describing: error))")
                continue
            }
            #expect(name == claim)
        }
    }

    static func decode(_ part: String) throws -> String {
        var base64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return String(decoding: try #require(Data(base64Encoded: base64)), as: UTF8.self)
    }
}
