import Foundation
import JWTKit

/// Mints tokens a ``TokenVerifier`` with the same key accepts: for `listd token mint`, tests, and
/// any Swift server that hands its users tokens.
///
/// The header is `{"alg":…,"typ":"JWT"}`; the payload holds the claims with sorted keys, times in
/// whole seconds since 1970 (fractions dropped), and `iat`.
///
/// ```swift
/// let minter = try TokenMinter(key: try await TokenKey.load(path: "token.key"))
/// let token = try minter.mint(
///     TokenClaims(subject: "u42", lists: [ListPattern("u42-*")!], rights: [.read, .write],
///                 expires: Date() + 3600),
///     issuedAt: Date())
/// ```
public struct TokenMinter: Sendable {
    /// The key tokens are signed with.
    public let key: TokenKey

    /// Creates a minter.
    /// - Throws: ``TokenKeyError/Reason/publicKeyOnly`` for an Ed25519 public key, which cannot sign.
    public init(key: TokenKey) throws(TokenKeyError) {
        guard key.canMint else { throw TokenKeyError(.publicKeyOnly) }
        self.key = key
    }

    /// A signed token carrying `claims`, issued at `issuedAt`.
    /// - Throws: ``TokenRejection/badClaim(name:why:)`` for claims any verifier would refuse (no
    ///   lists, no rights, an empty view); an error from jwt-kit if signing fails.
    public func mint(_ claims: TokenClaims, issuedAt: Date) throws -> String {
        try claims.checkShape()
        let payload = MintedClaims(
            sub: claims.subject, lists: claims.lists.map(\.description), rights: claims.rights.words, view: claims.view,
            exp: Self.seconds(claims.expires), nbf: claims.notBefore.map(Self.seconds), iat: Self.seconds(issuedAt))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let header = Array(#"{"alg":"\#(key.algorithm.joseName)","typ":"JWT"}"#.utf8)
        var token = Base64URL.encode(header)
        token.append(UInt8(ascii: "."))
        token += Base64URL.encode(try encoder.encode(payload))
        let signature = try key.signer.sign(token)
        token.append(UInt8(ascii: "."))
        token += Base64URL.encode(signature)
        return String(decoding: token, as: UTF8.self)
    }

    /// Whole seconds since 1970, rounded down, clamped to what an `Int64` holds.
    private static func seconds(_ date: Date) -> Int64 {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds.isFinite else { return seconds > 0 ? .max : .min }
        return Int64(exactly: seconds) ?? (seconds > 0 ? .max : .min)
    }
}
