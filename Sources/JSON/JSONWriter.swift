/// Builds JSON text by appending to a byte array, inserting commas for you.
///
/// The API layer builds every response with it, splicing stored canonical model
/// text in with ``raw(_:)-(Collection<UInt8>)`` instead of decoding and re-encoding it:
///
/// ```swift
/// var writer = JSONWriter()
/// writer.beginObject()
/// writer.key("id"); writer.string("apple")
/// writer.key("model"); writer.raw(storedCanonicalBytes)
/// writer.endObject()
/// send(writer.bytes)
/// ```
///
/// Keys are written in the order given (responses need not be canonical); strings
/// are escaped canonically. The writer trusts its caller to nest correctly (a key
/// before each object value, ends matching begins): it is a fast builder, not a
/// validator.
public struct JSONWriter: Sendable {
    /// The text written so far.
    public private(set) var bytes: [UInt8]
    /// Whether the next value or key needs a comma before it.
    private var needsComma = false

    /// Creates an empty writer with room for `capacity` bytes.
    public init(capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// The text written so far, as a String.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    @inline(__always)
    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    /// Opens an object.
    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    /// Closes the innermost object.
    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// Opens an array.
    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    /// Closes the innermost array.
    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Writes an object member's key; the next call writes its value.
    public mutating func key(_ key: String) {
        separate()
        JSONEscaping.appendQuoted(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// Writes a string value.
    public mutating func string(_ value: String) {
        separate()
        JSONEscaping.appendQuoted(value, to: &bytes)
        needsComma = true
    }

    /// Writes an integer value.
    public mutating func int(_ value: Int) {
        int64(Int64(value))
    }

    /// Writes an integer value.
    public mutating func int64(_ value: Int64) {
        separate()
        NumberText.appendInteger(value, to: &bytes)
        needsComma = true
    }

    /// Writes a Double in canonical form; infinities and NaN, which JSON cannot
    /// hold, are written as `null` (as `JSON.stringify` does).
    public mutating func double(_ value: Double) {
        separate()
        if value.isFinite {
            var scratch: [UInt8] = []
            NumberText.appendCanonical(value, scratch: &scratch, to: &bytes)
        } else {
            bytes.appendLiteral("null")
        }
        needsComma = true
    }

    /// Writes a number value.
    public mutating func number(_ value: JSONNumber) {
        raw(value.canonicalText)
    }

    /// Writes `true` or `false`.
    public mutating func bool(_ value: Bool) {
        separate()
        bytes.appendLiteral(value ? "true" : "false")
        needsComma = true
    }

    /// Writes `null`.
    public mutating func null() {
        separate()
        bytes.appendLiteral("null")
        needsComma = true
    }

    /// Writes a value as its canonical text.
    public mutating func value(_ value: JSONValue) {
        separate()
        value.write(to: &bytes)
        needsComma = true
    }

    /// Splices in one complete JSON value given as text, such as a stored
    /// canonical model, verbatim and unchecked.
    public mutating func raw(_ json: some Collection<UInt8>) {
        separate()
        bytes.append(contentsOf: json)
        needsComma = true
    }

    /// Splices in one complete JSON value given as bytes, verbatim and unchecked; the
    /// array fast path of ``raw(_:)-(Collection<UInt8>)``.
    public mutating func raw(_ json: [UInt8]) {
        separate()
        bytes.append(contentsOf: json)
        needsComma = true
    }

    /// Splices in one complete JSON value given as a String, verbatim and unchecked.
    public mutating func raw(_ json: String) {
        separate()
        var json = json
        json.withUTF8 { bytes.append(contentsOf: $0) }
        needsComma = true
    }

    /// Writes an object whose members `body` writes.
    public mutating func object<E: Error>(_ body: (inout JSONWriter) throws(E) -> Void) throws(E) {
        beginObject()
        try body(&self)
        endObject()
    }

    /// Writes an array whose elements `body` writes.
    public mutating func array<E: Error>(_ body: (inout JSONWriter) throws(E) -> Void) throws(E) {
        beginArray()
        try body(&self)
        endArray()
    }
}
