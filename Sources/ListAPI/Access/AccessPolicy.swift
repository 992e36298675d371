/// Who may read and who may write, from the bearer tokens set at start.
///
/// - No token set: every request is allowed (listd refuses to bind a
///   non-loopback address in that case unless told to allow it).
/// - A write token set: every request except `/healthz` needs a valid token;
///   the write token may read and write, the read token (if set) may only read.
///
/// Tokens are compared in constant time (for a given token length) and never
/// logged or rendered: `description` redacts them.
public struct AccessPolicy: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// What a route needs.
    public enum Access: Sendable { case read, write }

    /// The outcome of checking one request.
    public enum Decision: Sendable, Equatable {
        /// The request may proceed.
        case allowed
        /// No credentials, or credentials that match no token: 401.
        case unauthenticated(reason: String)
        /// A valid read token on a route that writes: 403.
        case forbidden(reason: String)
    }

    private let writeToken: [UInt8]?
    private let readToken: [UInt8]?

    /// Creates a policy. A read token alone is a configuration error (nobody
    /// could write), reported by ``validationFailure(writeToken:readToken:)``.
    public init(writeToken: String?, readToken: String?) {
        self.writeToken = writeToken.map { Array($0.utf8) }
        self.readToken = readToken.map { Array($0.utf8) }
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

    /// Whether any token is set.
    public var requiresAuthentication: Bool { writeToken != nil }

    /// Decides whether a request with this `Authorization` header value may do `access`.
    public func decide(authorization: String?, access: Access) -> Decision {
        guard let writeToken else { return .allowed }
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
        if Self.constantTimeEquals(presented, writeToken) { return .allowed }
        if let readToken, Self.constantTimeEquals(presented, readToken) {
            return access == .read
                ? .allowed : .forbidden(reason: "the read token may not write; use the write token")
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
        switch (writeToken, readToken) {
        case (nil, _): "no tokens (open)"
        case (.some, nil): "write token set (redacted)"
        case (.some, .some): "write and read tokens set (redacted)"
        }
    }

    public var debugDescription: String { description }

    /// Reflection shows the redacted description only, so `dump` never prints a token.
    public var customMirror: Mirror { Mirror(self, children: ["tokens": description]) }
}
