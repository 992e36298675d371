import JSON

/// What a view is: which items of a list it holds (`where`, `q`), in what
/// order (`order`), grouped into which sections (`group`), cut to what window
/// (`limit`). A pure value; see the contract's "Views" section.
///
/// A spec comes from a request's query items (``init(queryItems:)``) or from
/// the query-string form of `POST /changes` (``init(parsing:)``), and has one
/// ``canonicalQuery``: two specs are equal exactly when their canonical
/// queries are, so the canonical query is the key a server shares a view by.
///
/// ```swift
/// let spec = try ViewSpec(parsing: "where=done:false&order=-due&limit=50")
/// spec.canonicalQuery  // "where=done%3Afalse&order=-due&limit=50"
/// ```
///
/// Conditions are kept sorted by their canonical text with repeats removed
/// (they are a conjunction, so neither their order nor a repeat changes the
/// view).
public struct ViewSpec: Sendable, Hashable, CustomStringConvertible {
    /// One `where=path:value` condition: the model's value at `path` equals
    /// `value` (canonical texts equal; a missing path never matches).
    ///
    /// The same shape as the store's `ItemQuery.Condition`, so the item query
    /// route can parse with ``init(parsing:)`` and hand `path` and `value` on.
    public struct Condition: Sendable, Hashable, CustomStringConvertible {
        /// Object keys and array indices (as decimal text), outermost first.
        public let path: [String]
        /// The value required there: a string, number, boolean or null.
        public let value: JSONValue

        /// A condition from code.
        ///
        /// - Precondition: `path` is not empty, no component is empty or holds
        ///   a `.`, and `value` is a scalar (not an array or object): exactly
        ///   the conditions `where=` can name, so every spec has a query text.
        public init(path: [String], value: JSONValue) {
            precondition(ViewSpec.isWritablePath(path), "a condition path has no empty component and no \".\"")
            precondition(value.arrayValue == nil && value.objectValue == nil, "a condition's value is a scalar")
            self.path = path
            self.value = value
        }

        init(validPath path: [String], value: JSONValue) {
            self.path = path
            self.value = value
        }

        /// Equal when paths have the same UTF-8 bytes and values the same canonical text
        /// (Swift's `String ==` would join canonically equivalent keys, which JSON keeps apart).
        public static func == (lhs: Condition, rhs: Condition) -> Bool {
            lhs.text.utf8.elementsEqual(rhs.text.utf8)
        }

        /// Hashes consistently with `==`.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(Array(text.utf8))
        }

        /// `path:value`, the text of `where=` before percent-encoding (see ``ViewSpec/canonicalQuery``).
        public var description: String { text }
    }

    /// `order=path` or `order=-path`.
    public struct Order: Sendable, Hashable {
        /// Object keys and array indices (as decimal text), outermost first.
        public let path: [String]
        /// Whether larger values come first; ties stay by item id, ascending.
        public let descending: Bool

        /// An order from code.
        ///
        /// - Precondition: `path` is not empty, no component is empty or holds
        ///   a `.`, and an ascending path does not start with `-` (it would read
        ///   as descending).
        public init(path: [String], descending: Bool = false) {
            precondition(ViewSpec.isWritablePath(path), "an order path has no empty component and no \".\"")
            precondition(descending || path.first?.utf8.first != UInt8(ascii: "-"), "an ascending path starts with -")
            self.path = path
            self.descending = descending
        }

        init(validPath path: [String], descending: Bool) {
            self.path = path
            self.descending = descending
        }

        /// Equal when paths have the same UTF-8 bytes and the direction is the same.
        public static func == (lhs: Order, rhs: Order) -> Bool {
            lhs.descending == rhs.descending && ViewSpec.samePath(lhs.path, rhs.path)
        }

        /// Hashes consistently with `==`.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(descending)
            hasher.combine(path.map { Array($0.utf8) })
        }
    }

    /// The names of the query parameters that make a view.
    public static let parameterNames: [String] = ["where", "q", "order", "group", "limit"]

    /// Whether a query parameter named `name` is a view's (compared exactly):
    /// a route takes these for the view and decides itself about the others
    /// it accepts (`since`, `timeout`, `epoch`, `maxChanges`, …).
    public static func isViewParameter(_ name: String) -> Bool {
        switch name {
        case "where", "q", "order", "group", "limit": true
        default: false
        }
    }

    /// The largest `limit`.
    ///
    /// A window is what a client shows and holds at once, and every answer
    /// that resets a follower carries all of it: 10,000 items of up to a
    /// model's size each is already a large answer for one screen. The same
    /// figure bounds an unindexed item-query scan (`ListReader.scanLimit`).
    /// A follower that wants more follows the view without a limit.
    public static let maxLimit = 10_000

    /// Conditions that must all hold, sorted by their canonical text, no repeats.
    public let conditions: [Condition]
    /// `q`: a case-insensitive substring of some string value in the model; `nil` when absent.
    public let text: String?
    /// `order`: the items' order within each section; `nil`: the list's order.
    public let order: Order?
    /// `group`: the path whose distinct values make the view's sections; `nil`: the list's sections.
    public let group: [String]?
    /// `limit`: the window's size, 1...``maxLimit``; `nil`: no window.
    public let limit: Int?
    /// The one query text of this view (see ``canonicalQuery``), computed once.
    private let canonical: String

    /// A spec from code.
    ///
    /// - Parameters:
    ///   - conditions: sorted and made unique here.
    ///   - text: `q`; an empty text is no filter, as in item queries, and is kept as `nil`.
    ///   - group: a path as for ``Order/init(path:descending:)``.
    /// - Precondition: `limit` is in 1...``maxLimit``; `group` is a writable path.
    public init(
        conditions: [Condition] = [], text: String? = nil, order: Order? = nil, group: [String]? = nil,
        limit: Int? = nil
    ) {
        precondition(limit.map { (1...Self.maxLimit).contains($0) } ?? true, "limit is in 1...\(Self.maxLimit)")
        precondition(group.map(Self.isWritablePath) ?? true, "a group path has no empty component and no \".\"")
        self.init(checked: conditions, text: text, order: order, group: group, limit: limit)
    }

    init(checked conditions: [Condition], text: String?, order: Order?, group: [String]?, limit: Int?) {
        var unique: [Condition] = []
        for condition in conditions.sorted(by: { $0.text.utf8.lexicographicallyPrecedes($1.text.utf8) })
        where unique.last != condition {
            unique.append(condition)
        }
        self.conditions = unique
        self.text = text?.isEmpty == false ? text : nil
        self.order = order
        self.group = group
        self.limit = limit
        self.canonical = Self.canonicalQuery(
            conditions: unique, text: self.text, order: order, group: group, limit: limit)
    }

    /// The whole list: no view parameter at all.
    public static let wholeList = ViewSpec()

    /// Whether this spec names no view parameter (or only an empty `q`): the
    /// whole list, to be served as a list is, not as a view.
    public var isWholeList: Bool { canonical.isEmpty }

    /// The view's one query text: `where`s sorted by their encoded text, then
    /// `q`, `order`, `group` and `limit`, each percent-encoded with only
    /// `A-Z a-z 0-9 - . _ ~` left as they are (so `:` is `%3A`, a space
    /// `%20`, `+` `%2B`). Empty for the whole list.
    ///
    /// Equal views have equal texts, and `ViewSpec(parsing: spec.canonicalQuery)
    /// == spec` (for a `where` value from code, when its text is at most 4,096
    /// bytes, the most `where=` reads as JSON). The text reads the same whether
    /// or not its reader takes `+` as a space, so it works in a URL as it is.
    public var canonicalQuery: String { canonical }

    /// The canonical query.
    public var description: String { canonical }

    /// Equal when the canonical queries are.
    public static func == (lhs: ViewSpec, rhs: ViewSpec) -> Bool { lhs.canonical == rhs.canonical }

    /// Hashes consistently with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(canonical) }

    static func isWritablePath(_ path: [String]) -> Bool {
        !path.isEmpty && !path.contains { $0.isEmpty || $0.utf8.contains(UInt8(ascii: ".")) }
    }

    static func samePath(_ lhs: [String], _ rhs: [String]) -> Bool {
        lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { $0.utf8.elementsEqual($1.utf8) }
    }
}
