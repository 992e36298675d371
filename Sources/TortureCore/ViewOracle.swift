import Foundation
import JSON
import ListWire
import SectionDiff

/// A view of a list as API.md's "Views" section defines it, evaluated from
/// scratch: the oracle view followers are checked against.
///
/// Written from the contract, apart from `ListView`'s evaluator (which listd
/// serves views with), so a misreading there is not copied here. It reads only
/// the query texts the harness itself writes: `where=path:value` (any number),
/// `q=text`, `order=path` or `order=-path`, `group=path`, `limit=N`, with no
/// percent-encoding.
///
/// ```swift
/// let view = ViewOracle(query: "where=g:1&order=-r&limit=5")
/// let expected = view?.evaluate(finalSnapshot)
/// ```
public struct ViewOracle: Sendable, Equatable, CustomStringConvertible {
    /// One `where=path:value`.
    public struct Condition: Sendable, Equatable {
        public var path: [String]
        public var value: JSONValue
    }

    public var conditions: [Condition] = []
    /// `q`: a case-insensitive substring of some string value of the model.
    public var text: String?
    public var order: [String]?
    public var descending = false
    public var group: [String]?
    public var limit: Int?
    /// The query as given, sent on every request of the view.
    public let query: String

    /// The view named by `query`, or nil when it names something this oracle does not read.
    public init?(query: String) {
        self.query = query
        for pair in query.split(separator: "&") {
            guard let equals = pair.firstIndex(of: "=") else { return nil }
            let name = pair[..<equals]
            let value = String(pair[pair.index(after: equals)...])
            switch name {
            case "where":
                guard let colon = value.firstIndex(of: ":") else { return nil }
                let literal = String(value[value.index(after: colon)...])
                // A JSON scalar literal is read as JSON, anything else as a string (as item queries do).
                let parsed = try? JSONValue(parsing: literal, limits: JSONLimits(maxDepth: 1, maxBytes: 4096))
                let scalar = parsed.flatMap { $0.arrayValue == nil && $0.objectValue == nil ? $0 : nil }
                conditions.append(
                    Condition(path: Self.path(value[..<colon]), value: scalar ?? .string(literal)))
            case "q": text = value
            case "order":
                descending = value.hasPrefix("-")
                order = Self.path(descending ? value.dropFirst() : Substring(value))
            case "group": group = Self.path(Substring(value))
            case "limit":
                guard let count = Int(value), count > 0 else { return nil }
                limit = count
            default: return nil
            }
        }
    }

    public var description: String { query }

    private static func path(_ text: Substring) -> [String] { text.split(separator: ".").map(String.init) }

    /// Whether an item with `model` is in the view before the window.
    public func matches(_ model: JSONValue) -> Bool {
        for condition in conditions {
            guard let found = Self.value(model, at: condition.path),
                found.canonicalText == condition.value.canonicalText
            else { return false }
        }
        if let text { return Self.contains(model, text.lowercased()) }
        return true
    }

    /// The view of `state`: the same list, epoch and version, the view's sections and items.
    ///
    /// - Complexity: O(n log n) comparisons for n items.
    public func evaluate(_ state: ListState) -> ListState {
        struct Entry {
            var item: JSONEntry
            var section: Int
            var index: Int
            var group: JSONValue
            var order: JSONValue
        }
        var entries: [Entry] = []
        for (s, section) in state.sections.enumerated() {
            for (i, item) in section.items.enumerated() {
                let model = (try? JSONValue(parsing: item.model.text, limits: JSONLimits.unboundedOracle)) ?? .null
                guard matches(model) else { continue }
                entries.append(
                    Entry(
                        item: item, section: s, index: i,
                        group: group.map { Self.value(model, at: $0) ?? .null } ?? .null,
                        order: order.map { Self.value(model, at: $0) ?? .null } ?? .null))
            }
        }
        let grouped = group != nil
        let ordered = order != nil
        let descending = self.descending
        entries.sort { a, b in
            if grouped {
                let byGroup = Self.compare(a.group, b.group)
                if byGroup != 0 { return byGroup < 0 }
            } else if a.section != b.section {
                return a.section < b.section
            }
            if ordered {
                let byOrder = Self.compare(a.order, b.order)
                if byOrder != 0 { return descending ? byOrder > 0 : byOrder < 0 }
                return Array(a.item.id.utf8).lexicographicallyPrecedes(Array(b.item.id.utf8))
            }
            return (a.section, a.index) < (b.section, b.index)
        }
        if let limit, entries.count > limit { entries.removeLast(entries.count - limit) }
        var view = state
        if grouped {
            view.sections = []
            for entry in entries {
                let id = entry.group.canonicalText
                if view.sections.last?.model.id != id {
                    let model = "{\"value\":\(entry.group.canonicalText)}"
                    view.sections.append(ArraySection(model: JSONEntry(id: id, model: JSONText(model)), items: []))
                }
                view.sections[view.sections.count - 1].items.append(entry.item)
            }
        } else {
            for index in view.sections.indices { view.sections[index].items = [] }
            for entry in entries { view.sections[entry.section].items.append(entry.item) }
        }
        return view
    }

    /// The value at `path` in `value` (object keys; decimal indices into arrays), or nil.
    static func value(_ value: JSONValue, at path: [String]) -> JSONValue? {
        var current = value
        for component in path {
            if let object = current.objectValue {
                guard let next = object[component] else { return nil }
                current = next
            } else if let array = current.arrayValue, let index = Int(component), array.indices.contains(index) {
                current = array[index]
            } else {
                return nil
            }
        }
        return current
    }

    static func contains(_ value: JSONValue, _ lowered: String) -> Bool {
        if let string = value.stringValue { return string.lowercased().contains(lowered) }
        if let array = value.arrayValue { return array.contains { contains($0, lowered) } }
        if let object = value.objectValue { return object.contains { contains($0.value, lowered) } }
        return false
    }

    /// The contract's value order, three-way: null (or missing) < false < true <
    /// numbers (by value) < strings (by Unicode code points) < arrays < objects.
    /// Arrays compare element by element; objects by their canonical text (the
    /// harness never orders by one).
    public static func compare(_ a: JSONValue, _ b: JSONValue) -> Int {
        func rank(_ value: JSONValue) -> Int {
            switch value {
            case .null: 0
            case .bool(let flag): flag ? 2 : 1
            case .number: 3
            case .string: 4
            case .array: 5
            case .object: 6
            }
        }
        let (ra, rb) = (rank(a), rank(b))
        if ra != rb { return ra < rb ? -1 : 1 }
        switch (a, b) {
        case (.number, .number):
            let (x, y) = (a.doubleValue ?? 0, b.doubleValue ?? 0)
            return x == y ? 0 : (x < y ? -1 : 1)
        case (.string(let x), .string(let y)):
            let (u, v) = (Array(x.unicodeScalars.map(\.value)), Array(y.unicodeScalars.map(\.value)))
            return u == v ? 0 : (u.lexicographicallyPrecedes(v) ? -1 : 1)
        case (.array(let x), .array(let y)):
            for (p, q) in zip(x, y) {
                let order = compare(p, q)
                if order != 0 { return order }
            }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        default:
            let (x, y) = (Array(a.canonicalText.utf8), Array(b.canonicalText.utf8))
            return x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
        }
    }
}

extension JSONLimits {
    static let unboundedOracle = JSONLimits(maxDepth: 1_024, maxBytes: 1 << 30)
}
