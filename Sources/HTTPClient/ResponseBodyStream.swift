import Glibc
import POSIXIO
import Synchronization

/// The body of a streamed answer (``KeepAliveClient/stream(_:)``), piece by
/// piece as the event loop reads it: a server-sent event stream, say, that
/// never ends by itself.
///
/// The loop's thread pushes what it frames (chunked coding removed); one task
/// takes it with ``next()``. Pieces not taken yet are kept in order, without
/// bound. The stream ends when the body does (`nil`), when the connection
/// fails or stays silent longer than the request's `timeout` (a `SystemError`,
/// ETIMEDOUT for the silence), or at ``cancel()`` or the cancellation of the
/// task in ``next()``, which close the connection (it is never reused).
public final class ResponseBodyStream: Sendable {
    private struct State {
        var pieces: [[UInt8]] = []
        var head = 0
        /// `nil` while the body runs; then `.success` at its end, or the failure.
        var end: Result<Void, SystemError>?
        var waiter: UnsafeContinuation<Result<[UInt8]?, SystemError>, Never>?
        var closeConnection: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())

    init() {}

    /// The next piece of the body; `nil` once it ended (or was cancelled).
    /// Throws the connection's failure (ETIMEDOUT after a silence longer than the request's timeout).
    public func next() async throws(SystemError) -> [UInt8]? {
        let result = await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<[UInt8]?, SystemError>, Never>) in
                let ready = state.withLock { state -> Result<[UInt8]?, SystemError>? in
                    if state.head < state.pieces.count {
                        let piece = state.pieces[state.head]
                        state.head += 1
                        if state.head == state.pieces.count {
                            state.pieces.removeAll(keepingCapacity: true)
                            state.head = 0
                        }
                        return .success(piece)
                    }
                    if let end = state.end { return end.map { nil } }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            self.cancel()
        }
        return try result.get()
    }

    /// Ends the stream (``next()`` gives `nil`) and closes its connection.
    public func cancel() {
        finish(nil)
        let close = state.withLock { state in
            defer { state.closeConnection = nil }
            return state.closeConnection
        }
        close?()
    }

    /// Whether the stream has ended (body complete, failed or cancelled).
    public var isFinished: Bool { state.withLock { $0.end != nil } }

    /// How the stream closes its connection at ``cancel()``; at once when it already ended.
    func attach(close: @escaping @Sendable () -> Void) {
        let ended = state.withLock { state in
            if state.end != nil { return true }
            state.closeConnection = close
            return false
        }
        if ended { close() }
    }

    /// The loop framed more of the body.
    func push(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        let waiter = state.withLock { state -> UnsafeContinuation<Result<[UInt8]?, SystemError>, Never>? in
            guard state.end == nil else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.pieces.append(bytes)
            return nil
        }
        waiter?.resume(returning: .success(bytes))
    }

    /// The body ended (`nil`) or failed with `error`; pieces already pushed are still taken first.
    func finish(_ error: SystemError?) {
        let waiter = state.withLock { state -> UnsafeContinuation<Result<[UInt8]?, SystemError>, Never>? in
            guard state.end == nil else { return nil }
            state.end = error.map { .failure($0) } ?? .success(())
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: error.map { .failure($0) } ?? .success(nil))
    }
}
