import HTTP
import JSON
import ListModel
import ListStore
import ListWire
import Server

/// Turns parked requests into their HTTP answers: a commit's shared answer
/// fanned out to every waiter it woke (serialized once), "no change" at a
/// timeout or shutdown, "deleted", and the object of `POST /changes`.
///
/// The change hub decides who is answered and when; this decides what they get.
struct WaiterAnswers: Sendable {
    let router: CommitRouter
    let computer: ChangeComputer
    let metrics: ServiceMetrics

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
            guard case .one = waiter.watch,
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

    /// Answers a `POST /changes` waiter with every watched list that moved on.
    func many(_ waiter: ChangeHub.Parked) async {
        var answers: [EncodedChangeAnswer] = []
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
            } catch  where error.kind == .listNotFound {
                deleted.append(list)
            } catch {
                waiter.exchange.fail(Problem(error))
                return
            }
        }
        for answer in answers { metrics.served(answer) }
        respond(waiter, json: Self.manyBody(answers, deleted: deleted), compact: nil)
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
            respond(waiter, json: EncodedChangeAnswer.unchanged(head, from: since).json, compact: nil)
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
