import CSystem
import Glibc
import HTTP
import POSIXIO
import Synchronization

/// One thread that waits on the sockets of every ``KeepAliveClient`` exchange
/// in the process with epoll, reads and frames their answers, and resumes the
/// waiting tasks.
///
/// Why: a blocking call needs a thread of its own per request in flight, and a
/// task on Swift's cooperative pool that waits for one crosses two threads per
/// answer (the blocking thread wakes and resumes the task; the task hands its
/// next request back to a blocking thread). Here a task sends its request
/// itself (a non-blocking send that fits the socket's buffer) and parks a
/// continuation; one `epoll_wait` hears every answer that arrived together and
/// resumes each waiting task directly.
///
/// Deadlines are checked when the earliest one known falls due: a thread
/// starting an exchange due before that wakes the loop (an eventfd), which is
/// rare, since a client's requests mostly share one timeout.
///
/// The loop runs for the life of the process; ``shared()`` starts it on first use.
final class HTTPClientLoop: Sendable {
    private static let wakeToken: UInt64 = 0
    private static let readBufferSize = 64 * 1024
    private static let eventCapacity = 256

    /// The epoll instance (other threads add, change and remove registrations).
    let epoll: Int32
    /// Written to wake the loop from `epoll_wait`.
    private let wakeFD: Int32
    /// Every registered connection by token.
    private let connections = Mutex<[UInt64: LoopConnection]>([:])
    private let nextToken = Atomic<UInt64>(1)
    /// Monotonic nanoseconds at which the loop next checks deadlines; `.max` for
    /// none, and while it is checking (so a deadline set meanwhile wakes it).
    private let plannedCheck = Atomic<UInt64>(.max)
    /// How many times the loop sent the rest of a request that did not fit the socket at once.
    private let flushes = Atomic<Int>(0)
    private let partialSends = Atomic<Int>(0)
    /// Set when `epoll_wait` failed and the loop's thread ended.
    private let failure = Mutex<SystemError?>(nil)

    private static let sharedLoop = Mutex<HTTPClientLoop?>(nil)

    /// The process's loop, started on first use (and again if an earlier one failed).
    static func shared() throws(SystemError) -> HTTPClientLoop {
        try sharedLoop.withLock { (loop: inout HTTPClientLoop?) throws(SystemError) -> HTTPClientLoop in
            if let running = loop, running.failure.withLock({ $0 }) == nil { return running }
            let started = try HTTPClientLoop()
            loop = started
            return started
        }
    }

    private init() throws(SystemError) {
        epoll = try System.epollCreate()
        do throws(SystemError) {
            wakeFD = try System.eventFD()
        } catch {
            System.close(epoll)
            throw error
        }
        do throws(SystemError) {
            try System.epollControl(epoll, EPOLL_CTL_ADD, wakeFD, events: EPOLLIN.rawValue, data: Self.wakeToken)
            let thread = try System.spawnThread(name: "listd-client-io") { [self] in run() }
            pthread_detach(thread)
        } catch {
            System.close(wakeFD)
            System.close(epoll)
            throw error
        }
    }

    /// Why the loop stopped, if it did: new connections are refused with it.
    var stopped: SystemError? { failure.withLock { $0 } }

    /// Takes a connected socket over: non-blocking, watched by the loop, reserved for its first request.
    func adopt(_ fd: Int32, endpoint: String) throws(SystemError) -> LoopConnection {
        let connection = LoopConnection(
            fd: fd, token: nextToken.add(1, ordering: .relaxed).oldValue, endpoint: endpoint)
        do throws(SystemError) {
            try System.setNonBlocking(fd)
            // In the table before epoll can report it; not at all once the loop has stopped.
            try connections.withLock { (table: inout [UInt64: LoopConnection]) throws(SystemError) in
                if let stopped { throw stopped }
                table[connection.token] = connection
            }
            try System.epollControl(
                epoll, EPOLL_CTL_ADD, fd, events: LoopConnection.interest(writing: false), data: connection.token)
        } catch {
            connections.withLock { $0[connection.token] = nil }
            System.close(fd)
            throw error
        }
        return connection
    }

    /// An exchange due at `deadline` started: wakes the loop when it plans to look later than that.
    func noteDeadline(_ deadline: UInt64) {
        if deadline < plannedCheck.load(ordering: .acquiring) {
            // EAGAIN only if the counter is saturated, which still means "awake".
            try? System.eventFDSignal(wakeFD)
        }
    }

    /// How many connections the loop watches now.
    var watchedConnections: Int { connections.withLock { $0.count } }

    /// How many times a request was only partly sent and the loop sent the rest when the socket had room.
    var flushCount: Int { flushes.load(ordering: .relaxed) }

    /// How many requests did not fit the socket when first sent and wait for the loop to send the rest.
    var partialSendCount: Int { partialSends.load(ordering: .relaxed) }

    /// A request's first send left part of it unsent: the loop sends the rest when the socket has room.
    func notePartialSend() { partialSends.add(1, ordering: .relaxed) }

    // MARK: The loop's thread

    private func run() {
        let events = UnsafeMutableBufferPointer<epoll_event>.allocate(capacity: Self.eventCapacity)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.readBufferSize, alignment: 16)
        defer {
            events.deallocate()
            buffer.deallocate()
        }
        var ready: [(LoopConnection?, UInt32)] = []
        ready.reserveCapacity(Self.eventCapacity)
        while true {
            let count: Int
            do throws(SystemError) {
                count = try System.epollWait(epoll, into: events, timeoutMilliseconds: waitTimeout())
            } catch {
                stop(error)
                return
            }
            var woken = false
            ready.removeAll(keepingCapacity: true)
            connections.withLock { table in
                for index in 0..<count {
                    let token = events[index].data.u64
                    if token == Self.wakeToken {
                        woken = true
                    } else {
                        ready.append((table[token], events[index].events))
                    }
                }
            }
            if woken { _ = try? System.eventFDDrain(wakeFD) }
            for (connection, flags) in ready {
                // A connection closed earlier in this batch is out of the table already.
                guard let connection else { continue }
                handle(connection, flags, buffer)
            }
            let now = System.monotonicNanoseconds()
            if woken || now >= plannedCheck.load(ordering: .relaxed) { checkDeadlines(now, buffer) }
        }
    }

    /// Milliseconds until the next deadline check, rounded up; -1 when there is none.
    private func waitTimeout() -> Int32 {
        let planned = plannedCheck.load(ordering: .relaxed)
        if planned == .max { return -1 }
        let now = System.monotonicNanoseconds()
        if planned <= now { return 0 }
        return Int32(min((planned - now + 999_999) / 1_000_000, 3_600_000))
    }

    private func handle(_ connection: LoopConnection, _ flags: UInt32, _ buffer: UnsafeMutableRawBufferPointer) {
        // A connection released by the flush has a descriptor that is no longer ours to read.
        if flags & EPOLLOUT.rawValue != 0, !flush(connection) { return }
        let hangup = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue
        if flags & hangup != 0 { read(connection, buffer) }
    }

    /// Sends more of a partly sent request; stops watching for room once all is sent.
    /// Returns false when the send failed and the connection was released.
    private func flush(_ connection: LoopConnection) -> Bool {
        let failed = connection.phase.withLock {
            phase -> (UnsafeContinuation<ExchangeOutcome, Never>, ExchangeOutcome)? in
            guard case .busy(var exchange) = phase, exchange.written < exchange.output.count else { return nil }
            flushes.add(1, ordering: .relaxed)
            phase = .closed  // so `exchange` holds the only reference to its buffers while it changes
            do throws(SystemError) {
                try exchange.send(on: connection.fd)
                if exchange.written == exchange.output.count {
                    try System.epollControl(
                        epoll, EPOLL_CTL_MOD, connection.fd, events: LoopConnection.interest(writing: false),
                        data: connection.token)
                }
            } catch {
                return (exchange.continuation, Self.failure(error, received: exchange.parser.received))
            }
            phase = .busy(exchange)
            return nil
        }
        guard let (continuation, outcome) = failed else { return true }
        release(connection)
        continuation.resume(returning: outcome)
        return false
    }

    /// Reads what arrived and feeds it to the waiting exchange; resumes it once
    /// its answer is whole, or fails it when the connection ends first.
    private func read(_ connection: LoopConnection, _ buffer: UnsafeMutableRawBufferPointer) {
        var resume: (UnsafeContinuation<ExchangeOutcome, Never>, ExchangeOutcome)?
        var closing = false
        while true {
            let result = Result { () throws(SystemError) in try System.read(connection.fd, into: buffer) }
            let step = connection.phase.withLock { phase -> ReadStep in
                Self.step(after: result, UnsafeRawBufferPointer(buffer), in: &phase)
            }
            switch step {
            case .waitForMore: break
            case .readAgain: continue
            case .finished(let continuation, let outcome, let close):
                resume = (continuation, outcome)
                closing = close
            case .close:
                closing = true
            }
            break
        }
        if closing { release(connection) }
        if let (continuation, outcome) = resume { continuation.resume(returning: outcome) }
    }

    enum ReadStep {
        /// Nothing more to do until the next readiness.
        case waitForMore
        /// The read filled the buffer: there may be more right away.
        case readAgain
        /// The exchange ended with `outcome`; `close` when the connection cannot carry another.
        case finished(UnsafeContinuation<ExchangeOutcome, Never>, ExchangeOutcome, close: Bool)
        /// The connection ended with no exchange waiting.
        case close
    }

    /// What one read's `result` (bytes in `buffer`) means for a connection in
    /// `phase`, which the caller holds locked.
    static func step(
        after result: Result<IOResult<Int>, SystemError>, _ buffer: UnsafeRawBufferPointer,
        in phase: inout LoopConnection.Phase
    ) -> ReadStep {
        switch phase {
        case .busy: break
        case .streaming(let streaming):
            phase = .closed
            return stream(after: result, buffer, streaming, in: &phase)
        case .closed, .lost:
            // Ended by another thread (which shut the socket down): the loop's turn to close it.
            return .close
        case .idle, .reserved:
            // A server says nothing unasked, so bytes, an end or an error all mean the connection is done.
            if case .success(.wouldBlock) = result { return .waitForMore }
            if case .reserved = phase {
                phase = .lost(SystemError(call: "read (connection closed before a response)", errno: ECONNRESET))
            } else {
                phase = .closed
            }
            return .close
        }
        guard case .busy(var exchange) = phase else { return .close }
        phase = .closed  // so `exchange` holds the only reference to its buffers while it changes
        let now = System.monotonicNanoseconds()
        let outcome: ExchangeOutcome
        do throws(SystemError) {
            switch try result.get() {
            case .wouldBlock:
                phase = .busy(exchange)
                return .waitForMore
            case .processed(0):
                var response = try exchange.parser.finish()
                if let body = exchange.stream {
                    body.push(response.body)
                    body.finish(nil)
                    response.body = []
                }
                outcome = .answered(response)
            case .processed(let count):
                exchange.parser.append(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                if let body = exchange.stream {
                    // A streamed answer: the head goes to the caller, the body to the stream as it comes.
                    let (bytes, complete) = try exchange.parser.takeBody()
                    guard let head = exchange.parser.head else {
                        phase = .busy(exchange)
                        return count == buffer.count ? .readAgain : .waitForMore
                    }
                    body.push(bytes)
                    if complete {
                        body.finish(nil)
                        return .finished(exchange.continuation, .answered(head), close: true)
                    }
                    phase = .streaming(
                        Streaming(
                            parser: exchange.parser, body: body, deadline: now + exchange.idle, idle: exchange.idle))
                    return .finished(exchange.continuation, .answered(head), close: false)
                }
                guard let response = try exchange.parser.response() else {
                    phase = .busy(exchange)
                    return count == buffer.count ? .readAgain : .waitForMore
                }
                // A request only partly sent when the answer came (an early refusal) leaves the connection unusable.
                if exchange.parser.canCarryAnotherRequest && exchange.written == exchange.output.count {
                    phase = .idle(since: now)
                    return .finished(exchange.continuation, .answered(response), close: false)
                }
                outcome = .answered(response)
            }
        } catch {
            outcome = failure(error, received: exchange.parser.received)
        }
        return .finished(exchange.continuation, outcome, close: true)
    }

    /// One read's `result` for a streamed answer's body: pushes what it framed;
    /// `phase` (locked by the caller, `.closed` on entry) is set back to streaming while the body runs.
    static func stream(
        after result: Result<IOResult<Int>, SystemError>, _ buffer: UnsafeRawBufferPointer, _ streaming: Streaming,
        in phase: inout LoopConnection.Phase
    ) -> ReadStep {
        var streaming = streaming
        do throws(SystemError) {
            switch try result.get() {
            case .wouldBlock:
                phase = .streaming(streaming)
                return .waitForMore
            case .processed(0):
                streaming.body.push(try streaming.parser.finishBody())
                streaming.body.finish(nil)
                return .close
            case .processed(let count):
                streaming.parser.append(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                let (bytes, complete) = try streaming.parser.takeBody()
                streaming.body.push(bytes)
                if complete {
                    streaming.body.finish(nil)
                    return .close
                }
                streaming.deadline = System.monotonicNanoseconds() + streaming.idle
                phase = .streaming(streaming)
                return count == buffer.count ? .readAgain : .waitForMore
            }
        } catch {
            streaming.body.finish(error)
            return .close
        }
    }

    /// A connection that failed before any byte of an answer (`received` 0) with
    /// a reset or broken pipe is stale: a server closed it while it sat idle.
    static func failure(_ error: SystemError, received: Int) -> ExchangeOutcome {
        received == 0 && (error.errno == ECONNRESET || error.errno == EPIPE) ? .stale(error) : .failed(error)
    }

    /// Takes a connection that is `closed` out of epoll and the table, and closes its descriptor.
    private func release(_ connection: LoopConnection) {
        _ = try? System.epollControl(epoll, EPOLL_CTL_DEL, connection.fd, events: 0, data: 0)
        connections.withLock { $0[connection.token] = nil }
        System.close(connection.fd)
    }

    /// Fails the exchanges past their deadline and plans the next check for the earliest left.
    ///
    /// An exchange past its deadline first gets one more read: when this thread
    /// was held up (a loaded machine), an answer may have arrived since the last
    /// `epoll_wait`, and an answer already in the socket is not a timeout.
    private func checkDeadlines(_ now: UInt64, _ buffer: UnsafeMutableRawBufferPointer) {
        // A thread that starts an exchange while this runs sees `.max` and wakes the loop.
        plannedCheck.store(.max, ordering: .releasing)
        let all = connections.withLock { Array($0.values) }
        let due = all.filter { connection in
            connection.phase.withLock { phase in
                if case .busy(let exchange) = phase { return exchange.deadline <= now }
                return false
            }
        }
        // A read that ends a connection leaves it `closed`, which the walk below skips.
        for connection in due { read(connection, buffer) }
        var earliest = UInt64.max
        var expired: [(LoopConnection, UnsafeContinuation<ExchangeOutcome, Never>)] = []
        var silent: [(LoopConnection, ResponseBodyStream)] = []
        for connection in all {
            connection.phase.withLock { phase in
                if case .streaming(let streaming) = phase {
                    if streaming.deadline <= now {
                        phase = .closed
                        silent.append((connection, streaming.body))
                    } else {
                        earliest = min(earliest, streaming.deadline)
                    }
                    return
                }
                guard case .busy(let exchange) = phase else { return }
                if exchange.deadline <= now {
                    phase = .closed
                    expired.append((connection, exchange.continuation))
                } else {
                    earliest = min(earliest, exchange.deadline)
                }
            }
        }
        for (connection, continuation) in expired {
            release(connection)
            continuation.resume(returning: .failed(SystemError(call: "read (timed out)", errno: ETIMEDOUT)))
        }
        for (connection, body) in silent {
            release(connection)
            body.finish(SystemError(call: "read (a streamed body was silent too long)", errno: ETIMEDOUT))
        }
        plannedCheck.store(earliest, ordering: .releasing)
    }

    /// `epoll_wait` failed: no answer will be read again, so every waiting exchange fails with `error`.
    private func stop(_ error: SystemError) {
        failure.withLock { $0 = error }
        let all = connections.withLock { table in
            defer { table.removeAll() }
            return Array(table.values)
        }
        for connection in all {
            let waiting = connection.phase.withLock { phase -> UnsafeContinuation<ExchangeOutcome, Never>? in
                defer { phase = .closed }
                if case .streaming(let streaming) = phase { streaming.body.finish(error) }
                if case .busy(let exchange) = phase { return exchange.continuation }
                return nil
            }
            System.close(connection.fd)
            waiting?.resume(returning: .failed(error))
        }
    }
}
