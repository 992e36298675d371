import HTTP
import Synchronization

/// What a handler sends back to a connection's event loop (or, in the
/// package's in-process tests, to the test).
package enum Delivery: Sendable {
    case response(Response, Urgency)
    case streamHead(Response)
    /// A chunk, and what to call once it (and all before it) reached the socket.
    case streamChunk([UInt8], flushed: (@Sendable () -> Void)?)
    case streamEnd
}

/// Where an answer waits in its event loop's inbox, behind what.
public enum Urgency: Sendable {
    /// A request's own answer, given for it alone (a write's result, a read):
    /// it goes ahead of the stream chunks and bulk answers the loop has queued.
    case direct
    /// One of many answers one event gives at once (a commit answering every
    /// long-poll parked on its list, a timeout, a shutdown): in order with
    /// stream chunks, so that a burst of thousands never holds back a direct
    /// answer given while it is handed over.
    case bulk
}

/// The way back to one request's client: answer now or later, from any thread.
///
/// Why a class with a lock: the answer may come from any thread, at most once,
/// and may race with the client going away. The lock only guards the state
/// change; responses and cancellation callbacks run after it is released.
public final class Responder: Sendable {
    private enum State {
        case waiting([@Sendable () -> Void])
        case streaming([@Sendable () -> Void])
        case answered
        case cancelled
    }

    /// Where the answer goes.
    private enum Target: Sendable {
        /// A connection of an event loop (every request the server reads).
        case connection(EventLoop, token: UInt64)
        /// A function: the in-process seam through which the package's tests
        /// drive a handler with no socket (as NIO's EmbeddedChannel).
        case function(@Sendable (Delivery) -> Void)
    }

    private let target: Target
    private let state = Mutex<State>(.waiting([]))
    /// Run once the exchange is over, however it ends; nil once it has.
    private let endings = Mutex<[@Sendable () -> Void]?>([])

    init(loop: EventLoop, token: UInt64) {
        target = .connection(loop, token: token)
    }

    /// A responder whose answer goes to `deliver` instead of a connection:
    /// the in-process seam for the package's tests of handlers. Stream chunks'
    /// `flushed` callbacks are the receiver's to call.
    package init(delivering deliver: @escaping @Sendable (Delivery) -> Void) {
        target = .function(deliver)
    }

    private func deliver(_ delivery: Delivery) {
        switch target {
        case .connection(let loop, let token): loop.deliver(delivery, to: token)
        case .function(let deliver): deliver(delivery)
        }
    }

    /// Sends `response` to the client.
    ///
    /// Only the first answer counts: calls after a `respond`, after
    /// `startStream`, or after the client went away are ignored. For a HEAD
    /// request, give the response GET would give; its body is not sent.
    /// `urgency` says whether it may wait behind a burst of other answers.
    public func respond(_ response: Response, urgency: Urgency = .direct) {
        let accepted = state.withLock { state -> Bool in
            guard case .waiting = state else { return false }
            state = .answered
            return true
        }
        if accepted {
            deliver(.response(response, urgency))
            ended()
        }
    }

    /// Registers `body` to run once the exchange is over, however it ends:
    /// answered, its stream finished, or its client gone. If it is already
    /// over, `body` runs at once on the calling thread.
    ///
    /// For what a request holds while it is open (a caller's share of
    /// concurrent streams and long-polls), which must be given back exactly once.
    public func onEnd(_ body: @escaping @Sendable () -> Void) {
        let runNow = endings.withLock { endings -> Bool in
            guard endings != nil else { return true }
            endings?.append(body)
            return false
        }
        if runNow { body() }
    }

    private func ended() {
        let callbacks = endings.withLock { endings in
            let callbacks = endings ?? []
            endings = nil
            return callbacks
        }
        for callback in callbacks { callback() }
    }

    /// Registers `body` to run if the client goes away before the request is answered
    /// (or, for a stream, before it is finished).
    ///
    /// Each registered callback runs at most once, on any thread. If the request
    /// is already cancelled, `body` runs at once on the calling thread; if it
    /// was already answered, never.
    public func onCancel(_ body: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            switch state {
            case .waiting(var callbacks):
                callbacks.append(body)
                state = .waiting(callbacks)
                return false
            case .streaming(var callbacks):
                callbacks.append(body)
                state = .streaming(callbacks)
                return false
            case .cancelled:
                return true
            case .answered:
                return false
            }
        }
        if runNow { body() }
    }

    /// Whether the client went away before the request was answered.
    public var isCancelled: Bool {
        state.withLock { state in
            if case .cancelled = state { return true }
            return false
        }
    }

    /// Starts a streamed (chunked) response with `head`'s status and header fields.
    ///
    /// `head.body` is ignored. Write with ``ResponseStream/write(_:)`` and end
    /// with ``ResponseStream/finish()``. For an HTTP/1.0 client the body is sent
    /// unframed and the connection closes at the end. If the request was
    /// already answered or cancelled, the returned stream discards everything.
    public func startStream(_ head: Response) -> ResponseStream {
        let accepted = state.withLock { state -> Bool in
            guard case .waiting(let callbacks) = state else { return false }
            state = .streaming(callbacks)
            return true
        }
        let stream = ResponseStream(responder: self, active: accepted)
        if accepted { deliver(.streamHead(head)) }
        return stream
    }

    /// Forwards a stream's part to the loop; false when the stream is over.
    fileprivate func deliverStreamPart(_ delivery: Delivery) -> Bool {
        let streaming = state.withLock { state -> Bool in
            if case .streaming = state { return true }
            return false
        }
        if streaming { deliver(delivery) }
        return streaming
    }

    /// The stream's end was sent: later client departures are no cancellation.
    fileprivate func streamFinished() {
        let finished = state.withLock { state -> Bool in
            guard case .streaming = state else { return false }
            state = .answered
            return true
        }
        if finished { ended() }
    }

    /// The client went away: runs the cancellation callbacks (outside the lock).
    package func cancel() {
        let callbacks = state.withLock { state -> [@Sendable () -> Void] in
            switch state {
            case .waiting(let callbacks), .streaming(let callbacks):
                state = .cancelled
                return callbacks
            case .answered, .cancelled:
                return []
            }
        }
        for callback in callbacks { callback() }
        ended()
    }
}

/// A response body sent in pieces (chunked transfer coding), for server-sent events.
///
/// Use it from one thread at a time; writes are delivered in order.
public final class ResponseStream: Sendable {
    private let responder: Responder
    private let open: Atomic<Bool>

    init(responder: Responder, active: Bool) {
        self.responder = responder
        self.open = Atomic(active)
    }

    /// Sends `bytes` as one chunk; ignored after `finish()` or once the client left.
    public func write(_ bytes: [UInt8]) {
        write(bytes, whenFlushed: nil)
    }

    /// Sends `bytes` as one chunk and calls `flushed` once the connection's
    /// queued output, this chunk included, has all been handed to the socket.
    ///
    /// Why: a producer that writes again only after `flushed` keeps at most
    /// one chunk per stream in memory, however slowly its client reads, and
    /// can coalesce what happened meanwhile into its next chunk. `flushed`
    /// runs on the connection's event loop thread and must not block; it
    /// never runs if the client goes away first (use `onCancel` for that).
    public func write(_ bytes: [UInt8], whenFlushed flushed: (@Sendable () -> Void)?) {
        guard !bytes.isEmpty, open.load(ordering: .acquiring) else { return }
        if !responder.deliverStreamPart(.streamChunk(bytes, flushed: flushed)) {
            open.store(false, ordering: .releasing)
        }
    }

    /// Ends the body; later calls are ignored.
    public func finish() {
        guard open.exchange(false, ordering: .acquiringAndReleasing) else { return }
        if responder.deliverStreamPart(.streamEnd) {
            responder.streamFinished()
        }
    }

    /// Whether the client went away; a long-running producer should stop.
    public var isCancelled: Bool { responder.isCancelled }
}
