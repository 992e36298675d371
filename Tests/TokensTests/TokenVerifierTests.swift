import Foundation
import Testing

@testable import Tokens

/// Verification: round trips for both algorithms, and each way a token is refused, each with its
/// own ``TokenRejection``.
@Suite struct TokenVerifierTests {
    typealias F = TokenFixtures

    // MARK: Round trips

    @Test(arguments: TokenAlgorithm.allCases)
    func mintedTokensVerify(_ algorithm: TokenAlgorithm) async throws {
        let (signing, verifying) = try await Self.keys(algorithm)
        let token = try TokenMinter(key: signing).mint(F.fullClaims, issuedAt: F.now)
        let claims = try TokenVerifier(key: verifying).verify(token, now: F.now).get()
        #expect(claims == F.fullClaims)
        #expect(claims.opens("u42-groceries"))
        #expect(claims.opens("shared"))
        #expect(!claims.opens("u43-groceries"))
        // The bytes overload and a Substring say the same.
        #expect(TokenVerifier(key: verifying).verify(Array(token.utf8), now: F.now).success == F.fullClaims)
        #expect(TokenVerifier(key: verifying).verify(token[...], now: F.now).success == F.fullClaims)
    }

    @Test(arguments: TokenAlgorithm.allCases)
    func minimalClaimsVerify(_ algorithm: TokenAlgorithm) async throws {
        let (signing, verifying) = try await Self.keys(algorithm)
        let claims = TokenClaims(lists: [.everyList], rights: [.read], expires: F.now + 1)
        let token = try TokenMinter(key: signing).mint(claims, issuedAt: F.now)
        #expect(TokenVerifier(key: verifying).verify(token, now: F.now).success == claims)
    }

    @Test func handWrittenTokensVerifyAndUnknownClaimsAreIgnored() async throws {
        let (key, _) = try await F.hs256()
        let payload = F.payload(#""iss":"app","aud":["listd"],"iat":1799999999,"extra":{"deep":[1,[2,{"x":null}]]}"#)
        let token = try F.token(header: F.header(key), payload: payload, signedWith: key)
        let claims = try TokenVerifier(key: key).verify(token, now: F.now).get()
        #expect(claims.subject == "u42")
        #expect(claims.lists == [F.pattern("u42-*")])
        #expect(claims.rights == .read)
        #expect(claims.expires == Date(timeIntervalSince1970: 1_800_003_600))
        #expect(claims.view == nil && claims.notBefore == nil)
    }

    @Test func writeImpliesRead() async throws {
        let (key, _) = try await F.hs256()
        let payload = #"{"lists":["a"],"rights":["write"],"exp":1800003600}"#
        let token = try F.token(header: F.header(key), payload: payload, signedWith: key)
        let claims = try TokenVerifier(key: key).verify(token, now: F.now).get()
        #expect(claims.rights == [.read, .write])
        var set = TokenClaims(lists: [.everyList], rights: .admin, expires: F.now)
        set.rights = .write
        #expect(set.rights == [.read, .write])
    }

    @Test func fractionalTimesAreAccepted() async throws {
        let (key, _) = try await F.hs256()
        let token = try F.token(header: F.header(key), payload: F.payload(exp: "1800000000.5"), signedWith: key)
        #expect(TokenVerifier(key: key, leeway: .zero).verify(token, now: F.now).success != nil)
        #expect(TokenVerifier(key: key, leeway: .zero).verify(token, now: F.now + 0.5).failure == .expired)
    }

    // MARK: The algorithm

    @Test(arguments: [#"{"alg":"none","typ":"JWT"}"#, #"{"alg":"None"}"#, #"{"alg":"NONE"}"#])
    func unsignedTokensAreRefused(_ header: String) async throws {
        let (key, _) = try await F.hs256()
        let unsigned = F.encode(header) + "." + F.encode(F.payload()) + "."
        #expect(TokenVerifier.looksLikeJWT(unsigned))
        #expect(Self.isAlgorithm(TokenVerifier(key: key).verify(unsigned, now: F.now).failure))
        // Even with a signature attached.
        let signed = try F.token(header: header, payload: F.payload(), signedWith: key)
        #expect(Self.isAlgorithm(TokenVerifier(key: key).verify(signed, now: F.now).failure))
    }

    @Test(arguments: [#"{"typ":"JWT"}"#, #"{"alg":null}"#, #"{"alg":256}"#, #"{"alg":["HS256"]}"#, #"{"alg":"hs256"}"#])
    func aMissingOrMalformedAlgIsRefused(_ header: String) async throws {
        let (key, _) = try await F.hs256()
        let token = try F.token(header: header, payload: F.payload(), signedWith: key)
        #expect(Self.isAlgorithm(TokenVerifier(key: key).verify(token, now: F.now).failure))
    }

    /// The classic key confusion: an attacker who knows the Ed25519 public key signs an HS256
    /// token with the public key's bytes as the HMAC secret, hoping the server checks an HMAC with them.
    @Test func hs256SignedWithThePublicKeyIsRefusedByAnEdDSAKey() async throws {
        let (_, verifying, publicPEM) = try await F.ed25519()
        let verifier = TokenVerifier(key: verifying)
        let header = #"{"alg":"HS256","typ":"JWT"}"#
        let secrets: [[UInt8]] = [
            Array(publicPEM.utf8), Array(publicPEM.trimmingCharacters(in: .whitespacesAndNewlines).utf8),
        ]
        for secret in secrets {
            let forged = F.hmacToken(header: header, payload: F.payload(), secret: secret)
            let rejection = verifier.verify(forged, now: F.now).failure
            #expect(Self.isAlgorithm(rejection))
            #expect(rejection?.description.contains("HS256") == true)
        }
    }

    @Test func anEdDSATokenIsRefusedByAnHS256Key() async throws {
        let (signing, _, _) = try await F.ed25519()
        let (key, _) = try await F.hs256()
        let token = try TokenMinter(key: signing).mint(F.fullClaims, issuedAt: F.now)
        #expect(Self.isAlgorithm(TokenVerifier(key: key).verify(token, now: F.now).failure))
    }

    @Test(arguments: ["HS384", "RS256", "ES256", "PS256", "EdDSA", "something-else"])
    func otherAlgorithmsAreRefused(_ alg: String) async throws {
        let (key, _) = try await F.hs256()
        let token = try F.token(header: #"{"alg":"\#(alg)"}"#, payload: F.payload(), signedWith: key)
        let rejection = TokenVerifier(key: key).verify(token, now: F.now).failure
        #expect(Self.isAlgorithm(rejection))
        // A registered name is quoted; free text is not repeated into logs.
        #expect(rejection?.description.contains(alg) == (alg != "something-else"))
    }

    @Test func aCritHeaderIsRefused() async throws {
        let (key, _) = try await F.hs256()
        let token = try F.token(
            header: #"{"alg":"HS256","crit":["b64"],"b64":false}"#, payload: F.payload(), signedWith: key)
        #expect(TokenVerifier(key: key).verify(token, now: F.now).failure == .criticalHeader)
    }

    // MARK: The signature

    @Test(arguments: TokenAlgorithm.allCases)
    func aTamperedPayloadIsRefused(_ algorithm: TokenAlgorithm) async throws {
        let (signing, verifying) = try await Self.keys(algorithm)
        let token = try TokenMinter(key: signing).mint(
            TokenClaims(lists: [F.pattern("u42-*")], rights: .read, expires: F.now + 60), issuedAt: F.now)
        var parts = F.parts(token)
        parts[1] = F.encode(#"{"lists":["*"],"rights":["admin"],"exp":1800000060,"iat":1800000000}"#)
        #expect(TokenVerifier(key: verifying).verify(parts.joined(separator: "."), now: F.now).failure == .signature)
    }

    @Test(arguments: TokenAlgorithm.allCases)
    func aTokenFromAnotherKeyIsRefused(_ algorithm: TokenAlgorithm) async throws {
        let (signing, _) = try await Self.keys(algorithm)
        let (_, otherVerifying) = try await Self.keys(algorithm)
        let token = try TokenMinter(key: signing).mint(F.fullClaims, issuedAt: F.now)
        #expect(TokenVerifier(key: otherVerifying).verify(token, now: F.now).failure == .signature)
    }

    @Test(arguments: TokenAlgorithm.allCases)
    func aSignatureInAnotherSpellingIsRefused(_ algorithm: TokenAlgorithm) async throws {
        let (signing, verifying) = try await Self.keys(algorithm)
        let token = try TokenMinter(key: signing).mint(F.fullClaims, issuedAt: F.now)
        // The last character of a 32- or 64-byte signature carries unused low bits: flipping one
        // decodes to the same bytes, but is not the canonical spelling.
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var characters = Array(token)
        let last = try #require(characters.last.flatMap { alphabet.firstIndex(of: $0) })
        characters[characters.count - 1] = alphabet[last ^ 1]
        #expect(TokenVerifier(key: verifying).verify(String(characters), now: F.now).failure == .signature)
        // A signature of the wrong length.
        let short = F.parts(token)[0...1].joined(separator: ".") + "." + F.encode([UInt8](repeating: 7, count: 16))
        #expect(TokenVerifier(key: verifying).verify(short, now: F.now).failure == .signature)
        let none = F.parts(token)[0...1].joined(separator: ".") + "."
        #expect(TokenVerifier(key: verifying).verify(none, now: F.now).failure == .signature)
    }

    // MARK: Time

    @Test func expiryHonoursTheLeeway() async throws {
        let (key, _) = try await F.hs256()
        let token = try TokenMinter(key: key).mint(
            TokenClaims(lists: [.everyList], rights: .read, expires: F.now), issuedAt: F.now - 600)
        let lenient = TokenVerifier(key: key)
        #expect(lenient.verify(token, now: F.now - 1).success != nil)
        #expect(lenient.verify(token, now: F.now + 59).success != nil)
        #expect(lenient.verify(token, now: F.now + 60).failure == .expired)
        #expect(lenient.verify(token, now: F.now + 86_400).failure == .expired)
        let strict = TokenVerifier(key: key, leeway: .zero)
        #expect(strict.verify(token, now: F.now - 1).success != nil)
        #expect(strict.verify(token, now: F.now).failure == .expired)
        let custom = TokenVerifier(key: key, leeway: .milliseconds(1500))
        #expect(custom.verify(token, now: F.now + 1).success != nil)
        #expect(custom.verify(token, now: F.now + 1.5).failure == .expired)
    }

    @Test func notBeforeHonoursTheLeeway() async throws {
        let (key, _) = try await F.hs256()
        let token = try TokenMinter(key: key).mint(
            TokenClaims(lists: [.everyList], rights: .read, expires: F.now + 3600, notBefore: F.now), issuedAt: F.now)
        let lenient = TokenVerifier(key: key)
        #expect(lenient.verify(token, now: F.now).success != nil)
        #expect(lenient.verify(token, now: F.now - 60).success != nil)
        #expect(lenient.verify(token, now: F.now - 61).failure == .notYetValid)
        let strict = TokenVerifier(key: key, leeway: .zero)
        #expect(strict.verify(token, now: F.now).success != nil)
        #expect(strict.verify(token, now: F.now - 1).failure == .notYetValid)
    }

    // MARK: Claims

    @Test(arguments: [#"{"lists":["a"],"rights":["read"]}"#, #"{"lists":["a"],"rights":["read"],"exp":null}"#])
    func aTokenWithoutExpIsRefused(_ payload: String) async throws {
        let (key, _) = try await F.hs256()
        let token = try F.token(header: F.header(key), payload: payload, signedWith: key)
        #expect(TokenVerifier(key: key).verify(token, now: F.now).failure == .missingExp)
    }

    /// Payloads with one claim wrong, and the claim each rejection must name.
    static let badClaims: [(payload: String, claim: String)] = [
        (#"{"lists":["a"],"rights":["read"],"exp":"1800003600"}"#, "exp"),
        (#"{"lists":["a"],"rights":["read"],"exp":1800003600,"nbf":"soon"}"#, "nbf"),
        (#"{"lists":["a"],"rights":["read"],"exp":1800003600,"sub":42}"#, "sub"),
        (#"{"rights":["read"],"exp":1800003600}"#, "lists"),
        (#"{"lists":[],"rights":["read"],"exp":1800003600}"#, "lists"),
        (#"{"lists":"u42-*","rights":["read"],"exp":1800003600}"#, "lists"),
        (#"{"lists":["a",1],"rights":["read"],"exp":1800003600}"#, "lists"),
        (#"{"lists":["a*b"],"rights":["read"],"exp":1800003600}"#, "lists"),
        (#"{"lists":[""],"rights":["read"],"exp":1800003600}"#, "lists"),
        (#"{"lists":["a b"],"rights":["read"],"exp":1800003600}"#, "lists"),
        (#"{"lists":["a"],"exp":1800003600}"#, "rights"),
        (#"{"lists":["a"],"rights":[],"exp":1800003600}"#, "rights"),
        (#"{"lists":["a"],"rights":["read","delete"],"exp":1800003600}"#, "rights"),
        (#"{"lists":["a"],"rights":"read","exp":1800003600}"#, "rights"),
        (#"{"lists":["a"],"rights":["Read"],"exp":1800003600}"#, "rights"),
        (#"{"lists":["a"],"rights":["read"],"exp":1800003600,"view":{"where":"x"}}"#, "view"),
        (#"{"lists":["a"],"rights":["read"],"exp":1800003600,"view":3}"#, "view"),
        (#"{"lists":["a"],"rights":["read"],"exp":1800003600,"view":""}"#, "view"),
    ]

    @Test(arguments: badClaims)
    func aBadClaimIsRefusedByName(_ payload: String, _ claim: String) async throws {
        let (key, _) = try await F.hs256()
        let token = try F.token(header: F.header(key), payload: payload, signedWith: key)
        let rejection = TokenVerifier(key: key).verify(token, now: F.now).failure
        guard case .badClaim(let name, let why) = rejection else {
            Issue.record("expected a bad \(claim) claim, got \(String(describing: rejection))")
            return
        }
        #expect(name == claim)
        #expect(!why.isEmpty)
    }

    /// A claim is judged only after the signature: a forged token with a bad claim is a bad signature.
    @Test func claimsAreJudgedAfterTheSignature() async throws {
        let (key, _) = try await F.hs256()
        let (other, _) = try await F.hs256()
        let token = try F.token(header: F.header(key), payload: #"{"lists":[],"exp":"x"}"#, signedWith: other)
        #expect(TokenVerifier(key: key).verify(token, now: F.now).failure == .signature)
    }

    // MARK: Shape and size

    @Test func aTokenOverTheLimitIsRefusedBeforeDecoding() async throws {
        let (key, _) = try await F.hs256()
        let padding = String(repeating: "x", count: TokenVerifier.maxTokenBytes)
        let large = try F.token(header: F.header(key), payload: F.payload(#""pad":"\#(padding)""#), signedWith: key)
        #expect(TokenVerifier(key: key).verify(large, now: F.now).failure == .tooLarge)
        let junk = String(repeating: "a", count: TokenVerifier.maxTokenBytes + 1)
        #expect(TokenVerifier(key: key).verify(junk, now: F.now).failure == .tooLarge)
        #expect(TokenVerifier(key: key).verify(Array(junk.utf8), now: F.now).failure == .tooLarge)
        // Just under the limit is decoded (and here refused for its signature, not its size).
        let under = String(repeating: "a", count: TokenVerifier.maxTokenBytes - 10) + ".bbbb.cccc"
        #expect(TokenVerifier(key: key).verify(under, now: F.now).failure != .tooLarge)
    }

    @Test(arguments: [
        "", "abc", "a.b", "a.b.c.d", ".b.c", "a..c", "a b.c.d", "é.b.c", "eyJ.eyJ.", "a=.b.c", "a+/.b.c",
    ])
    func malformedTokensAreRefused(_ token: String) async throws {
        let (key, _) = try await F.hs256()
        guard case .malformed = TokenVerifier(key: key).verify(token, now: F.now).failure else {
            Issue.record("\(token.debugDescription) is not refused as malformed")
            return
        }
    }

    @Test(arguments: [#"not json"#, #"[1,2]"#, #""a string""#, #"{"lists":["a"]"#])
    func aSignedPayloadThatIsNotAJSONObjectIsMalformed(_ payload: String) async throws {
        let (key, _) = try await F.hs256()
        let token = try F.token(header: F.header(key), payload: payload, signedWith: key)
        guard case .malformed = TokenVerifier(key: key).verify(token, now: F.now).failure else {
            Issue.record("\(payload) is not refused as malformed")
            return
        }
        let badHeader = try F.token(header: "HS256", payload: F.payload(), signedWith: key)
        guard case .malformed = TokenVerifier(key: key).verify(badHeader, now: F.now).failure else {
            Issue.record("a header that is not JSON is not refused as malformed")
            return
        }
    }

    @Test func looksLikeJWT() async throws {
        let (key, _) = try await F.hs256()
        let token = try TokenMinter(key: key).mint(F.fullClaims, issuedAt: F.now)
        #expect(TokenVerifier.looksLikeJWT(token))
        #expect(TokenVerifier.looksLikeJWT(Array(token.utf8)))
        #expect(TokenVerifier.looksLikeJWT("a.b.c"))
        #expect(TokenVerifier.looksLikeJWT("a-_9.B.") == true)
        for text in ["", "abc", "a.b", "a.b.c.d", ".b.c", "a..c", "a.b.c ", "a.b.c=", "a+b.c.d", "ü.b.c", "..", "..."] {
            #expect(!TokenVerifier.looksLikeJWT(text), "\(text.debugDescription)")
        }
    }

    /// No rejection repeats the token, its parts or the key.
    @Test func rejectionsNeverQuoteTheTokenOrTheKey() async throws {
        let (key, secret) = try await F.hs256()
        let secretText = String(decoding: secret, as: UTF8.self)
        let good = try TokenMinter(key: key).mint(F.fullClaims, issuedAt: F.now)
        let parts = F.parts(good)
        let candidates = [
            good, parts[0] + "." + parts[1] + ".", parts[0] + "." + parts[1] + "." + String(parts[2].reversed()),
            try F.token(header: #"{"alg":"\#(parts[2])"}"#, payload: F.payload(), signedWith: key),
            F.hmacToken(header: F.header(key), payload: F.payload(), secret: Array("x".utf8) + secret),
        ]
        for token in candidates {
            for now in [F.now, F.now + 86_400 * 365] {
                guard let rejection = TokenVerifier(key: key).verify(token, now: now).failure else { continue }
                let text = rejection.description
                #expect(!text.contains(secretText))
                for part in F.parts(token) where part.count >= 8 { #expect(!text.contains(part)) }
            }
        }
    }

    // MARK: Helpers

    /// A signing key and a verifying key for `algorithm` (for EdDSA, the public half alone).
    static func keys(_ algorithm: TokenAlgorithm) async throws -> (signing: TokenKey, verifying: TokenKey) {
        switch algorithm {
        case .hs256:
            let (key, _) = try await F.hs256()
            return (key, key)
        case .eddsa:
            let (signing, verifying, _) = try await F.ed25519()
            return (signing, verifying)
        }
    }

    static func isAlgorithm(_ rejection: TokenRejection?) -> Bool {
        if case .algorithm = rejection { return true }
        return false
    }
}
