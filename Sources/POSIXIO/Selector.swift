/// What a registration wants to hear about.
public struct SelectorInterest: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8

    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bytes (or a connection, for a listener) are ready to read.
    public static let readable = SelectorInterest(rawValue: 1 << 0)
    /// The socket's send buffer has room again.
    public static let writable = SelectorInterest(rawValue: 1 << 1)
    /// The peer shut down its sending side; wanted even while not reading,
    /// so a parked request learns that its client went away.
    public static let readHangup = SelectorInterest(rawValue: 1 << 2)
}

/// One readiness event: the registration's token and what happened.
public struct SelectorEvent: Sendable {
    /// The token given at registration.
    public var token: UInt64
    public var readable: Bool
    public var writable: Bool
    /// The peer closed its side (or the socket has an error): read to find out.
    public var hangup: Bool
}

/// A readiness selector over file descriptors, each registered with a token.
///
/// Why generic over the backend: the event loop talks only to this interface;
/// the Linux implementation is in `SelectorEpoll.swift` (level-triggered
/// epoll). The selector is confined to its loop's thread.
public final class Selector {
    /// The backend's descriptor (the epoll instance).
    public let backend: Int32
    /// Reused buffer for the events of one wait.
    var eventBuffer: UnsafeMutableBufferPointer<BackendEvent>

    init(backend: Int32, capacity: Int) {
        self.backend = backend
        self.eventBuffer = .allocate(capacity: capacity)
    }

    deinit {
        eventBuffer.deallocate()
        System.close(backend)
    }
}

@available(*, unavailable)
extension Selector: Sendable {}
