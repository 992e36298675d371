import CSystem
import Glibc
import HTTP
import POSIXIO
import Synchronization

/// HTTP/1.1 requests from async code over keep-alive connections that
/// ``HTTPClientLoop``'s one thread waits on: no thread blocks per request, and
/// an answer resumes its task straight from the loop.
///
/// A request takes the most recently used idle connection to its endpoint, or
/// opens one (on a short-lived thread of its own: name resolution and a
/// connect may block); after a complete answer that the server did not ask to
/// close, the connection waits in this client's idle list for the next
/// request. The loop notices a server closing an idle connection and drops
/// it. When a reused connection turns out closed before any byte of the answer
/// arrived, an idempotent request goes once more on a new connection; a POST
/// or PATCH does not, since the server may have acted on it (as ``HTTPClientCall``).
/// A new connection the server closes before the request went out whole (its
/// idle timeout ran while the task waited for a thread) is replaced whatever
/// the method: the server cannot have acted on a request it never had.
///
/// Cancelling the calling task ends the exchange at once: the connection is
/// shut down (so the server releases a parked long-poll) and the call throws
/// ECANCELED. Thread-safe; give each client (each app's follow) its own.
public final class KeepAliveClient: Sendable {
    /// At most this many idle connections are kept per endpoint.
    public let maxIdlePerEndpoint: Int
    /// How long a connection may sit idle and still be reused.
    public let idleTimeout: Duration
    private let idle = Mutex<[String: [LoopConnection]]>([:])
    private let opened = Atomic<Int>(0)
    /// Tests: runs between a new connection's connect and its request.
    let afterConnect: (@Sendable (LoopConnection) async -> Void)?

    /// Creates a client with no connections.
    public convenience init(maxIdlePerEndpoint: Int = 4, idleTimeout: Duration = .seconds(30)) {
        self.init(maxIdlePerEndpoint: maxIdlePerEndpoint, idleTimeout: idleTimeout, afterConnect: nil)
    }

    init(maxIdlePerEndpoint: Int, idleTimeout: Duration, afterConnect: (@Sendable (LoopConnection) async -> Void)?) {
        precondition(maxIdlePerEndpoint >= 1, "a client keeps at least one connection")
        self.maxIdlePerEndpoint = maxIdlePerEndpoint
        self.idleTimeout = idleTimeout
        self.afterConnect = afterConnect
    }

    deinit {
        closeIdle()
    }

    /// How many TCP connections this client has opened.
    public var connectionsOpened: Int { opened.load(ordering: .relaxed) }

    /// How many connections sit idle, ready for the next request.
    public var idleConnections: Int {
        idle.withLock { idle in idle.values.reduce(0) { $0 + $1.count(where: \.isIdle) } }
    }

    /// Closes every idle connection.
    public func closeIdle() {
        let all = idle.withLock { idle in
            defer { idle.removeAll() }
            return idle.values.flatMap { $0 }
        }
        // Idle connections have no exchange waiting, so there is nothing to resume.
        for connection in all { _ = connection.close() }
    }

    /// How many new connections one request may try when each is closed before the request went out.
    static let unsentAttempts = 3

    /// Sends `request` and returns the whole response, whatever its status.
    ///
    /// Throws a `SystemError` naming the step that failed (resolve, connect, send,
    /// read, or the response's framing): ECANCELED when the task was cancelled,
    /// ETIMEDOUT past the request's timeout.
    public func perform(_ request: HTTPClientCall.Request) async throws(SystemError) -> HTTPClientCall.Response {
        guard (1...65_535).contains(request.port) else {
            throw SystemError(call: "connect (port out of range)", errno: EINVAL)
        }
        let loop = try HTTPClientLoop.shared()
        let deadline = System.monotonicNanoseconds() + UInt64(max(1, request.timeout / .milliseconds(1))) * 1_000_000
        let endpoint = ConnectionPool.endpoint(host: request.host, port: request.port)
        let bytes = HTTPClientCall.head(request, keepAlive: true) + (request.body ?? [])
        let call = CallCancellation()
        let result = await withTaskCancellationHandler {
            () async -> Result<HTTPClientCall.Response, SystemError> in
            if let connection = take(endpoint) {
                switch await exchange(bytes, request.method, on: connection, deadline, loop, call) {
                case .answered(let response):
                    if call.detach() { keep(connection) }
                    return .success(response)
                case .failed(let error):
                    return .failure(error)
                case .unsent:
                    // The request never went out whole: the server cannot have acted on it.
                    break
                case .stale(let error):
                    // Only a request that may be repeated goes out again: the server
                    // may have acted on it before the connection failed.
                    guard request.mayBeRepeated else {
                        return .failure(
                            SystemError(
                                call: "\(error.call) (a reused connection failed; \(request.method) not retried)",
                                errno: error.errno))
                    }
                }
            }
            return await onNewConnection(bytes, request, endpoint, deadline, loop, call).map {
                connection, response in
                if call.detach() { keep(connection) }
                return response
            }
        } onCancel: {
            call.cancel()
        }
        return try result.get()
    }

    /// Sends `request` on a new connection and returns its answer's head as soon
    /// as it is in, with the body to read piece by piece as it arrives (a
    /// server-sent event stream, which never ends by itself).
    ///
    /// `request.timeout` bounds the wait for the head, then each silence of the
    /// body: a stream quiet for longer fails with ETIMEDOUT (a server that sends
    /// heartbeats never is). The connection is the stream's alone and is closed at
    /// its end, at ``ResponseBodyStream/cancel()``, or when the task reading it is
    /// cancelled. Throws as ``perform(_:)`` does while the head has not arrived.
    public func stream(_ request: HTTPClientCall.Request) async throws(SystemError)
        -> (head: HTTPClientCall.Response, body: ResponseBodyStream)
    {
        guard (1...65_535).contains(request.port) else {
            throw SystemError(call: "connect (port out of range)", errno: EINVAL)
        }
        let loop = try HTTPClientLoop.shared()
        let idle = UInt64(max(1, request.timeout / .milliseconds(1))) * 1_000_000
        let deadline = System.monotonicNanoseconds() + idle
        let endpoint = ConnectionPool.endpoint(host: request.host, port: request.port)
        let bytes = HTTPClientCall.head(request, keepAlive: true) + (request.body ?? [])
        let call = CallCancellation()
        let body = ResponseBodyStream()
        let result = await withTaskCancellationHandler {
            () async -> Result<HTTPClientCall.Response, SystemError> in
            await onNewConnection(bytes, request, endpoint, deadline, loop, call, stream: body, idle: idle).map {
                connection, head in
                _ = call.detach()
                body.attach { _ = connection.close() }
                return head
            }
        } onCancel: {
            call.cancel()
        }
        return (try result.get(), body)
    }

    /// Sends on a new connection and returns it with the answer (its head, for a
    /// streamed answer). A new connection the server closed before the request
    /// went out whole (its idle or head timeout ran while this task waited for a
    /// thread) is replaced, twice at most, within the deadline: nothing was acted on.
    private func onNewConnection(
        _ bytes: [UInt8], _ request: HTTPClientCall.Request, _ endpoint: String, _ deadline: UInt64,
        _ loop: HTTPClientLoop, _ call: CallCancellation, stream: ResponseBodyStream? = nil, idle: UInt64 = 0
    ) async -> Result<(LoopConnection, HTTPClientCall.Response), SystemError> {
        var unsent = 0
        while true {
            let connection: LoopConnection
            switch await connect(request.host, request.port, endpoint, deadline, loop, call) {
            case .success(let connected): connection = connected
            case .failure(let error): return .failure(error)
            }
            await afterConnect?(connection)
            switch await exchange(
                bytes, request.method, on: connection, deadline, loop, call, stream: stream, idle: idle)
            {
            case .answered(let response):
                return .success((connection, response))
            case .failed(let error), .stale(let error):
                return .failure(error)
            case .unsent(let error):
                unsent += 1
                guard unsent < Self.unsentAttempts, System.monotonicNanoseconds() < deadline else {
                    return .failure(error)
                }
            }
        }
    }

    /// Sends on a reserved `connection` and waits for the loop to hand back the outcome
    /// (for a streamed answer, `stream` gets the body once the head is in).
    private func exchange(
        _ bytes: [UInt8], _ method: HTTPMethod, on connection: LoopConnection, _ deadline: UInt64,
        _ loop: HTTPClientLoop, _ call: CallCancellation, stream: ResponseBodyStream? = nil, idle: UInt64 = 0
    ) async -> ExchangeOutcome {
        guard call.attach(.exchange(connection)) else {
            _ = connection.close()
            return .failed(SystemError(call: "send (cancelled)", errno: ECANCELED))
        }
        return await withUnsafeContinuation { continuation in
            if let failed = connection.start(
                bytes, method: method, deadline: deadline, loop: loop, continuation: continuation, stream: stream,
                idle: idle)
            {
                continuation.resume(returning: failed)
            } else {
                loop.noteDeadline(deadline)
            }
        }
    }

    /// A new connection to `endpoint`, connected on a thread of its own and handed to the loop.
    private func connect(
        _ host: String, _ port: Int, _ endpoint: String, _ deadline: UInt64, _ loop: HTTPClientLoop,
        _ call: CallCancellation
    ) async -> Result<LoopConnection, SystemError> {
        let attempt = ConnectAttempt()
        guard call.attach(.connecting(attempt)) else {
            return .failure(SystemError(call: "connect (cancelled)", errno: ECANCELED))
        }
        let result = await withUnsafeContinuation { continuation in
            guard attempt.wait(continuation) else { return }
            do throws(SystemError) {
                let thread = try System.spawnThread(name: "listd-connect") {
                    let result = Result { () throws(SystemError) -> LoopConnection in
                        let fd = try Dialer.connect(
                            host: host, port: port, deadline: deadline, isCancelled: { attempt.isCancelled })
                        return try loop.adopt(fd, endpoint: endpoint)
                    }
                    attempt.finish(result)
                }
                pthread_detach(thread)
            } catch {
                attempt.finish(.failure(error))
            }
        }
        if case .success = result { opened.add(1, ordering: .relaxed) }
        return result
    }

    /// The most recently used idle connection to `endpoint` that is still open and
    /// not idle too long, reserved for the caller.
    private func take(_ endpoint: String) -> LoopConnection? {
        let now = System.monotonicNanoseconds()
        let limit = UInt64(max(0, idleTimeout / .nanoseconds(1)))
        while true {
            guard let candidate = idle.withLock({ $0[endpoint]?.popLast() }) else { return nil }
            let reserved = candidate.phase.withLock { phase -> Bool in
                guard case .idle(let since) = phase, now - since <= limit else { return false }
                phase = .reserved
                return true
            }
            if reserved { return candidate }
            _ = candidate.close()
        }
    }

    /// Puts a connection whose answer left it idle back for reuse.
    private func keep(_ connection: LoopConnection) {
        let evicted = idle.withLock { idle -> LoopConnection? in
            idle[connection.endpoint, default: []].append(connection)
            guard let count = idle[connection.endpoint]?.count, count > maxIdlePerEndpoint else { return nil }
            return idle[connection.endpoint]?.removeFirst()
        }
        _ = evicted?.close()
    }
}

/// What a cancelled call must stop: the connect or the exchange it is in.
final class CallCancellation: Sendable {
    enum Step: Sendable {
        case connecting(ConnectAttempt)
        case exchange(LoopConnection)
    }

    private enum State {
        case running(Step?)
        case cancelled
    }

    private let state = Mutex(State.running(nil))

    /// Records the step the call is in; false when the call was cancelled already.
    func attach(_ step: Step) -> Bool {
        state.withLock { state in
            guard case .running = state else { return false }
            state = .running(step)
            return true
        }
    }

    /// The step ended: a later cancellation has nothing to stop. False when the
    /// call was cancelled first (and its connection closed).
    func detach() -> Bool {
        state.withLock { state in
            guard case .running = state else { return false }
            state = .running(nil)
            return true
        }
    }

    /// Cancels the call: the step it is in ends at once with ECANCELED.
    func cancel() {
        // The connection is closed under the lock, so a call that has just finished
        // with it (`detach`) never puts back a connection a late cancellation closes.
        let stop = state.withLock { state -> Stop? in
            defer { state = .cancelled }
            switch state {
            case .running(.connecting(let attempt)): return .connect(attempt)
            case .running(.exchange(let connection)): return connection.close().map { .resume($0) }
            case .running(nil), .cancelled: return nil
            }
        }
        switch stop {
        case .connect(let attempt):
            attempt.finish(.failure(SystemError(call: "connect (cancelled)", errno: ECANCELED)))
        case .resume(let waiting):
            waiting.resume(returning: .failed(SystemError(call: "read (cancelled)", errno: ECANCELED)))
        case nil:
            break
        }
    }

    /// What a cancellation does once the lock is released.
    private enum Stop {
        case connect(ConnectAttempt)
        case resume(UnsafeContinuation<ExchangeOutcome, Never>)
    }
}

/// A connect on its own thread that the waiting task may give up on: the
/// first of the result and a cancellation resumes the task, and a connection
/// that arrives after a cancellation is closed.
final class ConnectAttempt: Sendable {
    private enum State {
        case starting
        case waiting(UnsafeContinuation<Result<LoopConnection, SystemError>, Never>)
        case finished
    }

    private let state = Mutex(State.starting)
    private let cancelled = Atomic<Bool>(false)

    /// Whether a cancellation came first.
    var isCancelled: Bool { cancelled.load(ordering: .relaxed) }

    /// Parks the task's continuation; false (having resumed it) when the attempt already ended.
    func wait(_ continuation: UnsafeContinuation<Result<LoopConnection, SystemError>, Never>) -> Bool {
        let ended = state.withLock { state -> Bool in
            guard case .starting = state else { return true }
            state = .waiting(continuation)
            return false
        }
        if ended {
            continuation.resume(returning: .failure(SystemError(call: "connect (cancelled)", errno: ECANCELED)))
        }
        return !ended
    }

    /// The connect's outcome, or a cancellation: resumes the task if it is the first.
    func finish(_ result: Result<LoopConnection, SystemError>) {
        if case .failure(let error) = result, error.errno == ECANCELED { cancelled.store(true, ordering: .relaxed) }
        let waiting = state.withLock { state -> UnsafeContinuation<Result<LoopConnection, SystemError>, Never>? in
            defer { state = .finished }
            switch state {
            case .waiting(let continuation): return continuation
            case .starting, .finished: return nil
            }
        }
        if let waiting {
            waiting.resume(returning: result)
        } else if case .success(let connection) = result {
            // Cancelled first: nobody will use it.
            _ = connection.close()
        }
    }
}
