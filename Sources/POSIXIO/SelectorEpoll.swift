import CSystem
import Glibc

/// The epoll backend of `Selector` (level-triggered).
extension Selector {
    public typealias BackendEvent = epoll_event

    /// Creates a selector backed by a new epoll instance.
    public convenience init(capacity: Int = 512) throws(SystemError) {
        self.init(backend: try System.epollCreate(), capacity: capacity)
    }

    private static func mask(_ interest: SelectorInterest) -> UInt32 {
        var events: UInt32 = 0
        if interest.contains(.readable) { events |= EPOLLIN.rawValue }
        if interest.contains(.writable) { events |= EPOLLOUT.rawValue }
        if interest.contains(.readHangup) { events |= EPOLLRDHUP.rawValue }
        return events
    }

    public func register(_ fd: Int32, interest: SelectorInterest, token: UInt64) throws(SystemError) {
        try System.epollControl(backend, EPOLL_CTL_ADD, fd, events: Self.mask(interest), data: token)
    }

    public func reregister(_ fd: Int32, interest: SelectorInterest, token: UInt64) throws(SystemError) {
        try System.epollControl(backend, EPOLL_CTL_MOD, fd, events: Self.mask(interest), data: token)
    }

    public func deregister(_ fd: Int32) throws(SystemError) {
        try System.epollControl(backend, EPOLL_CTL_DEL, fd, events: 0, data: 0)
    }

    /// Waits up to `timeoutMilliseconds` (-1: forever), calls `woke` once the
    /// wait is over, then `body` for each event.
    public func whenReady(
        timeoutMilliseconds: Int32, woke: () -> Void = {}, _ body: (SelectorEvent) -> Void
    ) throws(SystemError) {
        let count = try System.epollWait(backend, into: eventBuffer, timeoutMilliseconds: timeoutMilliseconds)
        woke()
        let hangupMask = EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue
        for index in 0..<count {
            let raw = eventBuffer[index]
            body(
                SelectorEvent(
                    token: raw.data.u64,
                    readable: raw.events & EPOLLIN.rawValue != 0,
                    writable: raw.events & EPOLLOUT.rawValue != 0,
                    hangup: raw.events & hangupMask != 0))
        }
    }
}
