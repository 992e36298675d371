import ListView

/// Who may do what, from the bearer tokens set at start (docs/API.md, "Auth").
///
/// - No token and no token key: every request is allowed (listd refuses to
///   bind a non-loopback address then, unless told to allow it, and
///   ``HostCheck`` answers only loopback `Host` names).
/// - Static tokens: the write token may do everything; the read token may read
///   (and scrape `/metrics`).
/// - A token key (``signedTokens``): JWTs minted by the application's server,
///   each opening some lists, with some rights, maybe through a forced view.
///
/// Static tokens are compared in constant time (for a given token length);
/// no token is ever logged or rendered: `description` redacts them.
public struct AccessPolicy: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// What a route needs.
    public enum Access: Sendable {
        /// Reading a list (or the lists).
        case read
        /// Changing a list, or creating one.
        case write
        /// Indexes, the text index, deleting a list.
        case admin
        /// `/metrics`: the read token, the write token, or a signed token with `admin`.
        case metrics
    }

    /// The outcome of checking one request.
    enum Decision: Sendable {
        /// The request may proceed, as this caller.
        case allowed(Caller)
        /// No credentials, or credentials that match no token: 401.
        case unauthenticated(reason: String)
        /// Valid credentials that may not do this: 403.
        case forbidden(reason: String)
    }

    private let writeToken: [UInt8]?
    private let readToken: [UInt8]?
    /// Signed tokens (`--token-key`), when a key is set.
    private(set) var signedTokens: SignedTokens?

    /// Creates a policy. A read token alone is a configuration error (nobody
    /// could write), reported by ``validationFailure(writeToken:readToken:)``.
    public init(writeToken: String?, readToken: String?) {
        self.init(writeToken: writeToken, readToken: readToken, signedTokens: nil)
    }

    /// Creates a policy that also takes signed tokens.
    public init(writeToken: String?, readToken: String?, signedTokens: SignedTokens?) {
        self.writeToken = writeToken.map { Array($0.utf8) }
        self.readToken = readToken.map { Array($0.utf8) }
        self.signedTokens = signedTokens
    }

    /// This policy, also taking signed tokens checked with `signedTokens`.
    public func taking(_ signedTokens: SignedTokens) -> AccessPolicy {
        var policy = self
        policy.signedTokens = signedTokens
        return policy
    }

    /// Why a pair of tokens cannot be used, or `nil` when it can.
    public static func validationFailure(writeToken: String?, readToken: String?) -> String? {
        if let writeToken, writeToken.isEmpty { return "the write token is empty" }
        if let readToken, readToken.isEmpty { return "the read token is empty" }
        if readToken != nil && writeToken == nil {
            return "a read token needs a write token too (otherwise nobody could write)"
        }
        if let writeToken, writeToken == readToken { return "the read and write tokens must differ" }
        for token in [writeToken, readToken].compactMap({ $0 })
        where token.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) {
            return "tokens must be printable ASCII without spaces"
        }
        return nil
    }

    /// Whether any token (or a token key) is set.
    public var requiresAuthentication: Bool { writeToken != nil || signedTokens != nil }

    /// Decides whether a request with this `Authorization` header value, from
    /// `address`, may do `access`, and as whom.
    func decide(authorization: String?, access: Access, address: String) -> Decision {
        guard requiresAuthentication else { return .allowed(.open(address: address)) }
        guard let authorization else {
            return .unauthenticated(reason: "this server needs a bearer token: send 'Authorization: Bearer <token>'")
        }
        let utf8 = Array(authorization.utf8)
        let scheme = Array("bearer ".utf8)
        guard utf8.count > scheme.count,
            zip(utf8.prefix(scheme.count), scheme).allSatisfy({ $0 | 0x20 == $1 | 0x20 })
        else {
            return .unauthenticated(reason: "the Authorization header must use the Bearer scheme")
        }
        let presented = Array(utf8.dropFirst(scheme.count).drop(while: { $0 == 0x20 }))
        let addressKey = "address " + Caller.host(of: address)
        if let writeToken, Self.constantTimeEquals(presented, writeToken) {
            return .allowed(Caller(kind: .writeToken, rights: .all, limitKey: addressKey))
        }
        if let readToken, Self.constantTimeEquals(presented, readToken) {
            switch access {
            case .read, .metrics:
                return .allowed(Caller(kind: .readToken, rights: .read, limitKey: addressKey))
            case .write, .admin:
                return .forbidden(reason: "the read token may not write; use the write token")
            }
        }
        if let signedTokens, SignedTokens.looksSigned(presented) {
            return signedTokens.decide(presented, access: access)
        }
        return .unauthenticated(reason: "the bearer token is not valid")
    }

    /// Compares two byte strings in time that depends only on `expected`'s length.
    static func constantTimeEquals(_ presented: [UInt8], _ expected: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: presented.count ^ expected.count)
        difference |= UInt8(truncatingIfNeeded: (presented.count ^ expected.count) >> 8)
        for index in expected.indices {
            let byte = index < presented.count ? presented[index] : ~expected[index]
            difference |= byte ^ expected[index]
        }
        return difference == 0 && presented.count == expected.count
    }

    public var description: String {
        var parts: [String] = []
        switch (writeToken, readToken) {
        case (nil, _): break
        case (.some, nil): parts.append("write token set (redacted)")
        case (.some, .some): parts.append("write and read tokens set (redacted)")
        }
        if let signedTokens { parts.append("signed tokens (\(signedTokens.algorithmName))") }
        return parts.isEmpty ? "no tokens (open)" : parts.joined(separator: ", ")
    }

    public var debugDescription: String { description }

    /// Reflection shows the redacted description only, so `dump` never prints a token.
    public var customMirror: Mirror { Mirror(self, children: ["tokens": description]) }
}
