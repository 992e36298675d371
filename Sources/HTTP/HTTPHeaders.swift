/// An ordered list of header fields: `(name, value)` pairs kept in the order received or added.
///
/// Field names are case-insensitive (RFC 9110, section 5.1), so every lookup compares names
/// ASCII-case-insensitively, byte by byte, without lower-casing or allocating. Order and
/// repeated fields are preserved because some fields (`Set-Cookie`) cannot be combined.
///
/// - Complexity: lookups are O(n) in the number of fields, which is small (at most
///   ``HTTPLimits/maxHeaderFields`` for parsed requests); a linear scan beats hashing here.
public struct HTTPHeaders: Sendable, Sequence, Equatable, ExpressibleByDictionaryLiteral,
    CustomStringConvertible
{
    /// One header field.
    public typealias Element = (name: String, value: String)

    /// One stored field. A struct rather than the `Element` tuple: arrays of tuples are
    /// destroyed through generic runtime calls, arrays of structs by compiled code.
    @usableFromInline
    struct Field: Sendable {
        @usableFromInline var name: String
        @usableFromInline var value: String

        @inlinable init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    @usableFromInline var fields: [Field]

    /// Creates an empty list.
    public init() { fields = [] }

    /// Creates a list from fields, keeping their order.
    public init(_ fields: [(String, String)]) {
        self.fields = fields.map { Field(name: $0.0, value: $0.1) }
    }

    /// Creates a list from a literal, keeping its order: `["Content-Type": "application/json"]`.
    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    /// The number of fields, counting repeated names separately.
    public var count: Int { fields.count }

    /// Whether there are no fields.
    public var isEmpty: Bool { fields.isEmpty }

    /// The value of the first field named `name`, or nil.
    public subscript(name: String) -> String? {
        for field in fields where HTTPHeaders.namesEqual(field.name, name) { return field.value }
        return nil
    }

    /// The values of every field named `name`, in order.
    public func values(for name: String) -> [String] {
        fields.filter { HTTPHeaders.namesEqual($0.name, name) }.map(\.value)
    }

    /// Whether a field named `name` is present.
    public func contains(_ name: String) -> Bool {
        fields.contains { HTTPHeaders.namesEqual($0.name, name) }
    }

    /// Appends a field, keeping any others of the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces the first field named `name` and removes the others, or appends one.
    public mutating func replaceOrAdd(name: String, value: String) {
        if let first = fields.firstIndex(where: { HTTPHeaders.namesEqual($0.name, name) }) {
            fields[first].value = value
            var index = fields.index(after: first)
            while index < fields.endIndex {
                if HTTPHeaders.namesEqual(fields[index].name, name) {
                    fields.remove(at: index)
                } else {
                    index += 1
                }
            }
        } else {
            fields.append(Field(name: name, value: value))
        }
    }

    /// Removes every field named `name`.
    public mutating func remove(name: String) {
        fields.removeAll { HTTPHeaders.namesEqual($0.name, name) }
    }

    /// Iterates the fields in order.
    public func makeIterator() -> Iterator { Iterator(base: fields.makeIterator()) }

    /// Iterates the fields in order, as `(name, value)` pairs.
    public struct Iterator: IteratorProtocol {
        var base: IndexingIterator<[Field]>

        /// The next field, or nil at the end.
        public mutating func next() -> Element? {
            base.next().map { (name: $0.name, value: $0.value) }
        }
    }

    /// Reserves room for `count` fields, so a parser can fill the list without regrowing it.
    public mutating func reserveCapacity(_ count: Int) { fields.reserveCapacity(count) }

    /// Two lists are equal when they hold the same fields in the same order; names compare
    /// case-insensitively, values exactly.
    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        guard lhs.fields.count == rhs.fields.count else { return false }
        for (left, right) in zip(lhs.fields, rhs.fields) {
            guard namesEqual(left.name, right.name), left.value == right.value else { return false }
        }
        return true
    }

    /// The fields as `name: value` lines, for logs and test failures.
    public var description: String {
        fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }

    /// ASCII case-insensitive comparison of two field names, without allocating.
    @inlinable
    static func namesEqual(_ lhs: String, _ rhs: String) -> Bool {
        var lhs = lhs
        var rhs = rhs
        // Native strings hand out contiguous UTF-8 without copying; the fallback covers bridged ones.
        let fast = lhs.withUTF8 { left in
            rhs.withUTF8 { right in
                ASCII.caseInsensitiveEqual(UnsafeRawBufferPointer(left), UnsafeRawBufferPointer(right))
            }
        }
        return fast
    }
}
