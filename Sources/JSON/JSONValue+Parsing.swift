extension JSONValue {
    /// Parses a JSON text strictly (RFC 8259), within `limits`.
    ///
    /// Rejects: invalid UTF-8 (overlongs, encoded surrogates, above U+10FFFF), `\u`
    /// escapes of unpaired surrogates, raw control characters in strings, leading
    /// zeros, trailing commas, anything after the value, `NaN` and `Infinity`,
    /// numbers that overflow a Double, duplicate keys in one object (reported at
    /// the second occurrence, once the object has been read to its end), nesting
    /// deeper than `limits.maxDepth` and texts longer than `limits.maxBytes`.
    ///
    /// - Throws: ``JSONError`` naming the problem and its position.
    /// - Complexity: O(n log m) for n bytes and objects of at most m members.
    public init(parsing bytes: some Collection<UInt8>, limits: JSONLimits = JSONLimits()) throws(JSONError) {
        self = try withContiguousBytes(bytes) { (buffer) throws(JSONError) -> JSONValue in
            try Self.parse(buffer, limits: limits)
        }
    }

    /// Parses a JSON text strictly; the array fast path of
    /// ``init(parsing:limits:)-(Collection<UInt8>,_)``.
    public init(parsing bytes: [UInt8], limits: JSONLimits = JSONLimits()) throws(JSONError) {
        let result = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(JSONError) -> JSONValue in try Self.parse(buffer, limits: limits) }
        }
        self = try result.get()
    }

    /// Parses a JSON text strictly; see ``init(parsing:limits:)-(Collection<UInt8>,_)``.
    public init(parsing text: String, limits: JSONLimits = JSONLimits()) throws(JSONError) {
        var text = text
        let result = text.withUTF8 { buffer in
            Result { () throws(JSONError) -> JSONValue in try Self.parse(buffer, limits: limits) }
        }
        self = try result.get()
    }

    /// Parses JSON text in raw memory strictly; see ``init(parsing:limits:)-(Collection<UInt8>,_)``.
    public init(parsing bytes: UnsafeRawBufferPointer, limits: JSONLimits = JSONLimits()) throws(JSONError) {
        let result = bytes.withMemoryRebound(to: UInt8.self) { buffer in
            Result { () throws(JSONError) -> JSONValue in try Self.parse(buffer, limits: limits) }
        }
        self = try result.get()
    }

    static func parse(_ buffer: UnsafeBufferPointer<UInt8>, limits: JSONLimits) throws(JSONError) -> JSONValue {
        var parser = TreeParser(Scanner(buffer, limits: limits))
        return try parser.run()
    }
}
