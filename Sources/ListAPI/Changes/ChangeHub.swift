import Dispatch
import HTTP
import JSON
import ListStore
import ReactiveCore
import Server
import Synchronization

/// Holds parked long-polls and answers them: when their list commits, when
/// they time out, when their client goes away (silently dropped), or when the
/// server shuts down. Waiting costs no thread: a parked request is an entry in
/// a table and a responder the HTTP server keeps.
///
/// The hub subscribes to a list's commits (through ``CommitRouter``) while
/// anyone waits for that list, so a commit wakes only its own list's waiters,
/// and every group of waiters that asked the same question shares one answer
/// from ``ChangeComputer``, serialized once.
final class ChangeHub: Sendable {
    /// What a parked request waits for.
    enum Watch: Sendable {
        /// `GET /lists/{list}/changes`: one list.
        case one(Identifier)
        /// `POST /changes`: several lists, answered as an object keyed by list id.
        case many([Identifier: Int64])
    }

    /// What the hub keeps of a parked request.
    ///
    /// Why a class: one commit moves thousands of these from the waiter table
    /// to the answering task (on the store's writer thread, under the hub's
    /// lock), and copying a struct of a request context and two dictionaries
    /// retains and releases each of their parts; a reference is one retain.
    final class Parked: Sendable {
        let responder: Responder.Finishing
        let watch: Watch
        let pretty: Bool
        let since: [Identifier: Int64]
        let epochs: [Identifier: String]
        /// `maxChanges`: the waiter prefers a reset to a change naming more sections and items.
        let maxChanges: Int?

        init(
            responder: Responder.Finishing, watch: Watch, pretty: Bool, since: [Identifier: Int64],
            epochs: [Identifier: String], maxChanges: Int? = nil
        ) {
            self.responder = responder
            self.watch = watch
            self.pretty = pretty
            self.since = since
            self.epochs = epochs
            self.maxChanges = maxChanges
        }
    }

    /// The result of asking to park.
    enum ParkResult: Sendable {
        /// Parked; the hub will answer.
        case parked
        /// Some watched list moved on before the request could park: answer now.
        case changed
        /// The server is shutting down: answer now with "no change".
        case shuttingDown
    }

    private struct State {
        var table = WaiterTable<Parked>()
        var subscriptions: [Identifier: any Disposable] = [:]
        var shuttingDown = false
    }

    private let router: CommitRouter
    private let computer: ChangeComputer
    private let metrics: ServiceMetrics
    private let state = Mutex(State())
    private let tick: Duration
    private let origin = ContinuousClock.now
    private let queue = DispatchQueue(label: "listd.change-hub.timeouts")

    init(router: CommitRouter, computer: ChangeComputer, metrics: ServiceMetrics, tick: Duration = .milliseconds(100)) {
        self.router = router
        self.computer = computer
        self.metrics = metrics
        self.tick = tick
        scheduleExpiry()
    }

    /// One timer for all waiters: every tick, expire the due ones. The chain
    /// ends when the hub is shut down or released.
    private func scheduleExpiry() {
        let nanoseconds = max(1_000_000, Int(tick / .nanoseconds(1)))
        queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in
            guard let self, !self.state.withLock({ $0.shuttingDown }) else { return }
            self.expireDue()
            self.scheduleExpiry()
        }
    }

    /// How many requests are parked.
    var parkedCount: Int { state.withLock { $0.table.count } }

    /// Parks `responder` until one of `since`'s lists passes its version, or `timeout` passes.
    ///
    /// Checked under the hub's lock against the router's heads after
    /// subscribing, so no commit can slip between the caller's check and the park.
    func park(
        _ watch: Watch, since: [Identifier: Int64], epochs: [Identifier: String], timeout: Duration,
        pretty: Bool, maxChanges: Int? = nil, responder: Responder.Finishing
    ) -> ParkResult {
        let deadline = self.deadline(after: timeout)
        let parked = Parked(
            responder: responder, watch: watch, pretty: pretty, since: since, epochs: epochs, maxChanges: maxChanges)
        let result: (ParkResult, UInt64?) = state.withLock { state in
            if state.shuttingDown { return (.shuttingDown, nil) }
            for list in since.keys where state.subscriptions[list] == nil {
                state.subscriptions[list] = router.commits(of: list).subscribe(onNext: { [weak self] commit in
                    self?.committed(commit)
                })
            }
            for (list, version) in since {
                guard let head = router.head(of: list) else { continue }
                if head.version != version || (epochs[list].map { $0 != head.epoch } ?? false) {
                    unsubscribeUnwatched(since.keys, in: &state)
                    return (.changed, nil)
                }
            }
            let id = state.table.park(
                watches: Dictionary(uniqueKeysWithValues: since.map { ($0.key.rawValue, $0.value) }),
                deadline: deadline, payload: parked)
            return (.parked, id)
        }
        if let id = result.1 {
            // Registered outside the lock: onCancel runs the body at once if the
            // client is already gone, and the body takes the lock.
            responder.onCancel { [weak self] in self?.cancel(id) }
        }
        return result.0
    }

    /// Answers every parked request with "no change" and refuses new parks,
    /// so clients reconnect (to another instance) at once.
    func shutdown() {
        let (waiters, subscriptions) = state.withLock { state in
            state.shuttingDown = true
            let subscriptions = Array(state.subscriptions.values)
            state.subscriptions = [:]
            return (state.table.removeAll(), subscriptions)
        }
        for subscription in subscriptions { subscription.dispose() }
        for waiter in waiters { answerUnchanged(waiter.payload) }
    }

    // MARK: - Events

    private func committed(_ commit: Commit) {
        let groups: [(since: Int64, waiters: [WaiterTable<Parked>.Waiter])] = state.withLock { state in
            let groups: [(since: Int64, waiters: [WaiterTable<Parked>.Waiter])]
            if commit.deleted {
                let all = state.table.removeAll(watching: commit.list.rawValue)
                groups = all.isEmpty ? [] : [(since: Int64(-1), waiters: all)]
            } else {
                groups = state.table.wake(list: commit.list.rawValue, version: commit.version)
            }
            unsubscribeUnwatched([commit.list], in: &state)
            return groups
        }
        for group in groups {
            if commit.deleted {
                for waiter in group.waiters { answerDeleted(commit.list, waiter.payload) }
            } else {
                let recorded = commit.change.flatMap { $0.from == group.since && $0.to == commit.version ? $0 : nil }
                answer(group.waiters, woken: commit.list, since: group.since, recorded: recorded)
            }
        }
    }

    private func cancel(_ id: UInt64) {
        state.withLock { state in
            guard let waiter = state.table.remove(id) else { return }
            unsubscribeUnwatched(waiter.payload.since.keys, in: &state)
        }
    }

    private func expireDue() {
        let now = currentTick()
        let expired = state.withLock { state in
            let expired = state.table.expire(through: now)
            for waiter in expired { unsubscribeUnwatched(waiter.payload.since.keys, in: &state) }
            return expired
        }
        for waiter in expired { answerUnchanged(waiter.payload) }
    }

    private func unsubscribeUnwatched(_ lists: some Sequence<Identifier>, in state: inout State) {
        for list in lists where !state.table.isWatched(list.rawValue) {
            state.subscriptions.removeValue(forKey: list)?.dispose()
        }
    }

    // MARK: - Answers

    /// Answers waiters woken by a commit of `list`. Waiters of one list share
    /// one computed answer; a multi-list waiter also gets every other list of
    /// its own that has moved on.
    private func answer(
        _ waiters: [WaiterTable<Parked>.Waiter], woken list: Identifier, since: Int64, recorded: NetChange? = nil
    ) {
        Task {
            let question = ChangeComputer.Question(list: list, from: since, epoch: nil)
            let shared: Result<ChangeAnswer, StoreError>
            if let recorded {
                // The commit carries its own change: no store round trip.
                shared = .success(computer.recorded(recorded))
            } else {
                do throws(StoreError) {
                    shared = .success(try await computer.answer(question))
                } catch {
                    shared = .failure(error)
                }
            }
            var compactBody: [UInt8]?
            for entry in waiters {
                let waiter = entry.payload
                switch (waiter.watch, shared) {
                case (.one, .success(let answer)) where !answer.reset && answer.changeCount > (waiter.maxChanges ?? .max):
                    // This waiter would rather have the snapshot than so large a change.
                    do throws(StoreError) {
                        let reset = try await computer.answer(
                            ChangeComputer.Question(list: list, from: since, epoch: nil, maxChanges: waiter.maxChanges))
                        metrics.served(reset)
                        respond(waiter, json: reset.json, compact: nil)
                    } catch {
                        waiter.responder.respond(Problem(error).response())
                    }
                case (.one, .success(let answer)):
                    if compactBody == nil { compactBody = answer.json + [UInt8(ascii: "\n")] }
                    metrics.served(answer)
                    respond(waiter, json: answer.json, compact: compactBody)
                case (.one, .failure(let error)):
                    waiter.responder.respond(Problem(error).response())
                case (.many, _):
                    await answerMany(waiter)
                }
            }
        }
    }

    /// Answers a `POST /changes` waiter with every watched list that moved on.
    func answerMany(_ waiter: Parked) async {
        var answers: [ChangeAnswer] = []
        var deleted: [Identifier] = []
        for (list, since) in waiter.since.sorted(by: { $0.key < $1.key }) {
            guard let head = router.head(of: list) else {
                deleted.append(list)
                continue
            }
            guard head.version != since || (waiter.epochs[list].map { $0 != head.epoch } ?? false) else { continue }
            do {
                let question = ChangeComputer.Question(
                    list: list, from: since, epoch: waiter.epochs[list], maxChanges: waiter.maxChanges)
                answers.append(try await computer.answer(question))
            } catch where error.kind == .listNotFound {
                deleted.append(list)
            } catch {
                waiter.responder.respond(Problem(error).response())
                return
            }
        }
        for answer in answers { metrics.served(answer) }
        respond(waiter, json: Self.manyBody(answers, deleted: deleted), compact: nil)
    }

    /// `{"lists": {"a": {answer}, "b": {"list": "b", "deleted": true}}}`
    static func manyBody(_ answers: [ChangeAnswer], deleted: [Identifier]) -> [UInt8] {
        var writer = JSONWriter(capacity: answers.reduce(32) { $0 + $1.json.count + 16 })
        writer.beginObject()
        writer.key("lists")
        writer.beginObject()
        for answer in answers {
            writer.key(answer.list.rawValue)
            writer.raw(answer.json)
        }
        for list in deleted {
            writer.key(list.rawValue)
            writer.beginObject()
            writer.key("list")
            writer.string(list.rawValue)
            writer.key("deleted")
            writer.bool(true)
            writer.endObject()
        }
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }

    private func answerUnchanged(_ waiter: Parked) {
        switch waiter.watch {
        case .one(let list):
            let since = waiter.since[list] ?? 0
            let head = ListHead(id: list, epoch: waiter.epochs[list] ?? router.head(of: list)?.epoch ?? "", version: since)
            respond(waiter, json: ChangeAnswer.unchanged(head, from: since).json, compact: nil)
        case .many:
            respond(waiter, json: Self.manyBody([], deleted: []), compact: nil)
        }
    }

    private func answerDeleted(_ list: Identifier, _ waiter: Parked) {
        switch waiter.watch {
        case .one:
            waiter.responder.respond(
                Problem(StoreError(.listNotFound, "list \"\(list)\" was deleted while this request waited")).response())
        case .many:
            Task { await answerMany(waiter) }
        }
    }

    /// The header fields of every change answer, built once rather than per waiter.
    private static let answerHeaders: HTTPHeaders = {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Cache-Control", value: "no-store")
        return headers
    }()

    private func respond(_ waiter: Parked, json: [UInt8], compact: [UInt8]?) {
        let headers = Self.answerHeaders
        let body: [UInt8]
        if waiter.pretty {
            body = prettyPrinted(json) + [UInt8(ascii: "\n")]
        } else {
            body = compact ?? (json + [UInt8(ascii: "\n")])
        }
        waiter.responder.respond(Response(status: .ok, headers: headers, body: body))
    }

    // MARK: - Time

    private func currentTick() -> UInt64 {
        UInt64((ContinuousClock.now - origin) / tick)
    }

    private func deadline(after timeout: Duration) -> UInt64 {
        let ticks = (ContinuousClock.now - origin + timeout) / tick
        return UInt64(ticks.rounded(.up))
    }
}
