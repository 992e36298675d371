/// Limits applied while parsing untrusted JSON.
public struct JSONLimits: Sendable, Hashable {
    /// The deepest nesting of arrays and objects accepted.
    ///
    /// The parser recurses once per level, so this also bounds its stack use; keep it
    /// to a few hundred at most (a request body needs the model's 64 plus a few).
    public var maxDepth: Int
    /// The most bytes of JSON text accepted.
    public var maxBytes: Int

    /// Creates limits; the defaults are listd's: depth 64, 64 KiB.
    public init(maxDepth: Int = 64, maxBytes: Int = 64 * 1024) {
        self.maxDepth = maxDepth
        self.maxBytes = maxBytes
    }
}
