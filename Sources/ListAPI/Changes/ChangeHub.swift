import HTTP
import JSON
import ListModel
import ListStore
import ListView
import ListWire
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
    private struct State {
        var table = WaiterTable<Parked>()
        var subscriptions: [Identifier: any Disposable] = [:]
        var shuttingDown = false
        /// The watch keys of views' waiters, by list: each names the first
        /// `where` condition of the views parked under it (``ViewWatch``).
        var viewWatches: [Identifier: [String: ViewWatch]] = [:]
        /// Per list, the last commit version heard and the version after which
        /// every commit was heard in order: a view's waiter parked at or after
        /// it and woken by a commit was not changed by the commits before it.
        var heard: [Identifier: (last: Int64, inOrderSince: Int64)] = [:]
    }

    /// Where a view's waiter waits: under a key of its list and its first
    /// `where` condition, so a commit wakes it only when an item it touched
    /// holds that value before or after (or a section changed), not at every
    /// commit of the list. A view without `where` waits under the list's own key.
    struct ViewWatch: Hashable, Sendable {
        var path: [String]
        var value: String

        /// The watch key of `view`'s waiters on `list`, when the view has a condition.
        static func key(_ list: Identifier, _ view: ViewSpec) -> (String, ViewWatch)? {
            guard let condition = view.conditions.first else { return nil }
            let watch = ViewWatch(path: condition.path, value: condition.value.canonicalText)
            return (watch.key(list), watch)
        }

        func key(_ list: Identifier) -> String {
            list.rawValue + "\u{1}" + path.joined(separator: ".") + "\u{1}" + value
        }
    }

    private let router: CommitRouter
    private let state = Mutex(State())
    private let ticker: Ticker
    private let answers: WaiterAnswers

    init(router: CommitRouter, computer: ChangeComputer, metrics: ServiceMetrics, tick: Duration = .milliseconds(100)) {
        self.router = router
        let parker = WaiterAnswers.Parker()
        self.answers = WaiterAnswers(router: router, computer: computer, metrics: metrics, parker: parker)
        self.ticker = Ticker(tick: tick)
        // One timer for all waiters: every tick, expire the due ones. The
        // ticks end when the hub is shut down or released.
        ticker.start { [weak self] in
            guard let self, !self.state.withLock({ $0.shuttingDown }) else { return false }
            self.expireDue()
            return true
        }
        parker.hub = self
    }

    deinit { ticker.stop() }

    /// How many requests are parked.
    var parkedCount: Int { state.withLock { $0.table.count } }

    /// Parks `exchange` until one of `since`'s lists passes its version, or `timeout` passes.
    ///
    /// Checked under the hub's lock against the router's heads after
    /// subscribing, so no commit can slip between the caller's check and the park.
    func park(
        _ watch: Watch, since: [Identifier: Int64], epochs: [Identifier: String], timeout: Duration,
        pretty: Bool, maxChanges: Int? = nil, views: [Identifier: ViewSpec] = [:], held: [Identifier: Int64] = [:],
        exchange: Exchange
    ) -> ParkResult {
        park(
            Parked(
                exchange: exchange, watch: watch, pretty: pretty, since: since, epochs: epochs, maxChanges: maxChanges,
                views: views, held: held, deadline: ticker.deadline(after: timeout)))
    }

    /// The tick a waiter parked now with `timeout` times out at.
    func deadline(after timeout: Duration) -> UInt64 { ticker.deadline(after: timeout) }

    /// Parks `parked` until one of its lists passes its version, or its deadline passes.
    func park(_ parked: Parked) -> ParkResult {
        let since = parked.since
        let epochs = parked.epochs
        let deadline = parked.deadline
        let exchange = parked.exchange
        let result: (ParkResult, UInt64?) = state.withLock { state in
            if state.shuttingDown { return (.shuttingDown, nil) }
            for list in since.keys where state.subscriptions[list] == nil {
                state.subscriptions[list] = router.commits(of: list).subscribe(onNext: { [weak self] commits in
                    for commit in commits { self?.committed(commit) }
                })
            }
            for (list, version) in since {
                guard let head = router.head(of: list) else { continue }
                if head.version != version || (epochs[list].map { $0 != head.epoch } ?? false) {
                    unsubscribeUnwatched(since.keys, in: &state)
                    return (.changed, nil)
                }
            }
            var watches: [String: Int64] = [:]
            for (list, version) in since {
                if case .one = parked.watch, let view = parked.views[list], let (key, watch) = ViewWatch.key(list, view)
                {
                    watches[key] = version
                    state.viewWatches[list, default: [:]][key] = watch
                } else {
                    watches[list.rawValue] = version
                }
            }
            let id = state.table.park(watches: watches, deadline: deadline, payload: parked)
            return (.parked, id)
        }
        if let id = result.1 {
            // Registered outside the lock: onCancel runs the body at once if the
            // client is already gone, and the body takes the lock.
            exchange.onCancel { [weak self] in self?.cancel(id) }
        }
        return result.0
    }

    /// Answers every parked request with "no change" and refuses new parks,
    /// so clients reconnect (to another instance) at once.
    func shutdown() {
        ticker.stop()
        let (waiters, subscriptions) = state.withLock { state in
            state.shuttingDown = true
            let subscriptions = Array(state.subscriptions.values)
            state.subscriptions = [:]
            return (state.table.removeAll(), subscriptions)
        }
        for subscription in subscriptions { subscription.dispose() }
        for waiter in waiters { answers.unchanged(waiter.payload) }
    }

    // MARK: - Events

    private func committed(_ commit: Commit) {
        let groups: [(since: Int64, waiters: [WaiterTable<Parked>.Waiter])] = state.withLock { state in
            let groups: [(since: Int64, waiters: [WaiterTable<Parked>.Waiter])]
            var keys = [commit.list.rawValue]
            if let watches = state.viewWatches[commit.list] {
                keys += commit.deleted ? Array(watches.keys) : Self.woken(watches, by: commit)
            }
            if commit.deleted {
                state.heard[commit.list] = nil
                let all = keys.flatMap { state.table.removeAll(watching: $0) }
                groups = all.isEmpty ? [] : [(since: Int64(-1), waiters: all)]
            } else {
                let heard = state.heard[commit.list]
                let inOrderSince: Int64
                if let heard, commit.version == heard.last + 1 {
                    inOrderSince = heard.inOrderSince
                } else {
                    // A gap, or a commit heard late (another instance's): only what follows is in order.
                    inOrderSince = max(commit.version - 1, heard?.last ?? 0)
                }
                state.heard[commit.list] = (max(commit.version, heard?.last ?? 0), inOrderSince)
                var woken = state.table.wake(list: commit.list.rawValue, version: commit.version)
                for key in keys.dropFirst() {
                    for group in state.table.wake(list: key, version: commit.version) {
                        // Parked at `since` through every commit before this one unwoken: the view at
                        // `since` is the view just before it, so its answer is computed from there.
                        guard group.since >= inOrderSince, group.since < commit.version - 1 else {
                            woken.append(group)
                            continue
                        }
                        let list = commit.list
                        let restamped = group.waiters.map { waiter in
                            var waiter = waiter
                            waiter.payload = waiter.payload.parkedAgain(
                                since: [list: commit.version - 1], sameSince: [list: group.since])
                            return waiter
                        }
                        woken.append((since: commit.version - 1, waiters: restamped))
                    }
                }
                groups = woken
            }
            unsubscribeUnwatched([commit.list], in: &state)
            return groups
        }
        for group in groups {
            if commit.deleted {
                for waiter in group.waiters { answers.deleted(commit.list, waiter.payload) }
            } else {
                let recorded = commit.change.flatMap { $0.from == group.since && $0.to == commit.version ? $0 : nil }
                answers.woken(group.waiters, list: commit.list, since: group.since, recorded: recorded)
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
        let now = ticker.currentTick
        let expired = state.withLock { state in
            let expired = state.table.expire(through: now)
            for waiter in expired { unsubscribeUnwatched(waiter.payload.since.keys, in: &state) }
            return expired
        }
        for waiter in expired { answers.unchanged(waiter.payload) }
    }

    private func unsubscribeUnwatched(_ lists: some Sequence<Identifier>, in state: inout State) {
        for list in lists {
            if let watches = state.viewWatches[list] {
                let watched = watches.filter { state.table.isWatched($0.key) }
                state.viewWatches[list] = watched.isEmpty ? nil : watched
            }
            guard !state.table.isWatched(list.rawValue), state.viewWatches[list] == nil else { continue }
            state.subscriptions.removeValue(forKey: list)?.dispose()
            // Unsubscribed, the hub hears none of its commits: what it knew of their order ends here.
            state.heard[list] = nil
        }
    }

    /// The view watch keys of `commit`'s list that it may have changed: those
    /// whose condition a touched item held before or after, or all of them when
    /// a section was inserted, deleted, moved or updated (a view without
    /// `group` has the list's sections) or the commit has no recorded change.
    /// - Complexity: O(k · p) for k touched items and p distinct condition paths.
    static func woken(_ watches: [String: ViewWatch], by commit: Commit) -> [String] {
        guard let change = commit.change else { return Array(watches.keys) }
        func sectionOrder(_ sections: CondensedListSections) -> [String] {
            sections.map { section in
                switch section.model {
                case .element(let entry): "s" + entry.id + "\u{1}" + entry.model.text
                case .run(let id, let count): "r\(id):\(count)"
                }
            }
        }
        if sectionOrder(change.old) != sectionOrder(change.new) { return Array(watches.keys) }
        let paths = Set(watches.values.map(\.path))
        var woken: [String] = []
        for side in [change.old, change.new] {
            for section in side {
                for item in section.items {
                    guard case .element(let entry) = item,
                        let model = try? JSONValue(
                            parsing: Array(entry.model.text.utf8), limits: JSONLimits(maxDepth: 512, maxBytes: .max))
                    else { continue }
                    for path in paths {
                        guard let value = model.value(atPath: path) else { continue }
                        let key = ViewWatch(path: path, value: value.canonicalText).key(commit.list)
                        if watches[key] != nil { woken.append(key) }
                    }
                }
            }
        }
        return woken
    }

    /// Answers a `POST /changes` waiter with every watched list that moved on.
    /// (`mayPark`: parks it again when no list moved on, as a view's may not have.)
    func answerMany(_ waiter: Parked, mayPark: Bool) async { await answers.many(waiter, mayPark: mayPark) }
}
