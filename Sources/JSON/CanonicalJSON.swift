/// Canonical JSON: one text per JSON value, so two models are equal exactly when
/// their canonical texts are byte-for-byte equal.
///
/// listd stores every section and item `model` in this form. The rules:
///
/// - No insignificant white space.
/// - Object keys sorted by their UTF-8 bytes (unsigned, shorter prefix first);
///   duplicate keys are rejected, so the order is total.
/// - Strings escaped minimally and one way only: `\"` `\\` `\b` `\f` `\n` `\r` `\t`,
///   other control characters (U+0000 to U+001F) as `\u00xx` with lower-case hex,
///   everything else (non-ASCII, `/`, U+007F) as literal UTF-8.
/// - Numbers: an integer literal (no fraction, no exponent) keeps its exact digits,
///   so big integers never lose precision; `-0` becomes `0`. Any other number is
///   read as the nearest Double and written as ECMAScript `Number::toString` does
///   (as RFC 8785 does): the shortest digits that round-trip, as an integer when the
///   decimal exponent allows (`1.0` → `1`, `1e2` → `100`, `1e20` → `100000000000000000000`),
///   otherwise `1.5`, `0.000001`, `1e-7`, `1e+21`, `1.5e+300`. Negative zero is `0`.
///   A number whose magnitude overflows a Double (`1e400`) is rejected; one that
///   underflows (`1e-400`) is `0`.
///
/// Canonicalizing canonical text returns it unchanged.
public enum CanonicalJSON {
    /// Parses `bytes` strictly and returns their canonical text.
    ///
    /// Streams from input to output without building a ``JSONValue`` tree; only the
    /// members of objects whose keys arrive out of order are moved.
    ///
    /// - Throws: ``JSONError`` for anything ``JSONValue/init(parsing:limits:)-(Collection<UInt8>,_)`` rejects,
    ///   with the same kind and position.
    /// - Complexity: O(n) for input whose objects are already sorted; O(n log m) in
    ///   general, where m is the widest object, plus one copy of each unsorted
    ///   object's content per enclosing level.
    public static func canonicalize(
        _ bytes: some Collection<UInt8>, limits: JSONLimits = JSONLimits()
    ) throws(JSONError) -> String {
        String(decoding: try canonicalBytes(bytes, limits: limits), as: UTF8.self)
    }

    /// Parses `bytes` strictly and returns their canonical text; the array fast path
    /// of ``canonicalize(_:limits:)-(Collection<UInt8>,_)``.
    public static func canonicalize(_ bytes: [UInt8], limits: JSONLimits = JSONLimits()) throws(JSONError) -> String {
        String(decoding: try canonicalBytes(bytes, limits: limits), as: UTF8.self)
    }

    /// Parses `bytes` strictly and returns their canonical text as UTF-8 bytes; the
    /// array fast path of ``canonicalBytes(_:limits:)-(Collection<UInt8>,_)``.
    public static func canonicalBytes(_ bytes: [UInt8], limits: JSONLimits = JSONLimits()) throws(JSONError) -> [UInt8]
    {
        let result = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(JSONError) -> [UInt8] in try canonicalBytes(buffer, limits: limits) }
        }
        return try result.get()
    }

    /// Parses a JSON text strictly and returns its canonical text.
    public static func canonicalize(_ text: String, limits: JSONLimits = JSONLimits()) throws(JSONError) -> String {
        var text = text
        let result = text.withUTF8 { buffer in
            Result { () throws(JSONError) -> [UInt8] in try canonicalBytes(buffer, limits: limits) }
        }
        return String(decoding: try result.get(), as: UTF8.self)
    }

    /// Parses `bytes` strictly and returns their canonical text as UTF-8 bytes,
    /// ready to store or splice into a response with ``JSONWriter/raw(_:)-([UInt8])``.
    public static func canonicalBytes(
        _ bytes: some Collection<UInt8>, limits: JSONLimits = JSONLimits()
    ) throws(JSONError) -> [UInt8] {
        try withContiguousBytes(bytes) { (buffer) throws(JSONError) -> [UInt8] in
            try canonicalBytes(buffer, limits: limits)
        }
    }

    /// Parses raw memory strictly and returns its canonical text as UTF-8 bytes.
    public static func canonicalBytes(
        _ bytes: UnsafeRawBufferPointer, limits: JSONLimits = JSONLimits()
    ) throws(JSONError) -> [UInt8] {
        let result = bytes.withMemoryRebound(to: UInt8.self) { buffer in
            Result { () throws(JSONError) -> [UInt8] in try canonicalBytes(buffer, limits: limits) }
        }
        return try result.get()
    }

    static func canonicalBytes(_ buffer: UnsafeBufferPointer<UInt8>, limits: JSONLimits) throws(JSONError) -> [UInt8] {
        var canonicalizer = Canonicalizer(Scanner(buffer, limits: limits))
        return try canonicalizer.run()
    }
}
