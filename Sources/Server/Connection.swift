import HTTP
import POSIXIO

/// One accepted socket and what the loop keeps for it.
///
/// Why so little: a parked long-poll connection holds only this object, its
/// responder and the handler's copy of the request. The parser's buffer and
/// the output queue are empty arrays (no storage) while the connection is
/// idle or parked; bytes are read into the loop's shared read buffer.
final class Connection {
    let fd: Int32
    let slot: Int
    /// The epoll token: generation in the high 32 bits, slot in the low ones,
    /// so a stale event or answer for a closed connection finds nothing.
    let token: UInt64
    let remoteAddress: String

    var machine = ConnectionStateMachine()
    var parser: RequestParser
    var output = OutputBuffer()
    /// What the selector watches for this socket now.
    var interest: SelectorInterest
    /// What the handler kept when it admitted the head of the request being read.
    var admission: (any Sendable)?
    /// The outstanding request's responder (processing or streaming).
    var responder: Responder?
    /// The handler returned without answering: counted as parked.
    var isParked = false
    /// The client shut its sending side; stop watching for input.
    var inputClosed = false
    /// When queued output last made progress (monotonic ns), for the send timeout.
    var lastWriteProgress: UInt64 = 0
    /// The current stream frames its chunks (HTTP/1.1) or sends them raw (1.0).
    var streamChunked = false
    /// The current stream sends a body at all (not for HEAD).
    var streamSendsBody = false
    /// Called once the output buffer is empty (see `ResponseStream.write(_:whenFlushed:)`).
    var flushWaiters: [@Sendable () -> Void] = []

    init(fd: Int32, slot: Int, token: UInt64, remoteAddress: String, limits: HTTPLimits, interest: SelectorInterest) {
        self.fd = fd
        self.slot = slot
        self.token = token
        self.remoteAddress = remoteAddress
        self.parser = RequestParser(limits: limits)
        self.interest = interest
    }
}

@available(*, unavailable)
extension Connection: Sendable {}
