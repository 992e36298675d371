import Foundation
import ListModel
import ListView
import Synchronization
import Tokens

/// Signed tokens (`--token-key`): JWTs an application's server mints for one
/// of its users (docs/API.md, "Auth"), checked with ``Tokens/TokenVerifier``
/// on the event loop, from the request's head alone.
public struct SignedTokens: Sendable {
    private let verifier: TokenVerifier
    /// Tokens already verified, by their whole text: a client sends the same
    /// token with every request until it expires, and an Ed25519 check costs
    /// about 85 µs, more than a cached GET. See ``VerifiedTokens``.
    private let verified: VerifiedTokens
    /// The key's JOSE algorithm, for the start-up line (`HS256`, `EdDSA`).
    public let algorithmName: String
    /// The clock; tests set it.
    let now: @Sendable () -> Date

    /// The most entries a token's `lists` may hold: `GET /lists` reads one
    /// range of ids for each.
    static let maxListPatterns = 64

    /// The leeway on `exp` and `nbf`, as the contract gives it.
    static let leewaySeconds: TimeInterval = 60

    public init(key: TokenKey) {
        self.init(key: key, now: { Date() })
    }

    init(key: TokenKey, now: @escaping @Sendable () -> Date) {
        self.verifier = TokenVerifier(key: key)
        self.verified = VerifiedTokens(capacity: 4096)
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
        let now = now()
        let caller: Caller
        if let cached = verified.caller(for: token, at: now) {
            caller = cached
        } else {
            switch admit(token, now: now) {
            case .success(let admitted):
                caller = admitted.caller
                verified.keep(token, admitted)
            case .failure(let refusal):
                return refusal.decision
            }
        }
        let needed: Caller.Rights
        switch access {
        case .read: needed = .read
        case .write: needed = .write
        case .admin, .metrics: needed = .admin
        }
        guard caller.rights.contains(needed) else {
            let word = access == .read ? "read" : access == .write ? "write" : "admin"
            return .forbidden(reason: "this token's rights do not include \(word)")
        }
        return .allowed(caller)
    }

    /// Why a token is refused, as the decision to send.
    struct Refusal: Error {
        let decision: AccessPolicy.Decision
    }

    /// Verifies `token` and makes its caller, with the times it is valid between.
    private func admit(_ token: [UInt8], now: Date) -> Result<VerifiedTokens.Entry, Refusal> {
        let claims: TokenClaims
        switch verifier.verify(token, now: now) {
        case .success(let verified): claims = verified
        case .failure(let rejection):
            return .failure(Refusal(decision: .unauthenticated(reason: "the signed token is not valid: \(rejection)")))
        }
        if claims.lists.count > Self.maxListPatterns {
            return .failure(
                Refusal(
                    decision: .unauthenticated(
                        reason:
                            "the signed token is not valid: its lists claim has \(claims.lists.count) entries; at most \(Self.maxListPatterns)"
                    )))
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
                return .failure(
                    Refusal(
                        decision: .unauthenticated(
                            reason: "the signed token is not valid: its view claim is not a view: \(error.detail)")))
            }
        }
        let caller = Caller(
            kind: .signed, subject: claims.subject,
            lists: ListScope(entries: claims.lists.map(Self.entry)), view: view, rights: rights,
            limitKey: "subject " + (claims.subject ?? "(none)"))
        return .success(
            VerifiedTokens.Entry(
                caller: caller, expires: claims.expires.addingTimeInterval(Self.leewaySeconds),
                notBefore: claims.notBefore.map { $0.addingTimeInterval(-Self.leewaySeconds) }))
    }
}

/// The callers of tokens verified lately, by the tokens' whole bytes, each
/// until its token expires: a repeat request skips the signature check.
///
/// A hit compares the whole token (a dictionary key), so only the very token
/// that was verified finds its entry. At most `capacity` entries; when full,
/// the expired ones go, and if none has, the oldest half.
final class VerifiedTokens: Sendable {
    struct Entry: Sendable {
        var caller: Caller
        /// When the token stops being accepted (its `exp` plus the leeway).
        var expires: Date
        /// When it starts being accepted (its `nbf` less the leeway).
        var notBefore: Date?
    }

    private struct State {
        var entries: [[UInt8]: (entry: Entry, serial: UInt64)] = [:]
        var serial: UInt64 = 0
    }

    private let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// The caller of `token` if it was verified and is valid at `now`.
    func caller(for token: [UInt8], at now: Date) -> Caller? {
        state.withLock { state in
            guard let found = state.entries[token] else { return nil }
            guard now < found.entry.expires, found.entry.notBefore.map({ now >= $0 }) ?? true else {
                if now >= found.entry.expires { state.entries[token] = nil }
                return nil
            }
            return found.entry.caller
        }
    }

    /// Keeps `entry` for `token`.
    func keep(_ token: [UInt8], _ entry: Entry) {
        let now = Date()
        state.withLock { state in
            if state.entries.count >= capacity {
                state.entries = state.entries.filter { $0.value.entry.expires > now }
                if state.entries.count >= capacity {
                    let cut = state.serial - UInt64(capacity / 2)
                    state.entries = state.entries.filter { $0.value.serial > cut }
                }
            }
            state.serial += 1
            state.entries[token] = (entry, state.serial)
        }
    }

    /// How many tokens are kept (for tests).
    var count: Int { state.withLock { $0.entries.count } }
}
