import Foundation

/// What a token lets its bearer do: any of `read`, `write` and `admin`, as its `rights` claim lists them.
///
/// `write` includes `read` (``TokenClaims`` adds ``read`` wherever ``write`` is); `admin` (indexes,
/// the text index, deleting a list) is its own right and includes neither.
public struct TokenRights: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The bits.
    public let rawValue: UInt8

    /// Creates a set from its bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Reading lists: snapshots, item queries, changes, events.
    public static let read = TokenRights(rawValue: 1 << 0)
    /// Writing lists, and creating a list inside the token's `lists`.
    public static let write = TokenRights(rawValue: 1 << 1)
    /// Indexes, the text index, deleting a list.
    public static let admin = TokenRights(rawValue: 1 << 2)

    private static let named: [(word: String, right: TokenRights)] = [
        ("read", .read), ("write", .write), ("admin", .admin),
    ]

    /// The right a word of the `rights` claim names (`"read"`, `"write"`, `"admin"`), or `nil`.
    public init?(word: some StringProtocol) {
        guard let entry = Self.named.first(where: { $0.word.utf8.elementsEqual(word.utf8) }) else { return nil }
        self = entry.right
    }

    /// The words of the `rights` claim for this set, in the order read, write, admin.
    public var words: [String] { Self.named.filter { contains($0.right) }.map(\.word) }

    /// The words, comma-separated: `read,write`.
    public var description: String { words.joined(separator: ",") }
}

/// What a verified token says: who it is for, which lists it opens, what it may do with them,
/// the view forced on its reads, and when it is valid.
///
/// These are the contract's claims (API.md, "Auth"): `sub`, `lists`, `rights`, `view`, `exp`,
/// `nbf`. Other claims (`iat`, `iss`, `aud`, an application's own) are ignored.
public struct TokenClaims: Sendable, Equatable {
    /// `sub`: who the token is for, for logs (`"u42"`).
    public var subject: String?
    /// `lists`: the lists the token opens; never empty in a verified token.
    public var lists: [ListPattern]
    /// `rights`: what the token may do; ``TokenRights/write`` always comes with ``TokenRights/read``.
    public var rights: TokenRights {
        didSet { if rights.contains(.write) { rights.insert(.read) } }
    }
    /// `view`: a view's parameters as a query string (`"where=owner:u42"`), forced on every read;
    /// the service parses it. Never empty in a verified token.
    public var view: String?
    /// `exp`: when the token stops being accepted (give or take the verifier's leeway).
    public var expires: Date
    /// `nbf`: when the token starts being accepted (give or take the verifier's leeway).
    public var notBefore: Date?

    /// Creates claims; ``TokenRights/write`` in `rights` brings ``TokenRights/read``.
    public init(
        subject: String? = nil, lists: [ListPattern], rights: TokenRights, view: String? = nil, expires: Date,
        notBefore: Date? = nil
    ) {
        self.subject = subject
        self.lists = lists
        self.rights = rights.contains(.write) ? rights.union(.read) : rights
        self.view = view
        self.expires = expires
        self.notBefore = notBefore
    }

    /// Whether the token opens the list `id`: one of ``lists`` matches it.
    /// - Complexity: O(total length of the patterns).
    public func opens(_ id: some StringProtocol) -> Bool {
        lists.contains { $0.matches(id) }
    }
}
