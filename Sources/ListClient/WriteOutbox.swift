import Foundation
import JSON
import Synchronization

/// A write queued in a ``WriteOutbox``: its place in the queue, its idempotency
/// key and its bytes.
public struct PendingWrite: Sendable, Equatable, Identifiable {
    /// Its place in the outbox: ids grow in the order writes were queued, across
    /// restarts too. An id is unique among the writes queued at one time; once a
    /// write has left the queue, a write queued after a restart may get its id.
    public var id: UInt64
    /// The `Idempotency-Key` every send of it carries, after a restart too.
    public var key: String
    /// What is sent.
    public var request: WriteRequest

    /// Creates a pending write.
    public init(id: UInt64, key: String, request: WriteRequest) {
        self.id = id
        self.key = key
        self.request = request
    }
}

/// What a ``WriteOutbox`` still has to send, in order: what an app shows as "saving…".
public struct PendingWrites: Sendable, Equatable {
    /// The writes not yet answered, oldest first.
    public var writes: [PendingWrite]
    /// Their ids, oldest first.
    public var ids: [UInt64] { writes.map(\.id) }
    /// How many there are.
    public var count: Int { writes.count }
    /// Whether every queued write was answered.
    public var isEmpty: Bool { writes.isEmpty }
}

/// How a queued write left a ``WriteOutbox``.
public enum WriteOutcome: Sendable, Equatable {
    /// The server applied it (or had applied it before a lost answer or a restart):
    /// its answer, `null` for 204, or `null` when the server has the effect but no
    /// longer its answer (409 `idempotency-answer-missing`).
    case applied(PendingWrite, answer: JSONValue)
    /// The server refused it (a 4xx, or a 500): nothing was applied; the queue went on.
    case rejected(PendingWrite, ListClientError)
}

/// Writes that survive the network and the app: queued in order in a file the app
/// names, sent in order, each with its own `Idempotency-Key`, so each is applied
/// exactly once even when answers are lost, the device is offline for hours or
/// the process is killed.
///
/// ```swift
/// let outbox = try await WriteOutbox(file: documents.appending(path: "outbox.jsonl"), client: client)
/// let write = try await outbox.enqueue(.createItem(inSection: "fruit", of: "groceries", ["model": ["title": "Pears"]]))
/// for await pending in outbox.pendingUpdates() { savingLabel.isHidden = pending.isEmpty }
/// ```
///
/// - ``enqueue(_:key:)`` returns once the write is in the file (fsynced): from then on
///   it is sent, after a restart too.
/// - One write is in flight at a time, oldest first, through the client's
///   ``ListClient/perform(_:key:)`` (retried under its ``ListClient/retryPolicy``).
///   When that gives up (offline, server down) the write stays at the head and
///   is tried again after a back-off (``retryNow()`` skips the wait, say when the
///   device is back online); the writes behind it wait, so order is kept.
/// - A refused write (a 4xx other than 408 and 429, or a 500) leaves the queue
///   and is reported as ``WriteOutcome/rejected(_:_:)``; the queue goes on.
/// - Opening an outbox over the file of an earlier one (after a crash or kill)
///   sends what it had not finished with the same keys: the server answers a
///   write it had applied from its record (kept at least 24 hours) instead of
///   applying it again.
///
/// Open one outbox per file at a time. It drains until ``close()``.
public final class WriteOutbox: Sendable {
    /// The client writes are sent with.
    public let client: ListClient
    /// The outbox's file.
    public var file: URL { journal.file }

    private let journal: OutboxJournal
    private let state: Mutex<State>
    private let wakeup = Wakeup()
    private let drainer = Mutex<Task<Void, Never>?>(nil)
    private let minimumBackoff: Duration
    private let maximumBackoff: Duration

    private struct State {
        var pending: [PendingWrite]
        var nextID: UInt64
        /// Writes handed to the journal whose line is not yet in the file.
        var appending = 0
        var closed = false
        var pendingObservers: [UInt64: AsyncStream<PendingWrites>.Continuation] = [:]
        var outcomeObservers: [UInt64: AsyncStream<WriteOutcome>.Continuation] = [:]
        var nextObserver: UInt64 = 0

        /// Tells every observer of the pending writes. Yielding under the lock keeps
        /// the observers' order the state's; `yield` runs no user code.
        func publish() {
            let snapshot = PendingWrites(writes: pending)
            for continuation in pendingObservers.values { continuation.yield(snapshot) }
        }
    }

    /// Opens the outbox in `file` (created when missing) and starts sending what it holds.
    ///
    /// - Parameters:
    ///   - file: where the queue is kept; the app's own (its documents or
    ///     application-support folder), one per outbox.
    ///   - client: sends the writes.
    ///   - draining: `false` to queue without sending until ``startDraining()``.
    ///   - minimumBackoff: the first wait before the head write is tried again after the client gave up.
    ///   - maximumBackoff: the longest such wait.
    /// - Throws: ``ListClientError`` of kind `.outbox` when the file cannot be read or written.
    public init(
        file: URL, client: ListClient, draining: Bool = true, minimumBackoff: Duration = .milliseconds(500),
        maximumBackoff: Duration = .seconds(30)
    ) async throws(ListClientError) {
        let (journal, pending) = try await OutboxJournal.open(file)
        self.journal = journal
        self.client = client
        self.minimumBackoff = minimumBackoff
        self.maximumBackoff = maximumBackoff
        state = Mutex(State(pending: pending, nextID: (pending.last?.id ?? 0) + 1))
        if draining { startDraining() }
    }

    deinit { journal.close() }

    /// Queues `request` behind the writes already queued, with the idempotency key
    /// `key` (a new one for `nil`; ``OptimisticFollow`` passes the key of the write it
    /// shows), and returns once it is in the file.
    @discardableResult
    public func enqueue(_ request: WriteRequest, key: String? = nil) async throws(ListClientError) -> PendingWrite {
        let result: Result<PendingWrite, ListClientError> = await withCheckedContinuation { continuation in
            state.withLock { state in
                guard !state.closed else {
                    continuation.resume(
                        returning: .failure(ListClientError(kind: .outbox, detail: "the outbox is closed")))
                    return
                }
                let write = PendingWrite(id: state.nextID, key: key ?? IdempotencyKey.make(), request: request)
                state.nextID += 1
                state.appending += 1
                // Handed to the journal under the lock, so the file's order is the ids' order.
                journal.append(write) { [self] error in
                    self.state.withLock { state in
                        state.appending -= 1
                        if error == nil {
                            state.pending.append(write)
                            state.publish()
                        }
                    }
                    if error == nil { self.wakeup.signal() }
                    continuation.resume(returning: error.map { .failure($0) } ?? .success(write))
                }
            }
        }
        return try result.get()
    }

    /// The writes not yet answered, oldest first.
    public var pendingWrites: PendingWrites { state.withLock { PendingWrites(writes: $0.pending) } }

    /// The pending writes now, then after every change (a write queued, a write answered).
    /// The sequence ends when the outbox closes or the consumer stops.
    public func pendingUpdates() -> AsyncStream<PendingWrites> {
        let (stream, continuation) = AsyncStream.makeStream(of: PendingWrites.self, bufferingPolicy: .unbounded)
        let id = state.withLock { state -> UInt64? in
            guard !state.closed else { return nil }
            let id = state.nextObserver
            state.nextObserver += 1
            state.pendingObservers[id] = continuation
            continuation.yield(PendingWrites(writes: state.pending))
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.pendingObservers.removeValue(forKey: id) }
        }
        return stream
    }

    /// How each write leaves the outbox from now on, in queue order.
    public func outcomes() -> AsyncStream<WriteOutcome> {
        let (stream, continuation) = AsyncStream.makeStream(of: WriteOutcome.self, bufferingPolicy: .unbounded)
        let id = state.withLock { state -> UInt64? in
            guard !state.closed else { return nil }
            let id = state.nextObserver
            state.nextObserver += 1
            state.outcomeObservers[id] = continuation
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.outcomeObservers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Starts sending (for an outbox opened with `draining: false`); does nothing when it already does.
    public func startDraining() {
        drainer.withLock { task in
            guard task == nil else { return }
            task = Task { [self] in await drain() }
        }
    }

    /// Tries the head write again now instead of at the end of its back-off
    /// (call it when the device comes back online).
    public func retryNow() { wakeup.signal() }

    /// Stops sending and ends the observers' sequences. A write in flight is
    /// abandoned: it stays queued in the file and goes again, with its key, when
    /// the file is next opened.
    public func close() async {
        let task = drainer.withLock { $0 }
        let (pending, outcomes) = state.withLock { state in
            state.closed = true
            defer {
                state.pendingObservers = [:]
                state.outcomeObservers = [:]
            }
            return (Array(state.pendingObservers.values), Array(state.outcomeObservers.values))
        }
        // Outside the lock: finishing runs each stream's onTermination, which takes it.
        for continuation in pending { continuation.finish() }
        for continuation in outcomes { continuation.finish() }
        task?.cancel()
        await task?.value
        journal.close()
    }

    // MARK: - Draining

    private func drain() async {
        var backoff = Backoff(minimum: minimumBackoff, maximum: maximumBackoff)
        while !Task.isCancelled {
            guard let head = state.withLock({ $0.pending.first }) else {
                await wakeup.wait(timeout: nil)
                continue
            }
            let outcome: WriteOutcome
            do {
                let response = try await client.send(head.request, key: head.key)
                if let decided = Self.outcome(of: response, head) {
                    outcome = decided
                } else {
                    await wakeup.wait(timeout: backoff.next())
                    continue
                }
            } catch {
                if error.kind == .cancelled { return }
                if RetryPolicy.isRetryable(error) {
                    await wakeup.wait(timeout: backoff.next())
                    continue
                }
                outcome = .rejected(head, error)
            }
            backoff.reset()
            finish(head, outcome)
        }
    }

    /// What `response` to `write` means: an outcome, or `nil` to send it again later.
    static func outcome(of response: ClientResponse, _ write: PendingWrite) -> WriteOutcome? {
        if response.status < 400 {
            do throws(ListClientError) {
                return .applied(write, answer: try ListClient.decode(response))
            } catch {
                // Applied all the same: the status says so; the body is the server's problem.
                return .applied(write, answer: .null)
            }
        }
        let error = ListClientError.problem(response)
        if ListClient.retryableStatuses.contains(response.status) || response.status == 408 || response.status == 429 {
            return nil
        }
        if response.status == 409 && error.slug == "idempotency-answer-missing" {
            return .applied(write, answer: .null)
        }
        return .rejected(write, error)
    }

    private func finish(_ write: PendingWrite, _ outcome: WriteOutcome) {
        state.withLock { state in
            guard state.pending.first?.id == write.id else { return }
            state.pending.removeFirst()
            journal.markDone(write.id, emptied: state.pending.isEmpty && state.appending == 0)
            for continuation in state.outcomeObservers.values { continuation.yield(outcome) }
            state.publish()
        }
    }
}

/// Wakes one waiting task: at a signal, at a timeout, or when its task is cancelled.
/// A signal with no waiter is kept for the next wait.
final class Wakeup: Sendable {
    private struct State {
        var signalled = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.signalled = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Waits for a signal, at most `timeout` (without end for `nil`).
    func wait(timeout: Duration?) async {
        let timer = timeout.map { timeout in
            Task { [self] in
                try? await Task.sleep(for: timeout)
                if !Task.isCancelled { signal() }
            }
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Bool in
                    if state.signalled || Task.isCancelled {
                        state.signalled = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            signal()
        }
        timer?.cancel()
    }
}
