import JSON
import ListModel

/// A filtered, paginated read of a list's items (`GET /lists/{list}/items`).
public struct ItemQuery: Sendable, Hashable {
    /// One `where=path:value` condition: the model's value at `path` equals `value`.
    public struct Condition: Sendable, Hashable {
        /// Object keys and array indices (as decimal text), outermost first.
        public var path: [String]
        /// The value required there: a string, number, boolean or null.
        public var value: JSONValue

        /// Creates a condition.
        public init(path: [String], value: JSONValue) {
            self.path = path
            self.value = value
        }
    }

    /// Only items of this section, when set.
    public var section: Identifier?
    /// Conditions that must all hold.
    public var conditions: [Condition]
    /// A substring that must occur in one of the model's string values
    /// (case-insensitive), when set.
    public var text: String?
    /// The most items to return (1...``StoreConfiguration/maxPageSize``).
    public var limit: Int
    /// The cursor of the previous page, or `nil` for the first page.
    public var after: String?

    /// Creates a query.
    public init(
        section: Identifier? = nil, conditions: [Condition] = [], text: String? = nil, limit: Int = 100,
        after: String? = nil
    ) {
        self.section = section
        self.conditions = conditions
        self.text = text
        self.limit = limit
        self.after = after
    }
}

/// One page of an items query.
public struct ItemPage: Sendable, Hashable {
    /// One matching item and where it sits.
    public struct Entry: Sendable, Hashable {
        /// The item's section.
        public var section: Identifier
        /// The item.
        public var item: ItemSnapshot

        /// Creates an entry.
        public init(section: Identifier, item: ItemSnapshot) {
            self.section = section
            self.item = item
        }
    }

    /// The matching items in list order (section order, then item order).
    public var entries: [Entry]
    /// Pass as ``ItemQuery/after`` for the next page; `nil` when this page is the last.
    public var nextCursor: String?
    /// The list's version when the page was read.
    public var version: Int64
    /// How the store found the page's items.
    public var plan: QueryPlan
    /// How many rows the store examined to make the page (candidate items
    /// whose model it checked, and sections it walked).
    public var examined = 0

    /// Creates a page.
    public init(entries: [Entry], nextCursor: String?, version: Int64, plan: QueryPlan = .listOrder) {
        self.entries = entries
        self.nextCursor = nextCursor
        self.version = version
        self.plan = plan
    }
}

/// How an items query was answered, for the `listd-query-plan` header.
public enum QueryPlan: Sendable, Hashable {
    /// No filter: items read in list order, a page's worth.
    case listOrder
    /// The declared index on this path chose the candidates of a `where`.
    case index([String])
    /// The list's text index chose the candidates of a `q` (SQLite's FTS5 trigram index).
    case text
    /// No declared index served the filter: items were examined in list
    /// order, at most a bounded number per page.
    case scan

    /// The header's value: `list-order`, `index; path=done`, `text-index`, or
    /// `scan; no index matches` (as CouchDB's Mango warns).
    public var headerValue: String {
        switch self {
        case .listOrder: return "list-order"
        case .index(let path): return "index; path=\(Self.escaped(path.joined(separator: ".")))"
        case .text: return "text-index"
        case .scan: return "scan; no index matches"
        }
    }

    /// `text` with every byte outside visible ASCII, and `%`, as `%XX`.
    static func escaped(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if byte > 0x20, byte < 0x7F, byte != UInt8(ascii: "%") {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                out += byte < 0x10 ? "%0\(hex)" : "%\(hex)"
            }
        }
        return out
    }
}

/// What a list indexes for item queries.
public struct ListIndexes: Sendable, Hashable {
    /// Declared paths for `where=`, in order.
    public var paths: [[String]]
    /// Whether `q=` has a text index.
    public var text: Bool

    /// Creates a description.
    public init(paths: [[String]], text: Bool) {
        self.paths = paths
        self.text = text
    }
}
