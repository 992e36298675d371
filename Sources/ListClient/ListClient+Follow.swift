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
    /// ``StateFollow/connection`` says where the follow stands with the server.
    ///
    /// The follow runs while the returned ``StateFollow`` is alive or until `stop()`.
    public func followState(list: String, options: FollowOptions = FollowOptions()) -> StateFollow {
        StateFollow(followEvents(list: list, options: options))
    }

    /// Follows a view of `list` (see ``follow(list:view:options:)``) and exposes only its latest state.
    public func followState(list: String, view: ViewSpec, options: FollowOptions = FollowOptions()) -> StateFollow {
        StateFollow(followEvents(list: list, view: view, options: options))
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
            let task = Task {
                if let streaming = self.eventStreamTransport(options), Self.canStream(views) {
                    await self.runEventStreamFollow(
                        lists: views.keys.sorted(), options: options, observer: observer, transport: streaming)
                } else {
                    await self.runFollow(views: views, options: options, observer: observer)
                }
            }
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
        // A restored state is confirmed with a poll that does not wait: the server answers at
        // once (a change, or nothing new), so the follow is live without a pollTimeout's wait.
        var confirming = await restore(&machine, options: options, observer: observer)
        while !Task.isCancelled {
            do throws(ListClientError) {
                let update: FollowUpdate?
                switch machine.nextAction {
                case .fetchSnapshot:
                    update = machine.receive(
                        snapshot: try await self.list(list, view: view, instance: machine.instance))
                case .poll(let since, let epoch):
                    let answer = try await changes(
                        of: list, view: view, since: since, epoch: epoch,
                        timeout: confirming ? .zero : options.pollTimeout, slack: options.responseSlack,
                        instance: machine.instance)
                    confirming = false
                    update = machine.receive(answer)
                }
                if Task.isCancelled { return }
                if let update {
                    observer.onNext(update)
                    await keep(update, of: machine, options: options)
                }
                connection.answered()
                if machine.nextAction == .fetchSnapshot {
                    // An answer was rejected: wait before refetching, so a server that
                    // keeps sending answers that do not apply is not hammered.
                    try? await Task.sleep(for: backoff.next())
                } else {
                    backoff.reset()
                }
            } catch {
                let goOn = await recover(
                    from: error, machine: &machine, observer: observer, backoff: &backoff, connection: &connection,
                    options: options)
                if !goOn { return }
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
        // Restored states are confirmed by a first long-poll that does not wait (as for one list).
        var confirming = await restore(&machines, options: options, observer: observer)
        while !Task.isCancelled && !machines.isEmpty {
            // The long-poll's answers; snapshots are emitted as they come (fetchSnapshots).
            var updates: [ListUpdate] = []
            var failure: ListClientError?
            do throws(ListClientError) {
                // Snapshots first: a list that was refetched is polled on the next round.
                let fetched = try await fetchSnapshots(
                    &machines, instance: choice.instance, observer: observer, options: options)
                var since: [String: Int64] = [:]
                var epochs: [String: String] = [:]
                for (list, machine) in machines {
                    if case .poll(let version, let epoch) = machine.nextAction {
                        since[list] = version
                        epochs[list] = epoch
                    }
                }
                if !fetched && !since.isEmpty {
                    let answers: [String: ChangeAnswer?]
                    do throws(ListClientError) {
                        answers = try await changes(
                            of: since, views: views, epochs: epochs,
                            timeout: confirming ? .zero : options.pollTimeout, slack: options.responseSlack,
                            instance: choice.instance)
                        confirming = false
                    } catch  where error.status == 404 {
                        // POST /changes refuses the whole request when one list is gone;
                        // ask each list once, without waiting, to find out which.
                        answers = try await probe(since, views: views, epochs: epochs, instance: choice.instance)
                    }
                    updates = Self.receive(answers, into: &machines)
                }
                backoff.reset()
            } catch {
                failure = error
            }
            if Task.isCancelled { return }
            for update in updates {
                observer.onNext(update)
                await keep(update.update, list: update.list, view: views[update.list] ?? .wholeList, options: options)
            }
            guard let failure else {
                connection.answered()
                continue
            }
            guard
                await recoverAll(
                    from: failure, lists: machines.keys.sorted(), choice: &choice, backoff: &backoff,
                    connection: &connection, observer: observer, options: options)
            else { return }
        }
        if !Task.isCancelled {
            connection.ended(nil)
            observer.onCompleted()
        }
    }

    /// One `GET …/changes?timeout=0` per list: its answer, or `nil` when it is deleted.
    func probe(
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

    /// Whether a multi-list follow of `views` can go over one `GET /events?lists=…`:
    /// that stream serves whole lists only (a token's own view aside), at most 100 of them.
    static func canStream(_ views: [String: ViewSpec]) -> Bool {
        !views.isEmpty && views.count <= 100 && views.values.allSatisfy(\.isWholeList)
    }

    /// The multi-list follows' snapshot step: fetches the snapshot of each list whose
    /// machine needs one, in id order, and emits each update at once, so a snapshot (or a
    /// deletion, a 404) is never lost to another list's failed fetch after it: a machine
    /// that took a snapshot has moved on, and an update left unsent would leave the consumer
    /// behind it for good. Returns whether it fetched anything.
    func fetchSnapshots(
        _ machines: inout [String: FollowMachine], instance: Int, observer: AnyObserver<ListUpdate>,
        options: FollowOptions
    ) async throws(ListClientError) -> Bool {
        var fetched = false
        for list in machines.keys.sorted() {
            guard var machine = machines[list], machine.nextAction == .fetchSnapshot else { continue }
            let update: FollowUpdate
            do throws(ListClientError) {
                update = machine.receive(snapshot: try await self.list(list, view: machine.view, instance: instance))
                machines[list] = machine
            } catch  where error.status == 404 {
                update = machine.receiveDeleted()
                machines[list] = nil
            }
            fetched = true
            if Task.isCancelled { throw ListClientError(kind: .cancelled, detail: "the follow was cancelled") }
            observer.onNext(ListUpdate(list: list, update: update))
            await keep(update, of: machine, options: options)
        }
        return fetched
    }

    /// Answers for several lists (`nil`: deleted) given to their machines, in id order:
    /// the updates to emit; a deleted list's machine is dropped.
    static func receive(_ answers: [String: ChangeAnswer?], into machines: inout [String: FollowMachine])
        -> [ListUpdate]
    {
        var updates: [ListUpdate] = []
        for (list, answer) in answers.sorted(by: { $0.key < $1.key }) {
            guard var machine = machines[list] else { continue }
            if let answer {
                if let update = machine.receive(answer) { updates.append(ListUpdate(list: list, update: update)) }
                machines[list] = machine
            } else {
                updates.append(ListUpdate(list: list, update: machine.receiveDeleted()))
                machines[list] = nil
            }
        }
        return updates
    }

    enum Recovery {
        case stop
        case deleted
        case fail
        case retry(retryAfter: Double?)
    }

    /// ``recover(from:holding:lists:choice:backoff:connection:options:)`` for a follow of
    /// several lists, which holds their states: false when the follow ends (cancelled, or
    /// failed, which `observer` hears), true when it asks again.
    func recoverAll(
        from error: ListClientError, lists: [String], choice: inout InstanceChoice, backoff: inout Backoff,
        connection: inout ConnectionReporter, observer: AnyObserver<ListUpdate>, options: FollowOptions
    ) async -> Bool {
        switch await recover(
            from: error, holding: true, lists: lists, choice: &choice, backoff: &backoff, connection: &connection,
            options: options)
        {
        case .stop: return false
        case .fail, .deleted:
            connection.ended(error)
            observer.onError(error)
            return false
        case .retry: return true
        }
    }

    /// The one recovery step of every follow loop (long-poll or event stream, one list or
    /// several) after `error`: says what the error means for the follow and, when it is
    /// retried, does the retry's bookkeeping: moves `choice` to the next instance where that
    /// may help (reporting the failover), reports `.reconnecting` and waits out the back-off
    /// (or the 503's `Retry-After`). The loop then asks again from the versions it holds.
    func recover(
        from error: ListClientError, holding: Bool, lists: [String], choice: inout InstanceChoice,
        backoff: inout Backoff, connection: inout ConnectionReporter, options: FollowOptions
    ) async -> Recovery {
        let recovery = Self.recovery(error, holding: holding)
        guard case .retry(let retryAfter) = recovery else { return recovery }
        let old = choice.instance
        let moved = choice.failed(error, instances: baseURLs.count)
        if moved { reportFailover(of: lists, from: old, choice: choice, error, options) }
        // A Retry-After is the failed instance's; the next one is asked after the plain back-off.
        let delay = retryAfter.flatMap { moved ? nil : backoff.next(retryAfter: $0) } ?? backoff.next()
        connection.retrying(after: delay)
        try? await Task.sleep(for: delay)
        return recovery
    }

    /// ``recover(from:holding:lists:choice:backoff:connection:options:)`` for a single-list
    /// follow, with its ends: once the follow has shown the list, a 404 is its deletion
    /// (even while a refetch is due after a rejected answer, and the machine holds no
    /// state), emitted before completion; an error retrying cannot fix fails the follow.
    /// Returns whether the loop goes on.
    func recover(
        from error: ListClientError, machine: inout FollowMachine, observer: AnyObserver<FollowUpdate>,
        backoff: inout Backoff, connection: inout ConnectionReporter, options: FollowOptions
    ) async -> Bool {
        switch await recover(
            from: error, holding: machine.hasEmitted, lists: [machine.list], choice: &machine.instanceChoice,
            backoff: &backoff, connection: &connection, options: options)
        {
        case .stop: return false
        case .deleted:
            let deleted = machine.receiveDeleted()
            observer.onNext(deleted)
            await keep(deleted, of: machine, options: options)
            connection.ended(nil)
            observer.onCompleted()
            return false
        case .fail:
            connection.ended(error)
            observer.onError(error)
            return false
        case .retry: return true
        }
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

/// A running follow that keeps only the latest state, as a ReactiveCore ``/ReactiveCore/Property``,
/// with its ``ConnectionState`` beside it.
///
/// Why a class: the follow must stop when its owner lets go of it, the way a
/// ReactiveCocoa property bound to a producer does.
///
/// ```swift
/// let follow = client.followState(list: "groceries")
/// follow.connection.producer.subscribe(onNext: { status.text = "\($0)" })   // or:
/// for try await state in follow.connection.typedValues { status.text = "\(state)" }
/// ```
public final class StateFollow: Sendable {
    /// The latest state; `nil` before the first snapshot and after the list is deleted.
    public let state: Property<ListState?>
    /// Where the follow stands with the server: `.connecting` at first, then as
    /// ``ListClient/followEvents(list:view:options:)`` reports it (`.live`,
    /// `.reconnecting(attempt:after:)`, `.needsAuth`, `.ended`). Read `.value`, or
    /// observe `.producer` / `.signal`, or iterate `.typedValues` (an `AsyncSequence`
    /// that starts with the current state).
    public let connection: Property<ConnectionState>
    /// Whether ``state`` is the one kept by the follow's ``FollowOptions/snapshotStore``
    /// from an earlier run, not yet confirmed by the server: true from
    /// ``FollowEvent/restored(_:)`` until the next update or until the follow is `.live`.
    public let isFromCache: Property<Bool>
    /// Why the follow ended, if it ended with an error.
    public let failure: Property<ListClientError?>
    private let subscription: any Disposable

    init(_ events: Observable<FollowEvent>) {
        let state = MutableProperty<ListState?>(nil)
        let connection = MutableProperty<ConnectionState>(.connecting)
        let isFromCache = MutableProperty(false)
        let failure = MutableProperty<ListClientError?>(nil)
        subscription = events.subscribe { event in
            switch event {
            case .next(.update(let update)):
                state.value = update.state
                if isFromCache.value { isFromCache.value = false }
            case .next(.restored(let restored)):
                state.value = restored
                isFromCache.value = true
            case .next(.connection(let value)):
                // The property starts at `.connecting`, which the follow reports first: each state once.
                if connection.value != value { connection.value = value }
                if value == .live && isFromCache.value { isFromCache.value = false }
            case .error(let error):
                failure.value = error as? ListClientError ?? ListClientError(kind: .transport, detail: "\(error)")
                // The follow reports its end before failing; an error from elsewhere ends it all the same.
                if connection.value != .needsAuth && connection.value != .ended { connection.value = .ended }
            case .completed: if connection.value != .ended { connection.value = .ended }
            }
        }
        self.state = Property(state)
        self.connection = Property(connection)
        self.isFromCache = Property(isFromCache)
        self.failure = Property(failure)
    }

    /// Stops following (cancels the in-flight long-poll).
    public func stop() { subscription.dispose() }

    deinit { subscription.dispose() }
}
