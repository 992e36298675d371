import Foundation
import JWTKit

/// A token's payload as jwt-kit's parser decodes it: the contract's claims, each absent, present
/// or of the wrong type, never failing on a claim's shape.
///
/// Decoding never throws for a claim (only for a payload that is not a JSON object), so the
/// verifier judges claims after the signature, and a forged token learns nothing about them.
/// Claims the contract does not name are not decoded at all.
struct WireClaims: JWTPayload {
    /// One claim as it came.
    enum Field<Value: Sendable>: Sendable {
        /// Not in the payload, or `null`.
        case absent
        case present(Value)
        /// There, but not a `Value`.
        case wrongType
    }

    var sub: Field<String>
    var lists: Field<[String]>
    var rights: Field<[String]>
    var view: Field<String>
    var exp: Field<Double>
    var nbf: Field<Double>

    enum Key: String, CodingKey {
        case sub, lists, rights, view, exp, nbf
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        sub = Self.field(container, .sub)
        lists = Self.field(container, .lists)
        rights = Self.field(container, .rights)
        view = Self.field(container, .view)
        exp = Self.field(container, .exp)
        nbf = Self.field(container, .nbf)
    }

    private static func field<Value: Decodable>(_ container: KeyedDecodingContainer<Key>, _ key: Key) -> Field<Value> {
        guard container.contains(key) else { return .absent }
        if (try? container.decodeNil(forKey: key)) == true { return .absent }
        // The document is already parsed: what can fail here is the claim's type (or a number
        // too large for a Double), never the JSON.
        do {
            return .present(try container.decode(Value.self, forKey: key))
        } catch {
            return .wrongType
        }
    }

    /// Never encoded: ``TokenMinter`` writes its own payload.
    func encode(to encoder: any Encoder) throws {
        throw EncodingError.invalidValue(
            self, .init(codingPath: encoder.codingPath, debugDescription: "WireClaims is decoded only"))
    }

    /// Not used: ``TokenVerifier`` checks the claims itself, synchronously, after the signature.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// The payload ``TokenMinter`` writes: the contract's claims and `iat`, keys sorted, times in whole seconds.
struct MintedClaims: Encodable {
    var sub: String?
    var lists: [String]
    var rights: [String]
    var view: String?
    var exp: Int64
    var nbf: Int64?
    var iat: Int64
}

extension TokenClaims {
    /// The claims a verified payload holds, or why they are not acceptable. Times are not checked here.
    init(checking wire: WireClaims) throws(TokenRejection) {
        let expires: Double
        switch wire.exp {
        case .absent: throw .missingExp
        case .wrongType: throw .badClaim(name: "exp", why: "must be a number of seconds since 1970")
        case .present(let value): expires = value
        }
        let notBefore: Double?
        switch wire.nbf {
        case .absent: notBefore = nil
        case .wrongType: throw .badClaim(name: "nbf", why: "must be a number of seconds since 1970")
        case .present(let value): notBefore = value
        }
        let subject: String?
        switch wire.sub {
        case .absent: subject = nil
        case .wrongType: throw .badClaim(name: "sub", why: "must be a string")
        case .present(let value): subject = value
        }
        let lists: [ListPattern]
        switch wire.lists {
        case .absent:
            throw .badClaim(
                name: "lists", why: "is missing: a token names the lists it opens (ids, prefixes ending in *, or \"*\")"
            )
        case .wrongType: throw .badClaim(name: "lists", why: "must be an array of strings")
        case .present(let texts): lists = try Self.patterns(texts)
        }
        let rights: TokenRights
        switch wire.rights {
        case .absent:
            throw .badClaim(name: "rights", why: "is missing: a token lists its rights (read, write, admin)")
        case .wrongType: throw .badClaim(name: "rights", why: "must be an array of strings: read, write, admin")
        case .present(let words): rights = try Self.rights(words)
        }
        let view: String?
        switch wire.view {
        case .absent: view = nil
        case .wrongType:
            throw .badClaim(name: "view", why: "must be a string of view parameters, as in \"where=owner:u42\"")
        case .present(let text): view = text
        }
        self.init(
            subject: subject, lists: lists, rights: rights, view: view,
            expires: Date(timeIntervalSince1970: expires),
            notBefore: notBefore.map { Date(timeIntervalSince1970: $0) })
        try checkShape()
    }

    /// What verifying requires of any claims, minted or received: lists, rights, and a view if any, not empty.
    func checkShape() throws(TokenRejection) {
        if lists.isEmpty {
            throw .badClaim(name: "lists", why: "is empty: a token opens at least one list (\"*\" for every list)")
        }
        if rights.isEmpty {
            throw .badClaim(name: "rights", why: "is empty: a token has at least one of read, write and admin")
        }
        if rights.subtracting([.read, .write, .admin]).isEmpty == false {
            throw .badClaim(name: "rights", why: "holds a right that is not read, write or admin")
        }
        if view?.isEmpty == true {
            throw .badClaim(name: "view", why: "is empty; leave it out for a token that sees whole lists")
        }
    }

    private static func patterns(_ texts: [String]) throws(TokenRejection) -> [ListPattern] {
        var patterns: [ListPattern] = []
        patterns.reserveCapacity(texts.count)
        for text in texts {
            guard let pattern = ListPattern(text) else {
                let why = ListPattern.validationFailure(text) ?? "is not a list pattern"
                throw .badClaim(name: "lists", why: "has \(quoted(text)), which is not a pattern: \(why)")
            }
            patterns.append(pattern)
        }
        return patterns
    }

    private static func rights(_ words: [String]) throws(TokenRejection) -> TokenRights {
        var rights: TokenRights = []
        for word in words {
            guard let right = TokenRights(word: word) else {
                throw .badClaim(
                    name: "rights", why: "has \(quoted(word)), which is not a right: rights are read, write and admin")
            }
            rights.insert(right)
        }
        return rights
    }

    /// A claim's text in quotes, cut short: a rejection quotes what the token's signer wrote, never more than a few words.
    static func quoted(_ text: String) -> String {
        let cut = text.count > 40 ? text.prefix(40) + "…" : Substring(text)
        return String(reflecting: String(cut))
    }
}
