import JSON
import ListModel
import ListWire
import ReactiveCore
import Synchronization

/// A followed list that shows local writes at once (issue 24's optimistic apply).
///
/// ```swift
/// let follow = OptimisticFollow(client: client, list: "groceries", outbox: outbox)
/// Task { for await update in follow.updates() { render(update.update, pending: update.pending) } }
/// try follow.apply([.insertItem(section: "fruit", id: "pears", model: ["qty": 2])])
/// ```
///
/// - ``apply(_:ifMatch:)`` shows the write in ``state`` before it returns, as one
///   `.changes` update (the same ``FollowUpdate`` a plain follow emits), its
///   sections and items in ``pending``; then sends it as one `PATCH /lists/{list}`
///   with its own `Idempotency-Key`: through the ``WriteOutbox`` when there is one
///   (queued in its file, sent in order, after a restart too), else through
///   ``ListClient/perform(_:key:)`` (retried under ``ListClient/retryPolicy``), one
///   write after the other, in order.
/// - When the follow brings the server's change that contains the write, what shows
///   is recomputed: the server's state with the writes still pending replayed over
///   it. A write the server applied as sent changes nothing there, so its
///   confirmation is an update with no stages (``OptimisticUpdate/update`` is `nil`):
///   only ``pending`` changes. Someone else's change while writes are pending is one
///   update with the difference: their change, with the pending writes kept over it.
/// - A write the server refuses (a 4xx problem, a 500; or, without an outbox, one
///   whose retries gave up) is undone in one update whose cause carries the
///   server's problem.
///
/// With a view (`view:`), the whole list is followed and the view computed from
/// it on the client (ListView's evaluator: filter, order, groups, window), so a
/// local write lands where the server's view will put it, items entering and
/// leaving the view or its window included; updates are in the view's positions.
/// This costs the whole list's snapshot and changes, and an evaluation of the
/// view per update (O(n log n)), where ``ListClient/follow(list:view:options:)``
/// receives only the view.
public final class OptimisticFollow: Sendable {
    /// The list followed.
    public let list: String
    /// The view of it shown: `ViewSpec.wholeList` for the whole list.
    public let view: ViewSpec
    /// The client the follow and the writes go through.
    public let client: ListClient
    /// The outbox writes are queued in, if any.
    public let outbox: WriteOutbox?

    private struct Core {
        var model: OptimisticList
        var observers: [UInt64: AsyncStream<OptimisticUpdate>.Continuation] = [:]
        var nextObserver: UInt64 = 0
        var finished = false
        var failure: ListClientError?
        /// The writes a caller of ``write(_:ifMatch:)`` waits for.
        var awaited: Set<String> = []
        /// Callers of ``write(_:ifMatch:)`` waiting for their write's outcome.
        var waiters: [String: CheckedContinuation<Result<JSONValue, ListClientError>, Never>] = [:]
        /// Outcomes of awaited writes that came before their caller waited.
        var outcomes: [String: Result<JSONValue, ListClientError>] = [:]
        /// The last send: each write waits for the one before it.
        var lastSend: Task<Void, Never>?

        mutating func publish(_ update: OptimisticUpdate?) {
            guard let update else { return }
            for continuation in observers.values { continuation.yield(update) }
        }
    }

    private let core: Mutex<Core>
    private let subscription = Mutex<(any Disposable)?>(nil)
    private let outcomeTask = Mutex<Task<Void, Never>?>(nil)

    /// Starts following `list` (``ListClient/follow(list:options:)``), shown
    /// through `view`. With an `outbox`, writes are queued in it, and the writes it
    /// still holds for this list (from before a restart) show as pending once the
    /// snapshot is in.
    public init(
        client: ListClient, list: String, view: ViewSpec = .wholeList, outbox: WriteOutbox? = nil,
        options: FollowOptions = FollowOptions()
    ) {
        self.list = list
        self.view = view
        self.client = client
        self.outbox = outbox
        core = Mutex(Core(model: OptimisticList(list: list, view: view)))
        if let outbox {
            // Subscribed before any write is queued, so no outcome is missed.
            let outcomes = outbox.outcomes()
            let queued = outbox.pendingWrites.writes.compactMap { write -> (String, [ListOperation])? in
                guard let operations = Self.operations(of: write.request, list: list) else { return nil }
                return (write.key, operations)
            }
            core.withLock { $0.model.restore(queued) }
            outcomeTask.withLock { task in
                task = Task { [weak self] in
                    for await outcome in outcomes {
                        guard let self else { return }
                        switch outcome {
                        case .applied(let write, let answer): self.applied(write.key, answer)
                        case .rejected(let write, let error): self.failed(write.key, error)
                        }
                    }
                }
            }
        }
        let updates = client.follow(list: list, options: options)
        let disposable = updates.subscribe { [weak self] event in
            guard let self else { return }
            switch event {
            case .next(let update):
                self.core.withLock { core in
                    let shown = core.model.receive(update)
                    core.publish(shown)
                }
            case .error(let error):
                self.finish(error as? ListClientError ?? ListClientError(kind: .transport, detail: "\(error)"))
            case .completed: self.finish(nil)
            }
        }
        subscription.withLock { $0 = disposable }
    }

    deinit { stop() }

    /// What shows now: the server's state with the pending writes over it; `nil`
    /// before the first snapshot and after the list was deleted.
    public var state: ListState? { core.withLock { $0.model.shown } }

    /// The server's state of the whole list as the follow last heard it.
    public var confirmedState: ListState? { core.withLock { $0.model.confirmed } }

    /// The writes shown but not yet confirmed, and what they name.
    public var pending: PendingChanges { core.withLock { $0.model.pending } }

    /// Why the follow ended, if it ended with an error.
    public var failure: ListClientError? { core.withLock { $0.failure } }

    /// The updates from now on, in order, starting with one that holds the current
    /// state (a `.snapshot`, or no update before the first one). The sequence ends
    /// when the follow does (``stop()``, the list deleted, an error that retrying
    /// cannot fix) or the consumer stops.
    public func updates() -> AsyncStream<OptimisticUpdate> {
        let (stream, continuation) = AsyncStream.makeStream(of: OptimisticUpdate.self, bufferingPolicy: .unbounded)
        let id = core.withLock { core -> UInt64? in
            guard !core.finished else { return nil }
            let id = core.nextObserver
            core.nextObserver += 1
            core.observers[id] = continuation
            let shown = core.model.shown
            continuation.yield(
                OptimisticUpdate(
                    cause: .server, update: shown.map { .snapshot($0) }, pending: core.model.pending, state: shown))
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.core.withLock { $0.observers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Shows `operations` at once and sends them as one `PATCH /lists/{list}`:
    /// returns the write's idempotency key once ``state`` shows it and the update
    /// is emitted. A section or item inserted without an id gets one here, so the
    /// server's echo is known as the same element.
    ///
    /// The updates say when the write is confirmed or rolled back (their
    /// ``OptimisticUpdate/cause``); ``write(_:ifMatch:)`` also waits for the answer.
    /// - Throws: `.invalidRequest` before the first snapshot (there is nothing to show it in).
    @discardableResult
    public func apply(_ operations: [ListOperation], ifMatch: Int64? = nil) throws(ListClientError) -> String {
        try apply(operations, ifMatch: ifMatch, awaited: false)
    }

    /// ``apply(_:ifMatch:)``, then waits for the server's answer: its change (as
    /// JSON), or the problem that refused it (the write is rolled back by then).
    /// Returns as soon as the answer is in; the write may show as pending a little
    /// longer, until the follow brings the server's change that holds it.
    @discardableResult
    public func write(_ operations: [ListOperation], ifMatch: Int64? = nil) async throws(ListClientError) -> JSONValue {
        let key = try apply(operations, ifMatch: ifMatch, awaited: true)
        let outcome: Result<JSONValue, ListClientError> = await withCheckedContinuation { continuation in
            core.withLock { core in
                if let outcome = core.outcomes.removeValue(forKey: key) {
                    continuation.resume(returning: outcome)
                } else if core.finished {
                    continuation.resume(returning: .failure(Self.stopped))
                } else {
                    core.waiters[key] = continuation
                }
            }
        }
        return try outcome.get()
    }

    private static let stopped = ListClientError(kind: .cancelled, detail: "the follow was stopped")

    private func apply(_ operations: [ListOperation], ifMatch: Int64?, awaited: Bool) throws(ListClientError)
        -> String
    {
        let operations = operations.map { $0.withIDs() }
        let key = IdempotencyKey.make()
        let request = WriteRequest.patchList(list, operations, ifMatch: ifMatch)
        try core.withLock { core throws(ListClientError) in
            let update = try core.model.write(operations, key: key)
            core.publish(update)
            if awaited { core.awaited.insert(key) }
            let previous = core.lastSend
            core.lastSend = Task { [weak self] in
                // One write after the other, in the order they were shown.
                await previous?.value
                await self?.send(request, key: key)
            }
        }
        return key
    }

    /// Sends a write shown by ``apply(_:ifMatch:)``: queued in the outbox (whose
    /// outcomes come back through the task reading them), or performed here.
    private func send(_ request: WriteRequest, key: String) async {
        do throws(ListClientError) {
            if let outbox {
                try await outbox.enqueue(request, key: key)
            } else {
                applied(key, try await client.perform(request, key: key))
            }
        } catch {
            failed(key, error)
        }
    }

    /// Stops following and sending; the updates end. Writes in an outbox stay in it.
    public func stop() {
        subscription.withLock { $0 }?.dispose()
        outcomeTask.withLock { $0 }?.cancel()
        finish(nil)
    }

    // MARK: - Outcomes

    private func applied(_ key: String, _ answer: JSONValue) {
        let version = answer["to"]?.int64Value ?? answer["version"]?.int64Value
        settle(key, .success(answer)) { $0.applied(key: key, version: version) }
    }

    private func failed(_ key: String, _ error: ListClientError) {
        settle(key, .failure(error)) { $0.failed(key: key, error: error) }
    }

    private func settle(
        _ key: String, _ outcome: Result<JSONValue, ListClientError>,
        _ change: (inout OptimisticList) -> OptimisticUpdate?
    ) {
        let waiter = core.withLock { core -> CheckedContinuation<Result<JSONValue, ListClientError>, Never>? in
            guard core.model.writes.contains(where: { $0.key == key }) else { return nil }
            let update = change(&core.model)
            core.publish(update)
            guard core.awaited.remove(key) != nil else { return nil }
            guard let waiting = core.waiters.removeValue(forKey: key) else {
                core.outcomes[key] = outcome
                return nil
            }
            return waiting
        }
        waiter?.resume(returning: outcome)
    }

    private func finish(_ error: ListClientError?) {
        let ended = core.withLock {
            core -> (
                observers: [AsyncStream<OptimisticUpdate>.Continuation],
                waiters: [CheckedContinuation<Result<JSONValue, ListClientError>, Never>]
            ) in
            guard !core.finished else { return ([], []) }
            core.finished = true
            core.failure = error
            defer {
                core.observers = [:]
                core.waiters = [:]
            }
            return (Array(core.observers.values), Array(core.waiters.values))
        }
        // Outside the lock: finishing runs each stream's onTermination, which takes it.
        for continuation in ended.observers { continuation.finish() }
        for waiter in ended.waiters { waiter.resume(returning: .failure(error ?? Self.stopped)) }
    }

    /// The operations of `request` when it is a `PATCH` of `list`.
    static func operations(of request: WriteRequest, list: String) -> [ListOperation]? {
        guard request.method == "PATCH", request.path == ["lists", list], let body = request.body,
            let value = try? JSONValue(parsing: body, limits: ListClient.answerLimits)
        else { return nil }
        return try? ListOperation.batch(value)
    }
}
