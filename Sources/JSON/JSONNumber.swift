/// A JSON number, held as its canonical text.
///
/// Keeping the text rather than a Double means an integer of any size keeps its
/// exact digits (ids and counters from other systems survive a round trip), and
/// two numbers are equal exactly when their canonical texts are; see
/// ``CanonicalJSON`` for the rules (`1.0` and `1` are the same number, `1e2` is `100`).
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral
{
    /// The canonical text, such as `42`, `-1.5`, `1e+21` or `123456789012345678901234567890`.
    public let canonicalText: String

    /// Wraps text already in canonical form.
    init(canonicalText: String) {
        self.canonicalText = canonicalText
    }

    /// The number `value`.
    public init(_ value: Int64) {
        var bytes: [UInt8] = []
        NumberText.appendInteger(value, to: &bytes)
        self.canonicalText = String(decoding: bytes, as: UTF8.self)
    }

    /// The number `value`.
    public init(_ value: Int) {
        self.init(Int64(value))
    }

    /// The number `value`, or `nil` for infinities and NaN, which JSON cannot hold.
    public init?(_ value: Double) {
        guard value.isFinite else { return nil }
        var bytes: [UInt8] = []
        var scratch: [UInt8] = []
        NumberText.appendCanonical(value, scratch: &scratch, to: &bytes)
        self.canonicalText = String(decoding: bytes, as: UTF8.self)
    }

    /// Parses one JSON number literal (RFC 8259 grammar, no surrounding white
    /// space) and canonicalizes it; `nil` if it is not one or overflows a Double.
    public init?(parsing literal: String) {
        var literal = literal
        let text: String? = literal.withUTF8 { buffer in
            var scanner = Scanner(buffer, limits: JSONLimits(maxDepth: 0, maxBytes: Int.max))
            guard let first = buffer.first, first == UInt8(ascii: "-") || NumberText.isDigit(first) else {
                return nil
            }
            var bytes: [UInt8] = []
            do {
                try scanner.scanNumber(into: &bytes)
            } catch {
                return nil
            }
            guard scanner.position == buffer.count else { return nil }
            return String(decoding: bytes, as: UTF8.self)
        }
        guard let text else { return nil }
        self.canonicalText = text
    }

    /// Creates the number from an integer literal.
    public init(integerLiteral value: Int64) {
        self.init(value)
    }

    /// Creates the number from a float literal; a non-finite literal becomes `0`.
    public init(floatLiteral value: Double) {
        self = JSONNumber(value) ?? JSONNumber(0)
    }

    /// Whether the canonical text is an integer (no fraction, no exponent).
    public var isInteger: Bool {
        !canonicalText.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") }
    }

    /// The value as an Int64 when it is an integer that fits, else `nil`.
    public var int64: Int64? {
        isInteger ? Int64(canonicalText) : nil
    }

    /// The value as an Int when it is an integer that fits, else `nil`.
    public var int: Int? {
        int64.flatMap { Int(exactly: $0) }
    }

    /// The nearest Double; `nil` only if the text were out of range, which a
    /// parsed or constructed number never is.
    public var double: Double? {
        Double(canonicalText).flatMap { $0.isFinite ? $0 : nil }
    }

    /// The canonical text.
    public var description: String { canonicalText }
}
