import Crypto
import Foundation
import Testing

@testable import Tokens

/// Keys made at test time (no key file is checked in) and tokens built by hand, so a test can say
/// exactly which header and payload a token carries and whose key signed it.
enum TokenFixtures {
    /// A fixed moment the tests take as "now": 2027-01-15 08:00:00 UTC.
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// A fresh HS256 key and its secret's bytes.
    static func hs256() async throws -> (key: TokenKey, secret: [UInt8]) {
        let secret = Array("test-secret-\(UUID().uuidString)".utf8)
        return (try await TokenKey(contents: secret), secret)
    }

    /// A fresh Ed25519 key pair, as a signing key (from the private PEM), a verify-only key (from
    /// the public PEM), and the public PEM's text.
    static func ed25519() async throws -> (signing: TokenKey, verifying: TokenKey, publicPEM: String) {
        let privateKey = Curve25519.Signing.PrivateKey()
        let publicPEM = privateKey.publicKey.pemRepresentation
        let signing = try await TokenKey(contents: Array(privateKey.pemRepresentation.utf8))
        let verifying = try await TokenKey(contents: Array(publicPEM.utf8))
        return (signing, verifying, publicPEM)
    }

    /// Claims a verifier accepts at ``now``: every field set.
    static let fullClaims = TokenClaims(
        subject: "u42", lists: [pattern("u42-*"), pattern("shared")], rights: [.read, .write, .admin],
        view: "where=owner:u42", expires: now + 3600, notBefore: now - 60)

    /// A payload a verifier accepts at ``now``, as JSON text, with `extra` members spliced in.
    static func payload(_ extra: String = "", exp: String = "1800003600") -> String {
        #"{"sub":"u42","lists":["u42-*"],"rights":["read"],"exp":\#(exp)\#(extra.isEmpty ? "" : ",")\#(extra)}"#
    }

    /// A token with exactly this header and payload text, signed with `key`'s own algorithm (jwt-kit's).
    static func token(header: String, payload: String, signedWith key: TokenKey) throws -> String {
        let input = encode(header) + "." + encode(payload)
        return input + "." + encode(try key.signer.sign(Array(input.utf8)))
    }

    /// A token with this header and payload, HMAC-SHA-256-signed with `secret` whatever the header says:
    /// the forger's tool (used for the key-confusion attack, with an Ed25519 public key as the secret).
    static func hmacToken(header: String, payload: String, secret: [UInt8]) -> String {
        let input = encode(header) + "." + encode(payload)
        let mac = HMAC<SHA256>.authenticationCode(for: Array(input.utf8), using: SymmetricKey(data: secret))
        return input + "." + encode(Array(mac))
    }

    /// The usual header for `key`.
    static func header(_ key: TokenKey) -> String { #"{"alg":"\#(key.algorithm.joseName)","typ":"JWT"}"# }

    static func encode(_ text: String) -> String { encode(Array(text.utf8)) }

    static func encode(_ bytes: [UInt8]) -> String { String(decoding: Base64URL.encode(bytes), as: UTF8.self) }

    static func pattern(_ text: String) -> ListPattern {
        guard let pattern = ListPattern(text) else {
            Issue.record("\(text) is not a pattern")
            return .everyList
        }
        return pattern
    }

    /// The three parts of a token.
    static func parts(_ token: String) -> [String] {
        token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }
}

extension Result {
    /// The failure, or `nil` on success.
    var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }

    /// The success, or `nil` on failure.
    var success: Success? {
        if case .success(let success) = self { return success }
        return nil
    }
}
