import ListView
import ListWire
import ReactiveCore

extension ListClient {
    /// Follows `list` live: first `.snapshot`, then `.changes` for every change
    /// answer (each stage with the sections after it), or `.reset` when the data
    /// must be replaced; `.deleted` and completion when the list is deleted.
    ///
    /// Each subscription runs its own long-poll loop. It keeps the version and
    /// epoch it holds and asks only for what follows them, so after a network
    /// error or a server restart it resumes where it left off and never applies a
    /// stage twice. Every answer is checked by applying it with SectionDiff; one
    /// that does not apply triggers a refetch of the snapshot (a `.reset`), never a
    /// crash. Errors are retried with jittered exponential back-off, and a 503
    /// waits for its `Retry-After`. Only errors that retrying cannot fix end the
    /// sequence with an error: 400, 401, 403, and 404 before the first snapshot.
    ///
    /// With several ``baseURLs``, the follow starts at the current one and, when its
    /// instance fails (no answer: refused, reset, timed out; or a 5xx), retries on
    /// the next one after the back-off, resuming from the version and epoch it holds
    /// (see ``InstanceChoice``). Instances on one PostgreSQL store serve the same
    /// versions, so the follow continues with no reset and no change lost or
    /// repeated. Each move is reported to ``FollowOptions/onFailover``. With one
    /// base URL the follow retries that one, as before.
    ///
    /// Disposing the subscription cancels the in-flight long-poll (the transport
    /// closes its connection, so the server releases the waiter at once).
    ///
    /// Events arrive on a background task, serialized; hop to the main thread
    /// (`observe(on:)`) before touching UI.
    public func follow(list: String, options: FollowOptions = FollowOptions()) -> Observable<FollowUpdate> {
        follow(list: list, view: .wholeList, options: options)
    }

    /// Follows a view of `list` live: the items that match its filter, in its
    /// order, grouped and windowed as it says, with the view's own positions,
    /// exactly as ``follow(list:options:)`` follows a whole list (the same
    /// updates, resumption, checks, back-off and failover).
    ///
    /// The snapshot and every long-poll carry the view as its
    /// `ViewSpec.canonicalQuery` (`GET /lists/{list}?where=done%3Afalse&order=due`,
    /// `GET /lists/{list}/changes?since=V&…&where=…`). A write that leaves the
    /// view alone sends no update: the follow moves on to the list's new version
    /// silently when it hears of it, so ``/ListWire/ListState/version`` of the last update
    /// may lag the list's.
    ///
    /// ```swift
    /// let open = try ViewSpec(parsing: "where=done:false&order=due&group=owner")
    /// let subscription = client.follow(list: "tasks", view: open).subscribe { event in … }
    /// ```
    public func follow(list: String, view: ViewSpec, options: FollowOptions = FollowOptions())
        -> Observable<FollowUpdate>
    {
        Observable.create { observer in
            let task = Task {
                if let streaming = self.eventStreamTransport(options) {
                    await self.runEventStreamFollow(
                        list: list, view: view, options: options, observer: observer, transport: streaming)
                } else {
                    await self.runFollow(list: list, view: view, options: options, observer: observer)
                }
            }
            return Disposables.create { task.cancel() }
        }
    }

    /// Follows `list` and exposes only its latest state, for consumers that do not
    /// animate. The property is `nil` until the first snapshot and after a delete.
    ///
    /// The follow runs while the returned ``StateFollow`` is alive or until `stop()`.
    public func followState(list: String, options: FollowOptions = FollowOptions()) -> StateFollow {
        StateFollow(follow(list: list, options: options))
    }

    /// Follows a view of `list` (see ``follow(list:view:options:)``) and exposes only its latest state.
    public func followState(list: String, view: ViewSpec, options: FollowOptions = FollowOptions()) -> StateFollow {
        StateFollow(follow(list: list, view: view, options: options))
    }

    /// Follows several lists with one long-poll (`POST /changes`): emits
    /// `(list, update)` pairs with the same meaning as ``follow(list:options:)``.
    /// A deleted list emits `.deleted` and is dropped; the sequence completes when
    /// no list is left. With several ``baseURLs`` it fails over as ``follow(list:options:)`` does.
    public func follow(lists: [String], options: FollowOptions = FollowOptions()) -> Observable<ListUpdate> {
        follow(views: Dictionary(lists.map { ($0, .wholeList) }) { first, _ in first }, options: options)
    }

    /// Follows a view of each of several lists with one long-poll (`POST /changes`,
    /// each entry `{"since": V, "view": "<canonical query>"}`): `views` maps a
    /// list's id to the view followed (`ViewSpec.wholeList` for all of it).
    /// Emits as ``follow(lists:options:)`` does, each update in its view's positions.
    public func follow(views: [String: ViewSpec], options: FollowOptions = FollowOptions()) -> Observable<ListUpdate> {
        Observable.create { observer in
            let task = Task { await self.runFollow(views: views, options: options, observer: observer) }
            return Disposables.create { task.cancel() }
        }
    }

    private func runFollow(
        list: String, view: ViewSpec, options: FollowOptions, observer: AnyObserver<FollowUpdate>
    ) async {
        var machine = FollowMachine(list: list, view: view, instance: currentInstance)
        var backoff = Backoff(minimum: options.minimumBackoff, maximum: options.maximumBackoff)
        var connection = ConnectionReporter(options)
        connection.connecting()
        while !Task.isCancelled {
            do throws(ListClientError) {
                let update: FollowUpdate?
                switch machine.nextAction {
                case .fetchSnapshot:
                    update = machine.receive(
                        snapshot: try await self.list(list, view: view, instance: machine.instance))
                case .poll(let since, let epoch):
                    let answer = try await changes(
                        of: list, view: view, since: since, epoch: epoch, timeout: options.pollTimeout,
                        slack: options.responseSlack,
                        instance: machine.instance)
                    update = machine.receive(answer)
                }
                if Task.isCancelled { return }
                if let update { observer.onNext(update) }
                connection.answered()
                if machine.nextAction == .fetchSnapshot {
                    // An answer was rejected: wait before refetching, so a server that
                    // keeps sending answers that do not apply is not hammered.
                    try? await Task.sleep(for: backoff.next())
                } else {
                    backoff.reset()
                }
            } catch {
                // Once the follow has shown the list, a 404 is its deletion, even while a
                // refetch is due after a rejected answer (and the machine holds no state).
                switch Self.recovery(error, holding: machine.hasEmitted) {
                case .stop: return
                case .deleted:
                    observer.onNext(machine.receiveDeleted())
                    connection.ended(nil)
                    observer.onCompleted()
                    return
                case .fail:
                    connection.ended(error)
                    observer.onError(error)
                    return
                case .retry(let retryAfter):
                    let old = machine.instance
                    let moved = machine.failed(error, instances: baseURLs.count)
                    if moved { reportFailover(of: [list], from: old, choice: machine.instanceChoice, error, options) }
                    // A Retry-After is the failed instance's; the next one is asked after the plain back-off.
                    let delay = retryAfter.flatMap { moved ? nil : backoff.next(retryAfter: $0) } ?? backoff.next()
                    connection.retrying(after: delay)
                    try? await Task.sleep(for: delay)
                }
            }
        }
    }

    /// A follow moved on from instance `old`: the client follows it, and the options hear of it.
    func reportFailover(
        of lists: [String], from old: Int, choice: InstanceChoice, _ error: ListClientError, _ options: FollowOptions
    ) {
        failedOver(from: old, to: choice.instance)
        guard let onFailover = options.onFailover, let from = url(instance: old),
            let to = url(instance: choice.instance)
        else { return }
        onFailover(Failover(lists: lists, from: from, to: to, error: error, count: choice.failovers))
    }

    private func runFollow(
        views: [String: ViewSpec], options: FollowOptions, observer: AnyObserver<ListUpdate>
    ) async {
        var machines = Dictionary(
            uniqueKeysWithValues: views.map { ($0.key, FollowMachine(list: $0.key, view: $0.value)) })
        // One long-poll for all the lists, so one instance for all of them.
        var choice = InstanceChoice(instance: currentInstance)
        var backoff = Backoff(minimum: options.minimumBackoff, maximum: options.maximumBackoff)
        var connection = ConnectionReporter(options)
        connection.connecting()
        while !Task.isCancelled && !machines.isEmpty {
            // What the machines took in this round. They are emitted whatever happens next in
            // the round: a machine that took a snapshot (or dropped a deleted list) has moved
            // on, so an update left unsent would leave the consumer behind it for good.
            var updates: [ListUpdate] = []
            var failure: ListClientError?
            do throws(ListClientError) {
                var since: [String: Int64] = [:]
                var epochs: [String: String] = [:]
                for (list, machine) in machines.sorted(by: { $0.key < $1.key }) {
                    switch machine.nextAction {
                    case .fetchSnapshot:
                        do throws(ListClientError) {
                            let snapshot = try await self.list(list, view: machine.view, instance: choice.instance)
                            updates.append(
                                ListUpdate(
                                    list: list, update: machines[list, default: machine].receive(snapshot: snapshot)))
                        } catch  where error.status == 404 {
                            updates.append(ListUpdate(list: list, update: .deleted(list: list)))
                            machines[list] = nil
                        }
                    case .poll(let version, let epoch):
                        since[list] = version
                        epochs[list] = epoch
                    }
                }
                // Snapshots first: a list that was refetched is polled on the next round.
                if updates.isEmpty && !since.isEmpty {
                    let answers: [String: ChangeAnswer?]
                    do throws(ListClientError) {
                        answers = try await changes(
                            of: since, views: views, epochs: epochs, timeout: options.pollTimeout,
                            slack: options.responseSlack, instance: choice.instance)
                    } catch  where error.status == 404 {
                        // POST /changes refuses the whole request when one list is gone;
                        // ask each list once, without waiting, to find out which.
                        answers = try await probe(since, views: views, epochs: epochs, instance: choice.instance)
                    }
                    for (list, answer) in answers.sorted(by: { $0.key < $1.key }) {
                        guard var machine = machines[list] else { continue }
                        if let answer {
                            if let update = machine.receive(answer) {
                                updates.append(ListUpdate(list: list, update: update))
                            }
                            machines[list] = machine
                        } else {
                            updates.append(ListUpdate(list: list, update: machine.receiveDeleted()))
                            machines[list] = nil
                        }
                    }
                }
                backoff.reset()
            } catch {
                failure = error
            }
            if Task.isCancelled { return }
            for update in updates { observer.onNext(update) }
            guard let failure else {
                connection.answered()
                continue
            }
            switch Self.recovery(failure, holding: true) {
            case .stop: return
            case .fail, .deleted:
                connection.ended(failure)
                observer.onError(failure)
                return
            case .retry(let retryAfter):
                let old = choice.instance
                let moved = choice.failed(failure, instances: baseURLs.count)
                if moved {
                    reportFailover(of: machines.keys.sorted(), from: old, choice: choice, failure, options)
                }
                let delay = retryAfter.flatMap { moved ? nil : backoff.next(retryAfter: $0) } ?? backoff.next()
                connection.retrying(after: delay)
                try? await Task.sleep(for: delay)
            }
        }
        if !Task.isCancelled {
            connection.ended(nil)
            observer.onCompleted()
        }
    }

    /// One `GET …/changes?timeout=0` per list: its answer, or `nil` when it is deleted.
    private func probe(
        _ since: [String: Int64], views: [String: ViewSpec], epochs: [String: String], instance: Int
    ) async throws(ListClientError) -> [String: ChangeAnswer?] {
        var answers: [String: ChangeAnswer?] = [:]
        for (list, version) in since {
            do throws(ListClientError) {
                answers[list] = try await changes(
                    of: list, view: views[list] ?? .wholeList, since: version, epoch: epochs[list], timeout: .zero,
                    instance: instance)
            } catch  where error.status == 404 {
                answers[list] = .some(nil)
            }
        }
        return answers
    }

    enum Recovery {
        case stop
        case deleted
        case fail
        case retry(retryAfter: Double?)
    }

    static func recovery(_ error: ListClientError, holding: Bool) -> Recovery {
        if error.kind == .cancelled || Task.isCancelled { return .stop }
        if error.status == 404 { return holding ? .deleted : .fail }
        if error.isTransient { return .retry(retryAfter: error.retryAfter) }
        if error.kind == .invalidResponse { return .retry(retryAfter: nil) }
        return .fail
    }
}

/// One update of a multi-list follow.
public struct ListUpdate: Sendable, Equatable {
    /// The list the update is about.
    public var list: String
    /// What happened to it.
    public var update: FollowUpdate

    /// Creates an update.
    public init(list: String, update: FollowUpdate) {
        self.list = list
        self.update = update
    }
}

/// A running follow that keeps only the latest state, as a ReactiveCore ``/ReactiveCore/Property``.
///
/// Why a class: the follow must stop when its owner lets go of it, the way a
/// ReactiveCocoa property bound to a producer does.
public final class StateFollow: Sendable {
    /// The latest state; `nil` before the first snapshot and after the list is deleted.
    public let state: Property<ListState?>
    /// Why the follow ended, if it ended with an error.
    public let failure: Property<ListClientError?>
    private let subscription: any Disposable

    init(_ updates: Observable<FollowUpdate>) {
        let state = MutableProperty<ListState?>(nil)
        let failure = MutableProperty<ListClientError?>(nil)
        subscription = updates.subscribe { event in
            switch event {
            case .next(let update): state.value = update.state
            case .error(let error):
                failure.value = error as? ListClientError ?? ListClientError(kind: .transport, detail: "\(error)")
            case .completed: break
            }
        }
        self.state = Property(state)
        self.failure = Property(failure)
    }

    /// Stops following (cancels the in-flight long-poll).
    public func stop() { subscription.dispose() }

    deinit { subscription.dispose() }
}
