import HTTP
import JSON
import ListModel
import ListStore
import ListView
import ListWire
import Server
import Synchronization

/// Turns parked requests into their HTTP answers: a commit's shared answer
/// fanned out to every waiter it woke (serialized once), "no change" at a
/// timeout or shutdown, "deleted", and the object of `POST /changes`.
///
/// The change hub decides who is answered and when; this decides what they get.
struct WaiterAnswers: Sendable {
    let router: CommitRouter
    let computer: ChangeComputer
    let metrics: ServiceMetrics
    /// Parks a view's waiter again when a commit left its view alone.
    let parker: Parker

    /// The hub, for parking waiters again (set once the hub exists; weak, as the hub holds this).
    final class Parker: Sendable {
        private struct Box { weak var hub: ChangeHub? }
        private let box = Mutex(Box())

        var hub: ChangeHub? {
            get { box.withLock { $0.hub } }
            set { box.withLock { $0.hub = newValue } }
        }

        /// Parks `waiter` again; `nil` when the hub is gone.
        func park(_ waiter: ChangeHub.Parked) -> ChangeHub.ParkResult? { hub?.park(waiter) }
    }

    /// Answers waiters woken by a commit of `list`. Waiters of one list share
    /// one computed answer; a multi-list waiter also gets every other list of
    /// its own that has moved on.
    ///
    /// With the commit's own recorded change (`recorded`, from `since` to the
    /// commit), the single-list waiters are answered here, on the caller's
    /// thread (the fan-out queue), with one serialized body shared by all:
    /// no task and no store call. Only what needs the store (no recorded
    /// change, a `maxChanges` the change exceeds, `POST /changes` waiters)
    /// goes to one task for the group.
    func woken(
        _ waiters: [WaiterTable<ChangeHub.Parked>.Waiter], list: Identifier, since: Int64, recorded: NetChange? = nil
    ) {
        guard let recorded else {
            Task { await self.answer(waiters.map(\.payload), list: list, since: since, shared: nil) }
            return
        }
        let recordedAnswer = computer.recorded(recorded)
        var compactBody: [UInt8]?
        var later: [ChangeHub.Parked] = []
        for entry in waiters {
            let waiter = entry.payload
            guard case .one = waiter.watch, waiter.views.isEmpty,
                recordedAnswer.reset || recordedAnswer.changeCount <= (waiter.maxChanges ?? .max)
            else {
                later.append(waiter)
                continue
            }
            respond(waiter, with: recordedAnswer, compact: &compactBody)
        }
        if !later.isEmpty {
            Task { await self.answer(later, list: list, since: since, shared: recordedAnswer) }
        }
    }

    /// Answers a single-list waiter with `answer`, the group's compact body
    /// serialized once into `compact` and shared by every waiter after.
    private func respond(_ waiter: ChangeHub.Parked, with answer: EncodedChangeAnswer, compact: inout [UInt8]?) {
        if compact == nil, !waiter.pretty { compact = ChangeAnswerResponse.compactBody(answer.json) }
        metrics.served(answer)
        respond(waiter, json: answer.json, compact: compact)
    }

    /// Answers `waiters` of `list` since `since` with `shared` (computed when `nil`).
    private func answer(
        _ waiters: [ChangeHub.Parked], list: Identifier, since: Int64, shared known: EncodedChangeAnswer?
    ) async {
        let shared: Result<EncodedChangeAnswer, StoreError>
        if let known {
            shared = .success(known)
        } else {
            do throws(StoreError) {
                shared = .success(
                    try await computer.answer(ChangeComputer.Question(list: list, from: since, epoch: nil)))
            } catch {
                shared = .failure(error)
            }
        }
        var compactBody: [UInt8]?
        for waiter in waiters {
            if case .one(let list) = waiter.watch, let view = waiter.views[list] {
                await answer(waiter, of: list, view: view)
                continue
            }
            switch (waiter.watch, shared) {
            case (.one, .success(let answer)) where !answer.reset && answer.changeCount > (waiter.maxChanges ?? .max):
                // This waiter would rather have the snapshot than so large a change.
                do throws(StoreError) {
                    let reset = try await computer.answer(
                        ChangeComputer.Question(list: list, from: since, epoch: nil, maxChanges: waiter.maxChanges))
                    metrics.served(reset)
                    respond(waiter, json: reset.json, compact: nil)
                } catch {
                    waiter.exchange.fail(Problem(error))
                }
            case (.one, .success(let answer)):
                respond(waiter, with: answer, compact: &compactBody)
            case (.one, .failure(let error)):
                waiter.exchange.fail(Problem(error))
            case (.many, _):
                await many(waiter)
            }
        }
    }

    /// Answers a view's waiter woken by a commit of its list: with the view's
    /// change since the version it holds, or, when the commits since left the
    /// view alone, by parking it again at the list's version (the contract: a
    /// write that leaves a view alone wakes none of its waiters).
    private func answer(_ waiter: ChangeHub.Parked, of list: Identifier, view: ViewSpec) async {
        var waiter = waiter
        while true {
            // Computed from the latest version known to have the same view as the one held.
            let since = waiter.since[list] ?? waiter.held(list)
            let held = waiter.held(list)
            let answer: EncodedChangeAnswer
            do throws(StoreError) {
                answer = try await computer.answer(
                    ChangeComputer.Question(
                        list: list, from: since, epoch: nil, maxChanges: waiter.maxChanges, view: view,
                        reportFrom: held == since ? nil : held, sameSince: waiter.sameSince[list]))
            } catch {
                return waiter.exchange.fail(Problem(error))
            }
            if answer.reset || answer.stageCount > 0 {
                metrics.served(answer)
                return respond(waiter, json: answer.json, compact: nil)
            }
            waiter = waiter.parkedAgain(since: [list: answer.to])
            switch parker.park(waiter) {
            case .parked: return
            case .changed: continue
            case .shuttingDown, nil: return unchanged(waiter)
            }
        }
    }

    /// Answers a `POST /changes` waiter with every watched list that moved on.
    ///
    /// A followed view whose answer has no stages has not moved on (its list
    /// did, elsewhere). When nothing moved on and `mayPark`, the waiter parks
    /// again, its views' lists at their new versions, rather than be answered empty.
    func many(_ waiter: ChangeHub.Parked, mayPark: Bool = true) async {
        var waiter = waiter
        while true {
            var answers: [EncodedChangeAnswer] = []
            var deleted: [Identifier] = []
            var moved = waiter.since
            for (list, since) in waiter.since.sorted(by: { $0.key < $1.key }) {
                guard let head = router.head(of: list) else {
                    deleted.append(list)
                    continue
                }
                guard head.version != since || (waiter.epochs[list].map { $0 != head.epoch } ?? false) else {
                    continue
                }
                do {
                    let held = waiter.held(list)
                    let question = ChangeComputer.Question(
                        list: list, from: since, epoch: waiter.epochs[list], maxChanges: waiter.maxChanges,
                        view: waiter.views[list], reportFrom: held == since ? nil : held)
                    let answer = try await computer.answer(question)
                    if answer.ofView, !answer.reset, answer.stageCount == 0 {
                        moved[list] = answer.to
                        continue
                    }
                    answers.append(answer)
                } catch  where error.kind == .listNotFound {
                    deleted.append(list)
                } catch {
                    waiter.exchange.fail(Problem(error))
                    return
                }
            }
            if answers.isEmpty, deleted.isEmpty, mayPark {
                waiter = waiter.parkedAgain(since: moved)
                switch parker.park(waiter) {
                case .parked: return
                case .changed: continue
                case .shuttingDown, nil: break
                }
            }
            for answer in answers { metrics.served(answer) }
            return respond(waiter, json: Self.manyBody(answers, deleted: deleted), compact: nil)
        }
    }

    /// `{"lists": {"a": {answer}, "b": {"list": "b", "deleted": true}}}` (ListWire's form).
    static func manyBody(_ answers: [EncodedChangeAnswer], deleted: [Identifier]) -> [UInt8] {
        var writer = JSONWriter(capacity: answers.reduce(32) { $0 + $1.json.count + 16 })
        writer.manyListsAnswer(
            answers.lazy.map { (list: $0.list.rawValue, json: $0.json) }, deleted: deleted.lazy.map(\.rawValue))
        return writer.bytes
    }

    func unchanged(_ waiter: ChangeHub.Parked) {
        switch waiter.watch {
        case .one(let list):
            let since = waiter.since[list] ?? 0
            let head = ListHead(
                id: list, epoch: waiter.epochs[list] ?? router.head(of: list)?.epoch ?? "", version: since)
            // A view's waiter parked again holds an older version: no stages from it to `since`.
            respond(
                waiter, json: EncodedChangeAnswer.unchanged(head, from: waiter.held(list), to: since).json, compact: nil
            )
        case .many:
            respond(waiter, json: Self.manyBody([], deleted: []), compact: nil)
        }
    }

    func deleted(_ list: Identifier, _ waiter: ChangeHub.Parked) {
        switch waiter.watch {
        case .one:
            waiter.exchange.fail(
                Problem(StoreError(.listNotFound, "list \"\(list)\" was deleted while this request waited")))
        case .many:
            Task { await many(waiter) }
        }
    }

    /// Sends `json` to `waiter`, through the pipeline's middleware like any
    /// answer (CORS, metrics, logging). `compact` is the group's shared body,
    /// when made.
    private func respond(_ waiter: ChangeHub.Parked, json: [UInt8], compact: [UInt8]?) {
        waiter.exchange.respond(ChangeAnswerResponse.response(json: json, compact: compact, pretty: waiter.pretty))
    }
}
