import HTTP

/// One connection's life as a value: which request it is on, which timeout
/// applies, whether it stays open after a response.
///
/// Why a value: every decision the event loop makes about a connection
/// (arm which timer, answer 408, dispatch, keep alive or close, cancel a
/// parked request) comes from one `mutating` method returning an `Action`,
/// so the whole protocol is tested without sockets. The loop only carries
/// actions out: it owns the socket, the parser and the output buffer.
///
/// Requests on one connection are handled one at a time: a pipelined request
/// is parsed only after the previous response has been queued, which keeps
/// responses in request order without reordering buffers.
struct ConnectionStateMachine {
    /// Which timeout is running.
    enum Timeout: Equatable {
        /// Waiting for (the rest of) a request head: the slowloris guard.
        case head
        /// Waiting for more of a request body.
        case body
        /// Idle between requests on a persistent connection.
        case keepAlive
        /// After the last response, discarding input until the client closes.
        case linger
    }

    /// What the current request needs to shape its response.
    struct Exchange: Equatable {
        var method: HTTPMethod
        var version: HTTPVersion
        /// Whether the connection may stay open after this response.
        var keepAlive: Bool
    }

    enum State: Equatable {
        /// Between requests with no bytes buffered.
        case idle
        /// Some bytes of a request head are here.
        case readingHead
        /// The head is complete; the body is being read.
        case readingBody(Exchange)
        /// The handler has the request and has not answered yet.
        case processing(Exchange)
        /// A chunked response is being streamed.
        case streaming(Exchange)
        /// The last response is queued; close once it is written.
        case closingAfterFlush
        /// The last response is written and the sending side shut; input is
        /// discarded until the client closes or the linger timer fires.
        case lingering
        case closed
    }

    /// What the loop must do.
    enum Action: Equatable {
        case none
        /// (Re)start the timer for this timeout.
        case armTimer(Timeout)
        /// Stop the connection's timer.
        case cancelTimer
        /// Write `100 Continue` now, then arm the body timer.
        case sendContinue
        /// Give the request to the handler (the timer stops: a parked request has no timeout).
        case dispatch
        /// Queue the response; the connection stays open only when `keepAlive`.
        case writeResponse(Exchange)
        /// Queue a stream's head (chunked unless HTTP/1.0).
        case writeStreamHead(Exchange)
        /// Queue the end of the stream.
        case writeStreamEnd(Exchange)
        /// Queue a server error response (problem+json) and close after it.
        case sendError(HTTPStatus, detail: String)
        /// Shut the sending side and linger, discarding input.
        case linger
        /// Close now.
        case close
        /// The client left while its request was unanswered: cancel it and close.
        case cancelAndClose
    }

    private(set) var state: State = .idle
    /// The server is shutting down: no new keep-alive.
    private(set) var isDraining = false

    /// Whether the loop may parse more input.
    var acceptsInput: Bool {
        switch state {
        case .idle, .readingHead, .readingBody: return true
        default: return false
        }
    }

    /// Whether the loop should read from the socket (if the output is not backed up).
    var wantsToRead: Bool {
        switch state {
        case .idle, .readingHead, .readingBody, .lingering: return true
        default: return false
        }
    }

    /// Whether a request is with the handler (unanswered or streaming).
    var hasOutstandingRequest: Bool {
        switch state {
        case .processing, .streaming: return true
        default: return false
        }
    }

    /// Bytes arrived from the client.
    mutating func bytesReceived() -> Action {
        switch state {
        case .idle:
            state = .readingHead
            return .armTimer(.head)
        case .readingBody:
            // The body timeout is an idle timeout: any progress restarts it.
            return .armTimer(.body)
        default:
            return .none
        }
    }

    /// The parser found a complete head.
    mutating func headReceived(_ head: RequestHead) -> Action {
        switch state {
        case .idle, .readingHead:
            let exchange = Exchange(
                method: head.method, version: head.version, keepAlive: head.keepAlive && !isDraining)
            state = .readingBody(exchange)
            return head.expectsContinue ? .sendContinue : .armTimer(.body)
        default:
            preconditionFailure("head received in state \(state)")
        }
    }

    /// The handler refused a request on its head: its answer is written next, and the
    /// connection closes after it when `closing` (a body was announced and is not read).
    mutating func headRefused(_ head: RequestHead, closing: Bool) -> Action {
        switch state {
        case .idle, .readingHead:
            state = .processing(
                Exchange(
                    method: head.method, version: head.version,
                    keepAlive: head.keepAlive && !isDraining && !closing))
            return .cancelTimer
        default:
            preconditionFailure("head refused in state \(state)")
        }
    }

    /// The parser found a complete request.
    mutating func requestReceived(_ head: RequestHead) -> Action {
        switch state {
        case .readingBody(let exchange):
            state = .processing(exchange)
        case .idle, .readingHead:
            state = .processing(
                Exchange(method: head.method, version: head.version, keepAlive: head.keepAlive && !isDraining))
        default:
            preconditionFailure("request received in state \(state)")
        }
        return .dispatch
    }

    /// A new connection over the connection limit: answer 503 and close.
    mutating func rejectedOverCapacity() -> Action {
        guard case .idle = state else { return .none }
        state = .closingAfterFlush
        return .sendError(.serviceUnavailable, detail: "The server is at its connection limit; retry later.")
    }

    /// The parser refused the input.
    mutating func parseFailed(_ error: HTTPParseError) -> Action {
        switch state {
        case .idle, .readingHead, .readingBody:
            state = .closingAfterFlush
            return .sendError(error.status, detail: error.reason)
        default:
            return .none
        }
    }

    /// The handler answered. `handlerWantsClose`: the response carried `Connection: close`.
    mutating func responseReady(handlerWantsClose: Bool) -> Action {
        guard case .processing(var exchange) = state else { return .none }
        exchange.keepAlive = exchange.keepAlive && !handlerWantsClose && !isDraining
        state = exchange.keepAlive ? .idle : .closingAfterFlush
        return .writeResponse(exchange)
    }

    /// The handler started a streamed response.
    mutating func streamStarted(handlerWantsClose: Bool) -> Action {
        guard case .processing(var exchange) = state else { return .none }
        // HTTP/1.0 has no chunked coding: the body ends when the connection does.
        exchange.keepAlive =
            exchange.keepAlive && !handlerWantsClose && !isDraining && exchange.version != .http1_0
        state = .streaming(exchange)
        return .writeStreamHead(exchange)
    }

    /// The handler finished its stream.
    mutating func streamFinished() -> Action {
        guard case .streaming(var exchange) = state else { return .none }
        exchange.keepAlive = exchange.keepAlive && !isDraining
        state = exchange.keepAlive ? .idle : .closingAfterFlush
        return .writeStreamEnd(exchange)
    }

    /// A response went into the output buffer with keep-alive; what next
    /// depends on whether the client already sent more.
    mutating func nextRequest(hasBufferedBytes: Bool) -> Action {
        guard case .idle = state else { return .none }
        if hasBufferedBytes {
            state = .readingHead
            return .armTimer(.head)
        }
        if isDraining {
            state = .closingAfterFlush
            return .none
        }
        return .armTimer(.keepAlive)
    }

    /// All queued output reached the socket.
    mutating func outputFlushed() -> Action {
        guard case .closingAfterFlush = state else { return .none }
        state = .lingering
        return .linger
    }

    /// The client closed its sending side (read returned 0, or EPOLLRDHUP).
    mutating func inputClosed() -> Action {
        switch state {
        case .idle, .readingHead, .readingBody, .lingering:
            state = .closed
            return .close
        case .processing, .streaming:
            state = .closed
            return .cancelAndClose
        case .closingAfterFlush:
            // The client may still read what we owe it; close after the flush.
            return .none
        case .closed:
            return .none
        }
    }

    /// The connection's timer fired.
    mutating func timedOut() -> Action {
        switch state {
        case .idle, .lingering:
            state = .closed
            return .close
        case .readingHead:
            state = .closingAfterFlush
            return .sendError(.requestTimeout, detail: "The request head was not received in time.")
        case .readingBody:
            state = .closingAfterFlush
            return .sendError(.requestTimeout, detail: "The request body stopped arriving.")
        case .processing, .streaming, .closingAfterFlush, .closed:
            return .none
        }
    }

    /// The server began a graceful shutdown.
    mutating func shutdownRequested() -> Action {
        isDraining = true
        switch state {
        case .idle:
            state = .closed
            return .close
        default:
            // In-flight requests finish (and their responses close the connection).
            return .none
        }
    }

    /// The socket failed (a write error, or the drain deadline passed).
    mutating func errorCaught() -> Action {
        let outstanding = hasOutstandingRequest
        state = .closed
        return outstanding ? .cancelAndClose : .close
    }
}
