/// An incremental HTTP/1.1 request parser: a value-type state machine fed arbitrary byte slices.
public struct RequestParser: Sendable {
    let limits: HTTPLimits
    var buffer: [UInt8] = []

    /// Creates a parser enforcing `limits`.
    public init(limits: HTTPLimits = HTTPLimits()) {
        self.limits = limits
    }

    /// Copies received bytes into the parser's buffer.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
    }

    /// Copies received bytes into the parser's buffer.
    public mutating func append(_ bytes: [UInt8]) {
        buffer.append(contentsOf: bytes)
    }

    /// The next event, or nil when more input is needed. After a failure the parser is dead.
    public mutating func next() -> RequestParserEvent? {
        nil
    }

    /// Whether unparsed bytes (for example pipelined requests) are waiting.
    public var hasBufferedBytes: Bool { !buffer.isEmpty }

    /// Whether the parser is between requests with nothing buffered.
    public var isIdle: Bool { buffer.isEmpty }

    /// Gives back the buffer's capacity while a connection idles or parks.
    public mutating func releaseMemoryIfIdle() {
        if isIdle { buffer = [] }
    }
}
