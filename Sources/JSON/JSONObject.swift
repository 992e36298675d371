/// The members of a JSON object, kept sorted by the UTF-8 bytes of their keys.
///
/// Why not `[String: JSONValue]`: Swift compares strings by Unicode canonical
/// equivalence, so a dictionary would treat `"é"` (U+00E9) and `"e\u0301"` as one
/// key, while JSON and canonical text treat them as two. Sorted storage also makes
/// serialization canonical with no sorting step, and lookups are binary searches.
public struct JSONObject: Sendable, Hashable, RandomAccessCollection, ExpressibleByDictionaryLiteral {
    /// One member: a key and its value.
    public typealias Element = (key: String, value: JSONValue)

    /// Members sorted by key bytes; keys unique by bytes.
    public private(set) var members: [Element]

    /// Wraps members already sorted by key bytes with no repeated key.
    init(sortedUniqueMembers members: [Element]) {
        self.members = members
    }

    /// An empty object.
    public init() {
        members = []
    }

    /// An object with the given members; when a key repeats, the last value wins.
    ///
    /// - Complexity: O(n log n).
    public init(_ members: some Sequence<(String, JSONValue)>) {
        var list: [(offset: Int, element: Element)] = []
        for (index, member) in members.enumerated() {
            list.append((index, (key: member.0, value: member.1)))
        }
        list.sort { lhs, rhs in
            let order = JSONEscaping.compare(lhs.element.key, rhs.element.key)
            return order != 0 ? order < 0 : lhs.offset < rhs.offset
        }
        var unique: [Element] = []
        unique.reserveCapacity(list.count)
        for (_, element) in list {
            if let last = unique.last, JSONEscaping.bytesEqual(last.key, element.key) {
                unique[unique.count - 1] = element
            } else {
                unique.append(element)
            }
        }
        self.members = unique
    }

    /// An object with the members of `dictionary`.
    public init(_ dictionary: [String: JSONValue]) {
        self.init(dictionary.lazy.map { ($0.key, $0.value) })
    }

    /// An object from a literal; when a key repeats, the last value wins.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements)
    }

    /// The first position.
    public var startIndex: Int { members.startIndex }
    /// One past the last position.
    public var endIndex: Int { members.endIndex }
    /// The member at `position`, in key order.
    public subscript(position: Int) -> Element { members[position] }

    /// The keys in canonical order.
    public var keys: [String] { members.map(\.key) }

    /// The position of `key`, or where it would be inserted.
    ///
    /// - Complexity: O(log n) key comparisons.
    func searchIndex(_ key: String) -> (index: Int, found: Bool) {
        var low = 0
        var high = members.count
        while low < high {
            let middle = (low + high) / 2
            let order = JSONEscaping.compare(members[middle].key, key)
            if order == 0 { return (middle, true) }
            if order < 0 { low = middle + 1 } else { high = middle }
        }
        return (low, false)
    }

    /// The value for `key` (matched by UTF-8 bytes), or `nil`; setting `nil` removes it.
    ///
    /// - Complexity: O(log n) to read; O(n) to insert or remove.
    public subscript(key: String) -> JSONValue? {
        get {
            let (index, found) = searchIndex(key)
            // Not `found ? value : nil`: JSONValue is ExpressibleByNilLiteral, so that
            // `nil` would become `.null` instead of a missing value.
            guard found else { return Optional.none }
            return members[index].value
        }
        set {
            let (index, found) = searchIndex(key)
            switch (found, newValue) {
            case (true, let value?): members[index].value = value
            case (true, nil): members.remove(at: index)
            case (false, let value?): members.insert((key: key, value: value), at: index)
            case (false, nil): break
            }
        }
    }

    /// Equal when the same keys (by bytes) map to equal values.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.count == rhs.members.count
            && lhs.members.elementsEqual(rhs.members) { a, b in
                JSONEscaping.bytesEqual(a.key, b.key) && a.value == b.value
            }
    }

    /// Hashes keys by their bytes and values, consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(members.count)
        for member in members {
            JSONValue.hashBytes(of: member.key, into: &hasher)
            hasher.combine(member.value)
        }
    }
}
