/// Why ``TokenVerifier`` refused a token, in words safe to show the client and to log: a rejection
/// never quotes the token, its signature or the key. (It may quote a claim's value, which only a
/// token that verified can carry, and an `alg` only when it is a registered algorithm name.)
public enum TokenRejection: Error, Sendable, Hashable, CustomStringConvertible {
    /// The token is over ``TokenVerifier/maxTokenBytes``; nothing of it was decoded.
    case tooLarge
    /// The token is not a JWS compact serialization of JSON objects: what is wrong.
    case malformed(String)
    /// The header's `alg` is missing, is `none`, or is not the key's algorithm (an `HS256` token
    /// presented to an `EdDSA` key is the key-confusion attack): which of these.
    case algorithm(String)
    /// The header has a `crit` parameter: it names extensions that must be understood, and listd understands none.
    case criticalHeader
    /// The signature is not the key's signature of the token's header and payload.
    case signature
    /// `exp` is past (beyond the leeway).
    case expired
    /// `nbf` is ahead (beyond the leeway).
    case notYetValid
    /// The token has no `exp`: listd accepts no token that never expires.
    case missingExp
    /// A claim is missing, of the wrong type, or holds a value the contract does not allow: its name and what is wrong.
    case badClaim(name: String, why: String)

    /// One sentence, fit for a problem's `detail` and for a log line.
    public var description: String {
        switch self {
        case .tooLarge: "the token is larger than \(TokenVerifier.maxTokenBytes) bytes"
        case .malformed(let why): "the token is malformed: \(why)"
        case .algorithm(let why): "the token's algorithm is refused: \(why)"
        case .criticalHeader: "the token's header has a crit parameter, and listd understands no critical extension"
        case .signature: "the token's signature does not verify with listd's token key"
        case .expired: "the token has expired"
        case .notYetValid: "the token is not valid yet (its nbf is ahead)"
        case .missingExp: "the token has no exp claim, and listd accepts only tokens that expire"
        case .badClaim(let name, let why): "the token's \(name) claim \(why)"
        }
    }
}
