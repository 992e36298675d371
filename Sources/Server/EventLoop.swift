import CSystem
import Glibc
import HTTP
import Logging
import POSIXIO
import Synchronization

/// What other threads ask of a loop.
enum LoopMessage: Sendable {
    /// An answer for the connection with this token.
    case deliver(UInt64, Delivery)
    /// Begin a graceful shutdown; force-close what is left at `deadline` (monotonic ns).
    case drain(deadline: UInt64)
}

/// The thread-safe face of one event loop: its inbox and its eventfd.
///
/// Why split from `EventLoopCore`: responders live on any thread and only
/// need to hand answers over; everything else a loop owns is confined to its
/// thread. Messages from all threads go through one locked inbox so that a
/// stream's head, chunks and end keep their order whoever sends them.
///
/// The inbox has two queues. Direct responses (a request's own answer, see
/// ``Urgency``) and the drain go in their own, in their order (a shutdown's
/// drain before the answers its hooks give), which the loop takes before the
/// other and checks again every ``EventLoopCore/answerCheckInterval``
/// messages while it works through the other: stream heads, chunks and ends,
/// and bulk responses (the answers one commit gives every long-poll parked on
/// its list).
///
/// Why: one commit hands a loop thousands of stream chunks or long-poll
/// answers at once (10,000 followers on a list), and a write's own answer,
/// given while they are being handed over, would otherwise wait behind all
/// of them (measured: up to 38 ms in 25 runs, and 147 and 239 ms in rounds
/// of `fanout.sh`, against 1.5–3 ms usually; 60 ms behind long-poll answers
/// when those shared the direct queue). A response never overtakes anything
/// of its own connection: a connection's next request, whose response this
/// could be, is read only after its stream has ended or its answer was sent.
/// A stream's head, though a request's own answer too, stays in the second
/// queue: its chunks are posted right after it, and a loop that took that
/// queue between the two posts would reach them first and drop them (the
/// connection is not streaming yet).
final class EventLoop: Sendable {
    private struct Inbox {
        var messages: [LoopMessage] = []
        var responses: [LoopMessage] = []
        var stopped = false
    }

    let index: Int
    /// Written to wake the loop from epoll_wait; closed only in deinit, so a
    /// late responder never writes to a reused descriptor.
    let wakeFD: Int32
    private let inbox = Mutex(Inbox())
    /// Whether direct responses (or a drain) wait in the inbox: a check without the lock.
    private let responsesWaiting = Atomic<Bool>(false)

    init(index: Int) throws(SystemError) {
        self.index = index
        self.wakeFD = try System.eventFD()
    }

    deinit {
        System.close(wakeFD)
    }

    /// Hands `delivery` to the connection with `token`.
    func deliver(_ delivery: Delivery, to token: UInt64) {
        if let core = EventLoopCore.current, core.loop === self,
            core.takeSynchronousDelivery(delivery, for: token)
        {
            return
        }
        post(.deliver(token, delivery))
    }

    /// Queues `message`, waking the loop unless it is the caller (it drains
    /// its inbox before sleeping) or a wake-up is already pending.
    func post(_ message: LoopMessage) {
        let goesFirst: Bool
        switch message {
        case .deliver(_, .response(_, .direct)), .drain: goesFirst = true
        case .deliver: goesFirst = false
        }
        let needsWake = inbox.withLock { inbox -> Bool in
            guard !inbox.stopped else { return false }
            if goesFirst {
                inbox.responses.append(message)
                responsesWaiting.store(true, ordering: .releasing)
            } else {
                inbox.messages.append(message)
            }
            return inbox.messages.count + inbox.responses.count == 1
        }
        guard needsWake, EventLoopCore.current?.loop !== self else { return }
        // EAGAIN only if the counter is saturated, which still means "awake".
        try? System.eventFDSignal(wakeFD)
    }

    /// Takes all queued messages but direct responses and drains, leaving `spare` (emptied) as the new queue.
    func takeMessages(swappingWith spare: inout [LoopMessage]) {
        spare.removeAll(keepingCapacity: true)
        inbox.withLock { inbox in swap(&inbox.messages, &spare) }
    }

    /// Takes all queued direct responses and drains, if any, leaving `spare` (emptied) as the new queue.
    func takeResponses(swappingWith spare: inout [LoopMessage]) {
        spare.removeAll(keepingCapacity: true)
        guard responsesWaiting.load(ordering: .acquiring) else { return }
        inbox.withLock { inbox in
            swap(&inbox.responses, &spare)
            responsesWaiting.store(false, ordering: .releasing)
        }
    }

    /// The loop has exited: later messages are dropped.
    func markStopped() {
        inbox.withLock { inbox in
            inbox.stopped = true
            inbox.messages = []
            inbox.responses = []
            responsesWaiting.store(false, ordering: .releasing)
        }
    }
}

/// What all loops of one server share.
struct ServerContext: Sendable {
    let configuration: ServerConfiguration
    let handler: any HTTPHandler
    let counters: ServerCounters
    let logger: Logger
    let maxConnections: Int
}

/// One event loop: its selector, connections, timers and listener, run on its own thread.
///
/// The loop waits in epoll, reads what is readable, parses, dispatches to the
/// handler, writes, and fires due timers; between waits it drains its inbox.
/// All state here is touched only by the loop's thread.
final class EventLoopCore {
    private static let listenerToken = UInt64.max
    private static let wakeToken = UInt64.max - 1
    private static let readBufferSize = 64 * 1024

    let loop: EventLoop
    private let context: ServerContext
    private let selector: Selector
    private var listener: Int32?
    private var listenerWatched = true

    private var connections: [Connection?] = []
    private var generations: [UInt32] = []
    private var freeSlots: [Int] = []
    private var openCount = 0

    private var timers = TimerHeap()
    private var throttle = AcceptThrottle()
    private let readBuffer: UnsafeMutableRawBufferPointer
    private var dateCache = HTTPDateCache()
    private var now: UInt64
    private var spareMessages: [LoopMessage] = []
    private var spareResponses: [LoopMessage] = []
    /// The last response head written and what it was made from.
    private var lastHead: (key: HeadKey, bytes: [UInt8])?

    private var draining = false
    private var drainDeadline: UInt64?

    /// The connection whose handler call is on the stack, and an answer it gave before returning.
    private var dispatchingToken: UInt64?
    private var synchronousDelivery: Delivery?

    private let headTimeout: UInt64
    private let bodyTimeout: UInt64
    private let keepAliveTimeout: UInt64
    private let lingerTimeout: UInt64
    private let sendTimeout: UInt64
    private let highWaterMark: Int

    init(loop: EventLoop, context: ServerContext, selector: Selector, listener: Int32) {
        self.loop = loop
        self.context = context
        self.selector = selector
        self.listener = listener
        self.readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 16)
        self.now = System.monotonicNanoseconds()
        let configuration = context.configuration
        self.headTimeout = configuration.headTimeout.nanoseconds
        self.bodyTimeout = configuration.bodyIdleTimeout.nanoseconds
        self.keepAliveTimeout = configuration.keepAliveIdleTimeout.nanoseconds
        self.lingerTimeout = configuration.lingerTimeout.nanoseconds
        self.sendTimeout = configuration.sendTimeout.nanoseconds
        self.highWaterMark = configuration.outputHighWaterMark
    }

    deinit {
        readBuffer.deallocate()
    }

    /// Registers the listener and the wake-up eventfd; done before the thread starts.
    static func registerSources(selector: Selector, listener: Int32, wakeFD: Int32) throws(SystemError) {
        try selector.register(listener, interest: .readable, token: listenerToken)
        try selector.register(wakeFD, interest: .readable, token: wakeToken)
    }

    /// The loop owning the calling thread, if any.
    static var current: EventLoopCore? {
        guard let raw = csystem_current_loop() else { return nil }
        return Unmanaged<EventLoopCore>.fromOpaque(raw).takeUnretainedValue()
    }

    // MARK: Running

    /// Runs until a drain completes; then closes everything it owns.
    func run() {
        csystem_set_current_loop(Unmanaged.passUnretained(self).toOpaque())
        defer { csystem_set_current_loop(nil) }
        while true {
            processInbox()
            if draining, openCount == 0 { break }
            if let deadline = drainDeadline, now >= deadline {
                forceCloseAll()
                break
            }
            do {
                // The clock is read as soon as the wait ends: an idle loop may
                // have slept for minutes, and a connection accepted in this
                // batch would otherwise get a head timer already in the past
                // and be closed before its request is read.
                try selector.whenReady(
                    timeoutMilliseconds: waitTimeout(), woke: { now = System.monotonicNanoseconds() }
                ) { event in
                    handle(event)
                }
            } catch {
                context.logger.critical("event loop \(loop.index) cannot wait: \(error)")
                forceCloseAll()
                break
            }
            now = System.monotonicNanoseconds()
            fireTimers()
        }
        if let listener {
            System.close(listener)
            self.listener = nil
        }
        loop.markStopped()
    }

    private func waitTimeout() -> Int32 {
        var deadline = timers.nextDeadline
        if let until = throttle.pausedUntil { deadline = min(deadline ?? until, until) }
        if let drain = drainDeadline { deadline = min(deadline ?? drain, drain) }
        guard let deadline else { return -1 }
        let current = System.monotonicNanoseconds()
        guard deadline > current else { return 0 }
        // Round up so the timer is due when the wait ends.
        return Int32(min((deadline - current + 999_999) / 1_000_000, 60_000))
    }

    private func handle(_ event: SelectorEvent) {
        switch event.token {
        case Self.listenerToken:
            acceptConnections()
        case Self.wakeToken:
            _ = try? System.eventFDDrain(loop.wakeFD)
        default:
            guard let connection = lookup(event.token) else { return }
            if event.writable {
                flushAndContinue(connection)
                guard isOpen(connection) else { return }
            }
            if event.readable {
                readInput(connection)
            } else if event.hangup {
                if connection.inputClosed {
                    // Both directions are gone: the pending output cannot be delivered.
                    perform(connection.machine.errorCaught(), on: connection)
                } else {
                    connection.inputClosed = true
                    perform(connection.machine.inputClosed(), on: connection)
                }
            }
            if isOpen(connection) { updateInterest(connection) }
        }
    }

    /// How many messages the loop handles between two looks for direct
    /// responses (see ``EventLoop``): a write's answer waits behind at most
    /// this many stream chunks or bulk answers.
    static let answerCheckInterval = 64

    private func processInbox() {
        while true {
            processResponses()
            loop.takeMessages(swappingWith: &spareMessages)
            if spareMessages.isEmpty {
                // Responses that came while the last ones were handled: take them too, then sleep.
                if processResponses() { continue }
                return
            }
            for (index, message) in spareMessages.enumerated() {
                if index % Self.answerCheckInterval == Self.answerCheckInterval - 1 { processResponses() }
                handle(message)
            }
            spareMessages.removeAll(keepingCapacity: true)
        }
    }

    /// Handles the direct responses (and drains) waiting in the inbox; whether there were any.
    @discardableResult
    private func processResponses() -> Bool {
        loop.takeResponses(swappingWith: &spareResponses)
        guard !spareResponses.isEmpty else { return false }
        for message in spareResponses { handle(message) }
        spareResponses.removeAll(keepingCapacity: true)
        return true
    }

    private func handle(_ message: LoopMessage) {
        switch message {
        case .deliver(let token, let delivery):
            guard let connection = lookup(token) else { return }
            apply(delivery, to: connection)
            guard isOpen(connection) else { return }
            processInput(connection)
            flushAndContinue(connection)
            if isOpen(connection) { updateInterest(connection) }
        case .drain(let deadline):
            beginDrain(deadline: deadline)
        }
    }

    private func fireTimers() {
        if throttle.shouldResume(now: now), let listener, !draining {
            if (try? selector.reregister(listener, interest: .readable, token: Self.listenerToken)) != nil {
                listenerWatched = true
            }
        }
        while let slot = timers.popExpired(now: now) {
            guard let connection = connections[slot] else { continue }
            if !connection.output.isEmpty {
                // Output is waiting for the client to read: the request
                // timeouts do not apply (the server is not reading either),
                // but a client that reads nothing for `sendTimeout` is dropped.
                let stalledUntil = connection.lastWriteProgress + sendTimeout
                if now < stalledUntil {
                    timers.schedule(slot, at: stalledUntil)
                } else {
                    perform(connection.machine.errorCaught(), on: connection)
                }
                continue
            }
            perform(connection.machine.timedOut(), on: connection)
            if isOpen(connection) {
                flushAndContinue(connection)
                if isOpen(connection) { updateInterest(connection) }
            }
        }
    }

    // MARK: Accepting

    private func acceptConnections() {
        guard let listener, listenerWatched else { return }
        for _ in 0..<64 {
            do {
                switch try System.accept(listener) {
                case .wouldBlock:
                    return
                case .processed(let (fd, address)):
                    throttle.acceptSucceeded()
                    admit(fd: fd, address: address)
                }
            } catch {
                switch throttle.acceptFailed(errno: error.errno, now: now) {
                case .continueAccepting:
                    continue
                case .pause(let until):
                    context.counters.acceptPauses.add(1, ordering: .relaxed)
                    context.logger.warning(
                        "accept paused: \(error)",
                        metadata: ["resumeInMs": "\((until - now) / 1_000_000)"])
                    if (try? selector.reregister(listener, interest: [], token: Self.listenerToken)) != nil {
                        listenerWatched = false
                    }
                    return
                }
            }
        }
    }

    private func admit(fd: Int32, address: sockaddr_storage) {
        let counters = context.counters
        let open = counters.open.add(1, ordering: .relaxed).newValue
        counters.accepted.add(1, ordering: .relaxed)
        let overCapacity = open > context.maxConnections
        // Past the limit plus a quarter of the reserve, even the 503 costs too
        // much: the rest of the reserve stays free for the process itself.
        if overCapacity, open > context.maxConnections + context.configuration.descriptorReserve / 4 {
            counters.rejected.add(1, ordering: .relaxed)
            counters.open.subtract(1, ordering: .relaxed)
            System.close(fd)
            return
        }
        Socket.configureAccepted(fd)
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
        } else {
            slot = connections.count
            connections.append(nil)
            generations.append(0)
        }
        let token = UInt64(generations[slot]) << 32 | UInt64(slot)
        let interest: SelectorInterest = [.readable, .readHangup]
        let connection = Connection(
            fd: fd, slot: slot, token: token, remoteAddress: Socket.describe(address),
            limits: context.configuration.limits, interest: interest)
        do {
            try selector.register(fd, interest: interest, token: token)
        } catch {
            context.logger.warning("cannot watch an accepted socket: \(error)")
            counters.open.subtract(1, ordering: .relaxed)
            freeSlots.append(slot)
            System.close(fd)
            return
        }
        connections[slot] = connection
        openCount += 1
        if overCapacity {
            counters.rejected.add(1, ordering: .relaxed)
            perform(connection.machine.rejectedOverCapacity(), on: connection)
            if isOpen(connection) {
                flushAndContinue(connection)
                if isOpen(connection) { updateInterest(connection) }
            }
        } else {
            perform(.armTimer(.head), on: connection)
        }
    }

    // MARK: Reading and parsing

    private func readInput(_ connection: Connection) {
        let result: IOResult<Int>
        do {
            result = try System.read(connection.fd, into: readBuffer)
        } catch {
            perform(connection.machine.errorCaught(), on: connection)
            return
        }
        guard case .processed(let count) = result else { return }
        if count == 0 {
            connection.inputClosed = true
            perform(connection.machine.inputClosed(), on: connection)
            return
        }
        if case .lingering = connection.machine.state { return }
        connection.parser.append(UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]))
        perform(connection.machine.bytesReceived(), on: connection)
        processInput(connection)
        flushAndContinue(connection)
    }

    /// Parses and dispatches buffered requests while the connection can take them
    /// and its output is under the high-water mark.
    private func processInput(_ connection: Connection) {
        while isOpen(connection), connection.machine.acceptsInput,
            connection.output.pendingBytes <= highWaterMark
        {
            guard let event = connection.parser.next() else { break }
            switch event {
            case .head(let head):
                switch context.handler.admit(head, remoteAddress: connection.remoteAddress) {
                case .admit(let admission):
                    connection.admission = admission
                    perform(connection.machine.headReceived(head), on: connection)
                case .refuse(let response):
                    // A refused body is never read: without one, the connection goes on to the
                    // next request; with one, it closes after the answer (and lingers, discarding).
                    context.counters.requests.add(1, ordering: .relaxed)
                    let closing = !connection.parser.skipBodylessRequest()
                    perform(connection.machine.headRefused(head, closing: closing), on: connection)
                    perform(
                        connection.machine.responseReady(handlerWantsClose: closing), on: connection,
                        response: response)
                }
            case .request(var request):
                request.remoteAddress = connection.remoteAddress
                request.admission = connection.admission
                connection.admission = nil
                perform(connection.machine.requestReceived(request.head), on: connection)
                dispatch(request, on: connection)
            case .failure(let error):
                perform(connection.machine.parseFailed(error), on: connection)
            }
        }
        if isOpen(connection), connection.machine.state == .idle {
            connection.parser.releaseMemoryIfIdle()
        }
    }

    private func dispatch(_ request: Request, on connection: Connection) {
        context.counters.requests.add(1, ordering: .relaxed)
        let responder = Responder(loop: loop, token: connection.token)
        connection.responder = responder
        dispatchingToken = connection.token
        synchronousDelivery = nil
        context.handler.handle(request, responder: responder)
        dispatchingToken = nil
        if let delivery = synchronousDelivery {
            synchronousDelivery = nil
            apply(delivery, to: connection)
        } else if connection.machine.hasOutstandingRequest {
            connection.isParked = true
            context.counters.parked.add(1, ordering: .relaxed)
            connection.parser.releaseMemoryIfIdle()
        }
    }

    /// Keeps an answer given during the handler call for the current
    /// connection, so it is written without a trip through the inbox.
    func takeSynchronousDelivery(_ delivery: Delivery, for token: UInt64) -> Bool {
        guard token == dispatchingToken, synchronousDelivery == nil else { return false }
        switch delivery {
        case .response, .streamHead:
            synchronousDelivery = delivery
            return true
        case .streamChunk, .streamEnd:
            return false
        }
    }

    // MARK: Answers

    private func apply(_ delivery: Delivery, to connection: Connection) {
        switch delivery {
        case .response(let response, _):
            unpark(connection)
            let wantsClose = Self.handlerWantsClose(response)
            perform(connection.machine.responseReady(handlerWantsClose: wantsClose), on: connection, response: response)
        case .streamHead(let head):
            unpark(connection)
            let wantsClose = Self.handlerWantsClose(head)
            perform(connection.machine.streamStarted(handlerWantsClose: wantsClose), on: connection, response: head)
        case .streamChunk(let bytes, let flushed):
            guard case .streaming = connection.machine.state else { return }
            if connection.streamSendsBody {
                connection.output.append(connection.streamChunked ? ResponseSerializer.chunk(bytes) : bytes)
            }
            // Called from `flush` once the output is empty (at once for a HEAD stream).
            if let flushed { connection.flushWaiters.append(flushed) }
        case .streamEnd:
            perform(connection.machine.streamFinished(), on: connection)
        }
    }

    private func unpark(_ connection: Connection) {
        if connection.isParked {
            connection.isParked = false
            context.counters.parked.subtract(1, ordering: .relaxed)
        }
    }

    private static func handlerWantsClose(_ response: Response) -> Bool {
        guard let value = response.headers["connection"] else { return false }
        return value.lowercased().split(separator: ",").contains { token in
            token.filter { $0 != " " && $0 != "\t" } == "close"
        }
    }

    private func date() -> String {
        dateCache.string(secondsSince1970: System.wallClockSeconds())
    }

    /// Everything a response head is made from.
    private struct HeadKey: Equatable {
        var status: HTTPStatus
        var headers: HTTPHeaders
        var bodyCount: Int
        var method: HTTPMethod
        var version: HTTPVersion
        var keepAlive: Bool
        var date: String
    }

    /// The serialized head of `response`, reusing the previous one when it
    /// was made from the same parts.
    ///
    /// Why: when one event answers thousands of parked long-polls, they all
    /// get the same response (same header array, same shared body) within the
    /// same second, so the head is built once per loop instead of once per
    /// answer. Comparing is cheap when the header arrays share storage.
    private func head(of response: Response, for exchange: ConnectionStateMachine.Exchange) -> [UInt8] {
        let key = HeadKey(
            status: response.status, headers: response.headers, bodyCount: response.body.count,
            method: exchange.method, version: exchange.version, keepAlive: exchange.keepAlive, date: date())
        if let lastHead, lastHead.key == key { return lastHead.bytes }
        let bytes = ResponseSerializer.head(
            response, requestMethod: exchange.method, version: exchange.version,
            keepAlive: exchange.keepAlive, date: key.date)
        lastHead = (key, bytes)
        return bytes
    }

    // MARK: Actions

    private func perform(
        _ action: ConnectionStateMachine.Action, on connection: Connection, response: Response? = nil
    ) {
        switch action {
        case .none, .dispatch:
            break
        case .armTimer(let timeout):
            timers.schedule(connection.slot, at: now + duration(of: timeout))
        case .cancelTimer:
            timers.cancel(connection.slot)
        case .sendContinue:
            connection.output.append(ResponseSerializer.continueLine)
            timers.schedule(connection.slot, at: now + bodyTimeout)
        case .writeResponse(let exchange):
            guard let response else { return }
            timers.cancel(connection.slot)
            connection.responder = nil
            connection.output.append(head(of: response, for: exchange))
            if ResponseSerializer.hasBody(status: response.status, requestMethod: exchange.method) {
                connection.output.append(response.body)
            }
            if exchange.keepAlive {
                perform(
                    connection.machine.nextRequest(hasBufferedBytes: connection.parser.hasBufferedBytes), on: connection
                )
            }
        case .writeStreamHead(let exchange):
            guard let response else { return }
            timers.cancel(connection.slot)
            connection.streamChunked = ResponseSerializer.canChunk(version: exchange.version)
            connection.streamSendsBody = ResponseSerializer.hasBody(
                status: response.status, requestMethod: exchange.method)
            connection.output.append(
                ResponseSerializer.head(
                    response, requestMethod: exchange.method, version: exchange.version,
                    keepAlive: exchange.keepAlive, chunked: true, date: date()))
        case .writeStreamEnd(let exchange):
            if connection.streamChunked, connection.streamSendsBody {
                connection.output.append(ResponseSerializer.lastChunk)
            }
            connection.responder = nil
            if exchange.keepAlive {
                perform(
                    connection.machine.nextRequest(hasBufferedBytes: connection.parser.hasBufferedBytes), on: connection
                )
            }
        case .sendError(let status, let detail):
            timers.cancel(connection.slot)
            if status == .requestTimeout { context.counters.timeouts.add(1, ordering: .relaxed) }
            var refusal = context.handler.errorResponse(status: status, detail: detail)
            if status == .serviceUnavailable {
                refusal.headers.add(
                    name: "Retry-After", value: String(Int.random(in: context.configuration.retryAfterSeconds)))
            }
            connection.output.append(
                ResponseSerializer.head(refusal, requestMethod: .get, version: .http1_1, keepAlive: false, date: date())
            )
            connection.output.append(refusal.body)
        case .linger:
            try? System.shutdown(connection.fd, how: Int32(SHUT_WR))
            timers.schedule(connection.slot, at: now + lingerTimeout)
        case .close:
            close(connection)
        case .cancelAndClose:
            let responder = connection.responder
            close(connection)
            responder?.cancel()
        }
    }

    private func duration(of timeout: ConnectionStateMachine.Timeout) -> UInt64 {
        switch timeout {
        case .head: return headTimeout
        case .body: return bodyTimeout
        case .keepAlive: return keepAliveTimeout
        case .linger: return lingerTimeout
        }
    }

    // MARK: Writing

    /// Writes queued output until the socket is full, then, if that made room,
    /// goes on with pipelined requests.
    private func flushAndContinue(_ connection: Connection) {
        // Each round parses at least one buffered request, so this ends when
        // the socket is full or the buffered input is used up.
        while isOpen(connection) {
            let wasBackedUp = connection.output.pendingBytes > highWaterMark
            flush(connection)
            guard isOpen(connection), wasBackedUp,
                connection.output.pendingBytes <= highWaterMark,
                connection.machine.acceptsInput, connection.parser.hasBufferedBytes
            else { return }
            processInput(connection)
        }
    }

    private func flush(_ connection: Connection) {
        if connection.output.isEmpty {
            perform(connection.machine.outputFlushed(), on: connection)
            notifyFlushed(connection)
            return
        }
        while !connection.output.isEmpty {
            let fd = connection.fd
            let result = connection.output.withVectors { vectors in
                Result { () throws(SystemError) -> IOResult<Int> in try System.sendVectored(fd, vectors) }
            }
            switch result {
            case .success(.processed(let written)):
                connection.output.consume(written)
                connection.lastWriteProgress = now
            case .success(.wouldBlock):
                if !connection.interest.contains(.writable) {
                    // The socket just filled up: the stall clock starts now.
                    connection.lastWriteProgress = now
                }
                if timers.deadline(of: connection.slot) == nil {
                    timers.schedule(connection.slot, at: now + sendTimeout)
                }
                return
            case .failure:
                // EPIPE or ECONNRESET: the client is gone.
                perform(connection.machine.errorCaught(), on: connection)
                return
            }
        }
        perform(connection.machine.outputFlushed(), on: connection)
        notifyFlushed(connection)
    }

    /// Runs the stream producers' flush callbacks once nothing is queued.
    private func notifyFlushed(_ connection: Connection) {
        guard !connection.flushWaiters.isEmpty, connection.output.isEmpty, isOpen(connection) else { return }
        let waiters = connection.flushWaiters
        connection.flushWaiters = []
        for waiter in waiters { waiter() }
    }

    private func updateInterest(_ connection: Connection) {
        var wanted: SelectorInterest = []
        if !connection.inputClosed {
            wanted.insert(.readHangup)
            if connection.output.pendingBytes <= highWaterMark {
                if connection.machine.wantsToRead {
                    wanted.insert(.readable)
                } else if connection.machine.hasOutstandingRequest, !connection.parser.hasBufferedBytes {
                    // A parked request keeps the read interest it had, so
                    // answering it costs no epoll_ctl (10,000 answers to one
                    // event would otherwise pay 10,000 of them). At most one
                    // read's worth of pipelined input is buffered meanwhile:
                    // then reading stops until the answer is written.
                    wanted.insert(.readable)
                }
            }
        }
        if !connection.output.isEmpty { wanted.insert(.writable) }
        guard wanted != connection.interest else { return }
        do {
            try selector.reregister(connection.fd, interest: wanted, token: connection.token)
            connection.interest = wanted
        } catch {
            perform(connection.machine.errorCaught(), on: connection)
        }
    }

    // MARK: Connection table

    private func lookup(_ token: UInt64) -> Connection? {
        let slot = Int(token & 0xFFFF_FFFF)
        guard slot < connections.count, let connection = connections[slot], connection.token == token else {
            return nil
        }
        return connection
    }

    private func isOpen(_ connection: Connection) -> Bool {
        connections[connection.slot] === connection
    }

    private func close(_ connection: Connection) {
        guard isOpen(connection) else { return }
        timers.cancel(connection.slot)
        unpark(connection)
        // Closing the descriptor also removes it from the epoll set.
        System.close(connection.fd)
        connections[connection.slot] = nil
        generations[connection.slot] &+= 1
        freeSlots.append(connection.slot)
        openCount -= 1
        context.counters.open.subtract(1, ordering: .relaxed)
    }

    // MARK: Shutdown

    private func beginDrain(deadline: UInt64) {
        guard !draining else { return }
        draining = true
        drainDeadline = deadline
        if let listener {
            System.close(listener)
            self.listener = nil
        }
        for case let connection? in connections {
            perform(connection.machine.shutdownRequested(), on: connection)
            if isOpen(connection) {
                flushAndContinue(connection)
                if isOpen(connection) { updateInterest(connection) }
            }
        }
    }

    private func forceCloseAll() {
        for case let connection? in connections {
            perform(connection.machine.errorCaught(), on: connection)
        }
    }
}

@available(*, unavailable)
extension EventLoopCore: Sendable {}
