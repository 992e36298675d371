/// Size limits the request parser enforces, each answered with its own status.
///
/// They bound the memory one connection can make the server hold before a handler runs:
/// a request over a limit is refused while it is being read, never buffered whole.
public struct HTTPLimits: Sendable, Hashable {
    /// The longest request-target in bytes; longer is answered with 414.
    public var maxRequestTargetBytes: Int
    /// The largest head (request line, header fields and their line endings) in bytes; larger
    /// is answered with 431. Trailer sections of chunked bodies have the same limit.
    public var maxHeaderBytes: Int
    /// The most header fields in a head (or trailer fields in a trailer section); more is 431.
    public var maxHeaderFields: Int
    /// The largest body in bytes, after removing chunked framing; larger is answered with 413.
    public var maxBodyBytes: Int
    /// The longest chunk-size line (size and chunk extensions) in a chunked body; longer is 400.
    public var maxChunkLineBytes: Int

    /// Creates limits; the defaults are 8 KiB target, 16 KiB head, 100 fields, 8 MiB body and a
    /// 1 KiB chunk-size line.
    public init(
        maxRequestTargetBytes: Int = 8 * 1024,
        maxHeaderBytes: Int = 16 * 1024,
        maxHeaderFields: Int = 100,
        maxBodyBytes: Int = 8 * 1024 * 1024,
        maxChunkLineBytes: Int = 1024
    ) {
        self.maxRequestTargetBytes = maxRequestTargetBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderFields = maxHeaderFields
        self.maxBodyBytes = maxBodyBytes
        self.maxChunkLineBytes = maxChunkLineBytes
    }
}
