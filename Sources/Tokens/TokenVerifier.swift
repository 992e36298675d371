import Foundation
import JWTKit

/// Checks signed tokens (JWS compact JWTs, RFC 7519) against one ``TokenKey``, synchronously.
///
/// The checks, in order (RFC 8725's advice: the algorithm is pinned to the key):
/// 1. at most ``maxTokenBytes`` bytes, before anything is decoded (``TokenRejection/tooLarge``);
/// 2. three base64url parts, header and payload JSON objects (jwt-kit's `DefaultJWTParser`);
/// 3. `alg` is the key's algorithm: a missing `alg`, `none`, or any other is refused before the
///    signature is looked at, so an `HS256` token can never be checked against an Ed25519 public key
///    used as an HMAC secret; a `crit` header is refused;
/// 4. the signature, in its one canonical base64url spelling, is the key's signature of the first
///    two parts (jwt-kit's algorithm: a constant-time HMAC comparison, or Ed25519 verification);
/// 5. the claims: `exp` required, `lists` and `rights` required and well-formed, `sub` and `view`
///    strings; unknown claims ignored;
/// 6. `exp` and `nbf` against `now`, give or take the leeway.
///
/// ```swift
/// let verifier = TokenVerifier(key: try await TokenKey.load(path: "token.key"))
/// switch verifier.verify(bearer, now: Date()) {
/// case .success(let claims): claims.opens("u42-groceries")
/// case .failure(let rejection): print(rejection)   // safe to log and to show the client
/// }
/// ```
///
/// It is a value with no lock: share it between threads freely.
public struct TokenVerifier: Sendable {
    /// The largest token looked at: a token is a few hundred bytes, and anything larger is refused
    /// before decoding, so a huge header costs a length check.
    public static let maxTokenBytes = 8 * 1024

    /// The key tokens must be signed with.
    public let key: TokenKey
    /// How far past `exp`, and how far before `nbf`, a token is still accepted: clocks disagree.
    public let leeway: Duration

    private let leewaySeconds: Double
    private let parser = DefaultJWTParser()

    /// Creates a verifier for tokens signed with `key`.
    public init(key: TokenKey, leeway: Duration = .seconds(60)) {
        self.key = key
        self.leeway = leeway
        let (seconds, attoseconds) = leeway.components
        self.leewaySeconds = Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Verifies `token` (the text after `Bearer `) at the time `now`.
    /// - Returns: the token's claims, or why it is refused.
    public func verify(_ token: some StringProtocol, now: Date) -> Result<TokenClaims, TokenRejection> {
        verify(token.utf8, now: now)
    }

    /// Verifies `token`, given as its bytes, at the time `now`.
    /// - Returns: the token's claims, or why it is refused.
    /// - Complexity: O(n) in the token's length, plus one HMAC-SHA-256 or one Ed25519 verification.
    public func verify(_ token: some Collection<UInt8>, now: Date) -> Result<TokenClaims, TokenRejection> {
        // `count` first: a String's UTF-8 view counts in O(1), and nothing is copied for a token that is too large.
        guard token.count <= Self.maxTokenBytes else { return .failure(.tooLarge) }
        do {
            return .success(try check(Self.bytes(token), now: now))
        } catch {
            return .failure(error)
        }
    }

    /// `token` as an array, copied in one go when its storage is contiguous (a `String`'s UTF-8
    /// view, `[UInt8]`, `ArraySlice`, `Data`): these generics are not specialized across the module
    /// boundary, and element-by-element iteration through witness tables costs microseconds.
    private static func bytes(_ token: some Collection<UInt8>) -> [UInt8] {
        token.withContiguousStorageIfAvailable { Array($0) } ?? Array(token)
    }

    /// Whether `token` has a JWT's shape: three parts of base64url characters separated by two dots,
    /// the first two not empty (the third may be, as an unsigned `alg: none` token has it, so that
    /// such a token is refused as a JWT rather than taken for something else). Checks characters only.
    /// - Complexity: O(n) in the token's length.
    public static func looksLikeJWT(_ token: some StringProtocol) -> Bool {
        looksLikeJWT(token.utf8)
    }

    /// Whether `token`'s bytes have a JWT's shape; as for a string.
    public static func looksLikeJWT(_ token: some Collection<UInt8>) -> Bool {
        token.withContiguousStorageIfAvailable { dots(in: $0) != nil } ?? (dots(in: Array(token)) != nil)
    }

    /// The offsets of a JWT's two dots, or `nil` if `token` is not three base64url parts.
    private static func dots(in token: some Collection<UInt8>) -> (first: Int, second: Int)? {
        // Called with a buffer or an array, so specialized here.
        var first: Int?
        var second: Int?
        var offset = 0
        for byte in token {
            if byte == UInt8(ascii: ".") {
                if first == nil {
                    first = offset
                } else if second == nil {
                    second = offset
                } else {
                    return nil
                }
            } else if !Base64URL.isAlphabet(byte) {
                return nil
            }
            offset += 1
        }
        guard let first, let second, first > 0, second > first + 1 else { return nil }
        return (first, second)
    }

    private func check(_ token: [UInt8], now: Date) throws(TokenRejection) -> TokenClaims {
        guard let dots = Self.dots(in: token) else {
            throw .malformed("a token is three base64url parts separated by dots")
        }
        let parsed: (header: JWTHeader, payload: WireClaims, signature: Data)
        do {
            parsed = try parser.parse(token, as: WireClaims.self)
        } catch {
            // jwt-kit's words may quote the token's contents; these may not.
            throw .malformed("its header and payload must be base64url-encoded JSON objects")
        }
        try checkHeader(parsed.header)

        // One spelling per signature: base64url's last character can carry unused bits, and a
        // token accepted in two spellings is two tokens (a cache or a replay list would miss it).
        let signatureText = token[(dots.second + 1)...]
        guard parsed.signature.count == key.algorithm.signatureBytes,
            Base64URL.encode(parsed.signature).elementsEqual(signatureText)
        else { throw .signature }
        let signs = (try? key.signer.verify(parsed.signature, signs: token[..<dots.second])) ?? false
        guard signs else { throw .signature }

        let claims = try TokenClaims(checking: parsed.payload)
        if now.timeIntervalSince1970 >= claims.expires.timeIntervalSince1970 + leewaySeconds {
            throw .expired
        }
        if let notBefore = claims.notBefore, now.timeIntervalSince1970 < notBefore.timeIntervalSince1970 - leewaySeconds
        {
            throw .notYetValid
        }
        return claims
    }

    private func checkHeader(_ header: JWTHeader) throws(TokenRejection) {
        guard let field = header.fields["alg"] else { throw .algorithm("the header has no alg") }
        guard case .string(let alg) = field else { throw .algorithm("alg must be a string") }
        if alg.lowercased() == "none" { throw .algorithm("alg \"none\" (an unsigned token) is never accepted") }
        guard alg == key.algorithm.joseName else {
            let named = Self.registeredAlgorithms.contains(alg) ? "alg \"\(alg)\"" : "an unknown alg"
            throw .algorithm("\(named) is not this server's, which takes \(key.algorithm.joseName) tokens only")
        }
        if header.fields["crit"] != nil { throw .criticalHeader }
    }

    /// The JOSE algorithm names (RFC 7518 and later registrations) a rejection may quote; any other
    /// `alg` is the sender's free text, and is not repeated into logs.
    private static let registeredAlgorithms: Set<String> = [
        "HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512",
        "ES256K", "EdDSA", "Ed25519", "Ed448", "ML-DSA-44", "ML-DSA-65", "ML-DSA-87",
    ]
}
