import CSystem
import Glibc
import HTTP
import POSIXIO
import Synchronization

/// How an exchange on a ``LoopConnection`` ended.
enum ExchangeOutcome: Sendable {
    /// A whole response arrived.
    case answered(HTTPClientCall.Response)
    /// The connection failed before any byte of a response arrived: a reused
    /// connection the server closed while it sat idle, so an idempotent request may go again.
    case stale(SystemError)
    /// The connection ended before the request was wholly sent (the server
    /// closed it while it waited for the request: an idle or head timeout
    /// while this task waited for a thread). The server cannot have acted
    /// on an incomplete request, so any request may go again on a new connection.
    case unsent(SystemError)
    /// The exchange failed (reset mid-answer, a malformed answer, timed out, cancelled).
    case failed(SystemError)
}

/// One request in flight: who waits for it, what is left to send, what has arrived.
struct Exchange: Sendable {
    let continuation: UnsafeContinuation<ExchangeOutcome, Never>
    var parser: ResponseParser
    var output: [UInt8]
    var written = 0
    /// Monotonic nanoseconds after which the loop fails the exchange with ETIMEDOUT.
    let deadline: UInt64
    /// For a streamed answer: where its body goes once the head is in (``Streaming``).
    var stream: ResponseBodyStream?
    /// For a streamed answer: the longest silence, in nanoseconds, once the head is in.
    var idle: UInt64 = 0
}

/// A streamed answer whose head was handed to its caller: the loop pushes the
/// body to `body` as it reads it. The connection is closed at the body's end.
struct Streaming: Sendable {
    var parser: ResponseParser
    let body: ResponseBodyStream
    /// Monotonic nanoseconds after which the silence fails the stream with ETIMEDOUT.
    var deadline: UInt64
    let idle: UInt64
}

/// A keep-alive connection registered with an ``HTTPClientLoop`` from its
/// connect to its close.
///
/// Its life, under `phase`'s lock:
///
///     reserved ──start──▶ busy ──answered, reusable──▶ idle ──take──▶ reserved
///        │                 │                            │
///        └──── closed ◀────┴── EOF, error, timeout, ────┘
///                              cancel, not reusable
///
/// (A reserved connection the server closed before its call sent anything is
/// `lost`, so that call learns it went stale, not that it was cancelled.)
///
/// Who resumes an exchange's continuation is whoever moves the phase out of
/// `busy`, under the lock, so it is resumed exactly once. Only the loop's thread
/// closes the descriptor (after taking it out of epoll and its table); another
/// thread that ends a connection marks it `closed` and shuts the socket down
/// under the lock, which the loop sees as a hang-up, so the descriptor is never
/// closed under a thread still using its number.
final class LoopConnection: Sendable {
    enum Phase: Sendable {
        /// In its client's idle list since this monotonic time.
        case idle(since: UInt64)
        /// Taken by one call, no request sent yet.
        case reserved
        /// Found closed by the server while reserved: the call's `start` reports it
        /// as stale (an idempotent request may go again on a new connection).
        case lost(SystemError)
        /// A request in flight.
        case busy(Exchange)
        /// A streamed answer's body being read (the head went to the caller).
        case streaming(Streaming)
        /// No request will use it again; the loop closes the descriptor.
        case closed
    }

    let fd: Int32

    /// Whether the server ended it while it was reserved, as the loop saw (for tests).
    var isLost: Bool { phase.withLock { if case .lost = $0 { true } else { false } } }
    /// The loop's key for this connection (epoll's data), never reused.
    let token: UInt64
    /// `host:port`.
    let endpoint: String
    let phase = Mutex(Phase.reserved)

    init(fd: Int32, token: UInt64, endpoint: String) {
        self.fd = fd
        self.token = token
        self.endpoint = endpoint
    }

    /// Whether the connection waits in its client's idle list, open.
    var isIdle: Bool {
        phase.withLock { phase in
            if case .idle = phase { return true }
            return false
        }
    }

    /// What the socket's readiness should be watched for: reading always (an
    /// answer, or a close while idle), writing while a request is only partly sent.
    static func interest(writing: Bool) -> UInt32 {
        EPOLLIN.rawValue | EPOLLRDHUP.rawValue | (writing ? EPOLLOUT.rawValue : 0)
    }

    /// Ends the connection from a thread other than the loop's: marks it closed
    /// and shuts the socket down, so the loop hears a hang-up and closes it.
    /// Returns the waiting exchange's continuation, if there was one, for the caller to resume.
    func close() -> UnsafeContinuation<ExchangeOutcome, Never>? {
        phase.withLock { phase -> UnsafeContinuation<ExchangeOutcome, Never>? in
            let waiting: UnsafeContinuation<ExchangeOutcome, Never>?
            switch phase {
            case .closed, .lost: return nil
            case .busy(let exchange): waiting = exchange.continuation
            case .idle, .reserved: waiting = nil
            case .streaming(let streaming):
                streaming.body.finish(SystemError(call: "read (cancelled)", errno: ECANCELED))
                waiting = nil
            }
            phase = .closed
            try? System.shutdown(fd, how: Int32(SHUT_RDWR))
            return waiting
        }
    }

    /// Why a connection with no exchange can no longer carry one, seen without
    /// consuming anything: the server's end (or reset), or bytes it sent
    /// unasked (a 408 before closing); `nil` while it is open and quiet.
    static func endedByPeer(_ fd: Int32) -> SystemError? {
        var byte: UInt8 = 0
        let result = withUnsafeMutableBytes(of: &byte) { buffer in
            Result { () throws(SystemError) in try System.peek(fd, into: buffer) }
        }
        switch result {
        case .success(.wouldBlock): return nil
        case .success(.processed(0)):
            return SystemError(call: "send (the server closed the connection before the request)", errno: ECONNRESET)
        case .success(.processed):
            return SystemError(call: "send (the server answered before the request and closes)", errno: ECONNRESET)
        case .failure(let error): return error
        }
    }

    /// Sends `request` on this reserved connection and parks `continuation` until
    /// the loop has the answer. Returns an outcome to resume with at once when
    /// the exchange cannot start (the connection was closed meanwhile, or the send failed).
    func start(
        _ request: [UInt8], method: HTTPMethod, deadline: UInt64, loop: HTTPClientLoop,
        continuation: UnsafeContinuation<ExchangeOutcome, Never>, stream: ResponseBodyStream? = nil, idle: UInt64 = 0
    ) -> ExchangeOutcome? {
        phase.withLock { phase -> ExchangeOutcome? in
            switch phase {
            case .reserved:
                break
            case .lost(let error):
                phase = .closed
                return .unsent(error)
            case .idle, .busy, .streaming, .closed:
                return .failed(SystemError(call: "send (cancelled)", errno: ECANCELED))
            }
            if let ended = Self.endedByPeer(fd) {
                // Closed by the server while it waited (an idle or head timeout), and
                // the loop has not seen it yet: the request has not gone out.
                phase = .closed
                try? System.shutdown(fd, how: Int32(SHUT_RDWR))
                return .unsent(ended)
            }
            var exchange = Exchange(
                continuation: continuation, parser: ResponseParser(method: method), output: request, deadline: deadline,
                stream: stream, idle: idle)
            do throws(SystemError) {
                // Under the lock: the answer cannot be read before the exchange is in place.
                try exchange.send(on: fd)
                if exchange.written < exchange.output.count {
                    try System.epollControl(
                        loop.epoll, EPOLL_CTL_MOD, fd, events: Self.interest(writing: true), data: token)
                    loop.notePartialSend()
                }
            } catch {
                phase = .closed
                try? System.shutdown(fd, how: Int32(SHUT_RDWR))
                // A send that failed left the request incomplete: nothing the server could act on.
                return error.errno == EPIPE || error.errno == ECONNRESET ? .unsent(error) : .failed(error)
            }
            phase = .busy(exchange)
            return nil
        }
    }
}

extension Exchange {
    /// Sends what is left of the request until the socket would block.
    mutating func send(on fd: Int32) throws(SystemError) {
        while written < output.count {
            let result = output.withUnsafeBytes { bytes in
                Result { () throws(SystemError) in
                    try System.send(fd, UnsafeRawBufferPointer(rebasing: bytes[written...]))
                }
            }
            switch try result.get() {
            case .processed(let count): written += count
            case .wouldBlock: return
            }
        }
    }
}
