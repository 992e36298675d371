/// One server-sent event (WHATWG HTML, "Server-sent events"): its type, data and id.
public struct ServerSentEvent: Sendable, Equatable {
    /// The `event:` field, `message` when the event has none.
    public var event: String
    /// The `data:` lines, joined by line feeds.
    public var data: String
    /// The `id:` field, when the event has one.
    public var id: String?

    /// Creates an event.
    public init(event: String = "message", data: String, id: String? = nil) {
        self.event = event
        self.data = data
        self.id = id
    }
}

/// Splits a `text/event-stream` body into events as its bytes arrive, in any
/// pieces: lines end with LF, CRLF or CR; a line starting with `:` is a comment
/// (listd's heartbeat); an empty line ends an event; an event with no data is
/// dropped, as the standard says. `retry:` is read and kept.
public struct EventStreamParser: Sendable {
    private var line: [UInt8] = []
    private var sawCarriageReturn = false
    private var event = ""
    private var data: [String] = []
    private var hasData = false
    private var id: String?
    /// The reconnection time the server asked for (`retry:`, milliseconds), if it did.
    public private(set) var retryMilliseconds: Int?
    /// Bytes taken so far (a reader can tell a heartbeat from silence).
    public private(set) var bytesRead = 0

    /// A parser at the start of a stream.
    public init() {}

    /// Takes the next bytes of the stream; returns the events they complete.
    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            bytesRead += 1
            if sawCarriageReturn {
                sawCarriageReturn = false
                if byte == UInt8(ascii: "\n") { continue }
            }
            switch byte {
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                sawCarriageReturn = byte == UInt8(ascii: "\r")
                if let event = endLine() { events.append(event) }
            default:
                line.append(byte)
            }
        }
        return events
    }

    /// The line in `line` ended: a field, a comment, or the end of an event.
    private mutating func endLine() -> ServerSentEvent? {
        defer { line.removeAll(keepingCapacity: true) }
        guard !line.isEmpty else { return dispatch() }
        if line.first == UInt8(ascii: ":") { return nil }
        let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? line.endIndex
        let name = String(decoding: line[..<colon], as: UTF8.self)
        var valueStart = colon < line.endIndex ? colon + 1 : colon
        if valueStart < line.endIndex && line[valueStart] == UInt8(ascii: " ") { valueStart += 1 }
        let value = String(decoding: line[valueStart...], as: UTF8.self)
        switch name {
        case "event": event = value
        case "data":
            data.append(value)
            hasData = true
        case "id" where !value.contains("\0"): id = value
        case "retry": retryMilliseconds = Int(value).flatMap { $0 >= 0 ? $0 : nil } ?? retryMilliseconds
        default: break
        }
        return nil
    }

    /// An empty line: the event gathered so far, if it has data.
    private mutating func dispatch() -> ServerSentEvent? {
        defer {
            event = ""
            data.removeAll()
            hasData = false
        }
        guard hasData else { return nil }
        return ServerSentEvent(event: event.isEmpty ? "message" : event, data: data.joined(separator: "\n"), id: id)
    }
}
