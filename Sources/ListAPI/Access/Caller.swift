import ListModel
import ListStore
import ListView

/// Who sent a request, as its token (or the lack of one) says, and what it may reach.
///
/// The ``AccessControl`` middleware settles it from the request's head, before
/// its body is read; every route then asks it, not the token: which lists
/// exist for this caller (``lists``), which view its reads are forced through
/// (``view``), and under which name its streams and long-polls are counted
/// (``limitKey``).
struct Caller: Sendable {
    enum Kind: Sendable, Equatable {
        /// No token is configured: everyone may do everything (on loopback).
        case open
        /// The static write token: read, write and admin on every list.
        case writeToken
        /// The static read token: read on every list, and `/metrics`.
        case readToken
        /// A signed token (JWT) with the claims below.
        case signed
    }

    var kind: Kind
    /// The token's `sub`, named in log lines; nil for static tokens and none.
    var subject: String?
    /// The lists this caller may see; nil: every list.
    var lists: ListScope?
    /// The view forced on every read (a signed token's `view` claim).
    var view: ViewSpec?
    /// What the caller may do.
    var rights: Rights
    /// Under which name concurrent streams and long-polls are counted
    /// (``CallerLimits``): the token's subject, or the client's address.
    var limitKey: String

    /// Whose `Idempotency-Key`s a request's are (API.md, Retries: a token's
    /// keys are not another token's): a signed token's subject, the static
    /// write (or read) token, or everyone when no token is configured.
    var idempotencyScope: String {
        switch kind {
        case .open: "open"
        case .writeToken: "write-token"
        case .readToken: "read-token"
        case .signed: "subject " + (subject ?? "(none)")
        }
    }

    struct Rights: OptionSet, Sendable {
        let rawValue: UInt8
        static let read = Rights(rawValue: 1)
        static let write = Rights(rawValue: 2)
        static let admin = Rights(rawValue: 4)
        static let all: Rights = [.read, .write, .admin]
    }

    /// Everyone, when no token is set.
    static func open(address: String) -> Caller {
        Caller(kind: .open, lists: nil, view: nil, rights: .all, limitKey: "address " + Self.host(of: address))
    }

    /// Whether the caller came from a loopback address (`127.0.0.0/8`, `::1`).
    var isLoopback: Bool {
        limitKey == "address ::1" || limitKey.hasPrefix("address 127.")
    }

    /// Whether the caller may see `list` at all (a list outside is answered as missing).
    func mayReach(_ list: Identifier) -> Bool { lists?.contains(list) ?? true }

    /// Throws the answer a list outside the caller's scope gets: the one a
    /// missing list gets (404), so a token cannot tell the two apart.
    func reach(_ list: Identifier) throws(Problem) {
        guard mayReach(list) else { throw Problem(StoreError(.listNotFound, "list \"\(list)\" not found")) }
    }

    /// The host part of `127.0.0.1:50312` or `[::1]:50312`: one address's
    /// connections share their limits, whatever their ports.
    static func host(of address: String) -> String {
        if address.hasPrefix("["), let end = address.firstIndex(of: "]") {
            return String(address[address.index(after: address.startIndex)..<end])
        }
        if let colon = address.lastIndex(of: ":"), address.firstIndex(of: ":") == colon {
            return String(address[..<colon])
        }
        return address
    }
}

/// The lists a signed token opens (its `lists` claim): ids, and prefixes written
/// with a trailing `*` (`u42-*`; `*` alone is every list).
struct ListScope: Sendable, Equatable {
    enum Entry: Sendable, Equatable {
        case exact(String)
        case prefix(String)
    }

    var entries: [Entry]

    func contains(_ list: Identifier) -> Bool {
        let id = list.rawValue
        return entries.contains { entry in
            switch entry {
            case .exact(let exact): exact.utf8.elementsEqual(id.utf8)
            case .prefix(let prefix): id.utf8.starts(with: prefix.utf8)
            }
        }
    }

    /// Whether `id` (any text, valid or not) is in scope.
    func contains(text id: String) -> Bool {
        guard let list = Identifier(id) else { return false }
        return contains(list)
    }

    /// The id ranges to read for `GET /lists`, in no particular order: ids are
    /// ASCII (`A-Z a-z 0-9 . _ ~ -`, all below U+007F), so every id that starts
    /// with `p` lies in `p ... p + "\u{7F}"` in byte order.
    var ranges: [ClosedRange<String>] {
        entries.map { entry in
            switch entry {
            case .exact(let id): id...id
            case .prefix(let prefix): prefix...(prefix + "\u{7F}")
            }
        }
    }
}
