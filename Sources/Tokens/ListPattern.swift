/// One entry of a token's `lists` claim: a list id (`"groceries"`), a prefix of ids ending in `*`
/// (`"u42-*"`: every list whose id starts with `u42-`), or `"*"` alone, every list.
///
/// The characters are a list id's (`A-Z a-z 0-9 . _ ~ -`, at most 128 of them, as the contract
/// says), so a pattern is exactly what a list id can be, with `*` allowed once, at the end.
public struct ListPattern: Sendable, Hashable, CustomStringConvertible {
    /// What the pattern matches.
    public enum Kind: Sendable, Hashable {
        /// One list, by its id.
        case exact(String)
        /// Every list whose id starts with the text; `""` (the pattern `"*"`) matches every list.
        case prefix(String)
    }

    /// What the pattern matches.
    public let kind: Kind

    /// The longest id (and so the longest pattern body) the contract allows.
    public static let maxLength = 128

    /// The pattern `"*"`: every list.
    public static let everyList = ListPattern(kind: .prefix(""))

    private init(kind: Kind) { self.kind = kind }

    /// Parses a pattern, or returns `nil` for one that is not a list id with an optional trailing `*`
    /// (``validationFailure(_:)`` says why).
    public init?(_ text: String) {
        guard Self.validationFailure(text) == nil else { return nil }
        if text.utf8.last == UInt8(ascii: "*") {
            kind = .prefix(String(text.dropLast()))
        } else {
            kind = .exact(text)
        }
    }

    /// Why `text` is not a pattern, in words fit for an error message, or `nil` when it is one.
    public static func validationFailure(_ text: String) -> String? {
        var body = Substring(text).utf8
        if body.isEmpty { return "a list pattern must not be empty" }
        if body.last == UInt8(ascii: "*") { body = body.dropLast() }
        if body.count > maxLength { return "a list pattern has at most \(maxLength) characters before its *" }
        if body.contains(UInt8(ascii: "*")) { return "a list pattern may have * only as its last character" }
        if body.contains(where: { !isIDCharacter($0) }) {
            return "a list pattern may hold only A-Z a-z 0-9 . _ ~ - and a final *"
        }
        return nil
    }

    /// Whether the list `id` is one this pattern names.
    /// - Complexity: O(length of the pattern).
    public func matches(_ id: some StringProtocol) -> Bool {
        switch kind {
        case .exact(let exact): id.utf8.elementsEqual(exact.utf8)
        case .prefix(let prefix): id.utf8.starts(with: prefix.utf8)
        }
    }

    /// The pattern as written in a token: `"groceries"`, `"u42-*"`, `"*"`.
    public var description: String {
        switch kind {
        case .exact(let exact): exact
        case .prefix(let prefix): prefix + "*"
        }
    }

    /// A list id's characters, as ListModel's `Identifier` has them (Tokens imports none of our modules).
    private static func isIDCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
            UInt8(ascii: "-"):
            true
        default:
            false
        }
    }
}
