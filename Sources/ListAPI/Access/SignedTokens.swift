import Foundation
import ListModel
import ListView
import Tokens

/// Signed tokens (`--token-key`): JWTs an application's server mints for one
/// of its users (docs/API.md, "Auth"), checked with ``Tokens/TokenVerifier``
/// on the event loop, from the request's head alone.
public struct SignedTokens: Sendable {
    private let verifier: TokenVerifier
    /// The key's JOSE algorithm, for the start-up line (`HS256`, `EdDSA`).
    public let algorithmName: String
    /// The clock; tests set it.
    let now: @Sendable () -> Date

    /// The most entries a token's `lists` may hold: `GET /lists` reads one
    /// range of ids for each.
    static let maxListPatterns = 64

    public init(key: TokenKey) {
        self.init(key: key, now: { Date() })
    }

    init(key: TokenKey, now: @escaping @Sendable () -> Date) {
        self.verifier = TokenVerifier(key: key)
        self.algorithmName = key.algorithm.joseName
        self.now = now
    }

    /// Whether a bearer token has a JWT's shape (three base64url parts), so
    /// it is checked as one; anything else is just not a valid token.
    static func looksSigned(_ token: [UInt8]) -> Bool {
        TokenVerifier.looksLikeJWT(token)
    }

    static func entry(_ pattern: ListPattern) -> ListScope.Entry {
        switch pattern.kind {
        case .exact(let id): .exact(id)
        case .prefix(let prefix): .prefix(prefix)
        }
    }

    func decide(_ token: [UInt8], access: AccessPolicy.Access) -> AccessPolicy.Decision {
        let claims: TokenClaims
        switch verifier.verify(token, now: now()) {
        case .success(let verified): claims = verified
        case .failure(let rejection): return .unauthenticated(reason: "the signed token is not valid: \(rejection)")
        }
        if claims.lists.count > Self.maxListPatterns {
            return .unauthenticated(
                reason:
                    "the signed token is not valid: its lists claim has \(claims.lists.count) entries; at most \(Self.maxListPatterns)"
            )
        }
        var rights: Caller.Rights = []
        if claims.rights.contains(.read) { rights.insert(.read) }
        if claims.rights.contains(.write) { rights.formUnion([.read, .write]) }
        if claims.rights.contains(.admin) { rights.insert(.admin) }
        var view: ViewSpec?
        if let text = claims.view {
            do {
                let spec = try ViewSpec(parsing: text)
                view = spec.isWholeList ? nil : spec
            } catch {
                return .unauthenticated(
                    reason: "the signed token is not valid: its view claim is not a view: \(error.detail)")
            }
        }
        let caller = Caller(
            kind: .signed, subject: claims.subject,
            lists: ListScope(entries: claims.lists.map(Self.entry)), view: view, rights: rights,
            limitKey: "subject " + (claims.subject ?? "(none)"))
        let needed: Caller.Rights
        switch access {
        case .read: needed = .read
        case .write: needed = .write
        case .admin, .metrics: needed = .admin
        }
        guard rights.contains(needed) else {
            let word = access == .read ? "read" : access == .write ? "write" : "admin"
            return .forbidden(reason: "this token's rights do not include \(word)")
        }
        return .allowed(caller)
    }
}
