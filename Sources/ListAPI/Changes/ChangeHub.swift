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
        /// Per list, how many of its view watch keys name each condition path:
        /// the paths a commit is looked at for, without a look at every watch.
        var watchPaths: [Identifier: [[String]: Int]] = [:]
        /// Per list, the last commit version heard and the version after which
        /// every commit was heard in order: a view's waiter parked at or after
        /// it and woken by a commit was not changed by the commits before it.
        var heard: [Identifier: (last: Int64, inOrderSince: Int64)] = [:]
        /// Per list, the last version that touched each watch key of the
        /// condition paths its views' waiters have used (``Touches``), while
        /// the hub hears the list: a view's waiter parking behind the list's
        /// head whose key no commit since touched parks at the head instead
        /// of being answered an unchanged view (and parking again, behind).
        var touches: [Identifier: Touches] = [:]
    }

    /// The watch keys a list's commits touched, for the condition paths in ``paths``.
    struct Touches {
        /// From this version on, every commit heard was looked at for ``paths``.
        var since: Int64
        var paths: Set<[String]>
        /// The last version that touched each key (none: not touched since ``since``).
        var last: [String: Int64] = [:]

        /// The most keys remembered; beyond, the record starts again from the commit.
        static let maxKeys = 65_536
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
    /// The most versions the store's history keeps: a view's waiter further
    /// behind is answered (a reset) rather than parked at the head.
    private let historyVersions: Int64
    private let state = Mutex(State())
    private let ticker: Ticker
    private let answers: WaiterAnswers

    init(router: CommitRouter, computer: ChangeComputer, metrics: ServiceMetrics, tick: Duration = .milliseconds(100)) {
        self.router = router
        self.historyVersions = computer.views.history.versions
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
        var parked = parked
        let epochs = parked.epochs
        let deadline = parked.deadline
        let exchange = parked.exchange
        let result: (ParkResult, UInt64?) = state.withLock { state in
            if state.shuttingDown { return (.shuttingDown, nil) }
            for list in parked.since.keys where state.subscriptions[list] == nil {
                state.subscriptions[list] = router.commits(of: list).subscribe(onNext: { [weak self] commits in
                    for commit in commits { self?.committed(commit) }
                })
            }
            for (list, version) in parked.since {
                guard let head = router.head(of: list) else { continue }
                if case .one = parked.watch, let view = parked.views[list] {
                    track(view, of: list, head: head.version, in: &state)
                }
                if head.version != version || (epochs[list].map { $0 != head.epoch } ?? false) {
                    if let heard = unchangedView(parked, of: list, since: version, head: head, in: state) {
                        // Parked at the last commit heard: those after it, still on their way
                        // to the hub, wake it as any commit does.
                        if heard > version {
                            parked = parked.parkedAgain(
                                since: [list: heard], sameSince: [list: parked.sameSince[list] ?? version])
                        }
                        continue
                    }
                    unsubscribeUnwatched(parked.since.keys, keys: parked.viewKeys, in: &state)
                    return (.changed, nil)
                }
            }
            let since = parked.since
            var watches: [String: Int64] = [:]
            for (list, version) in since {
                if case .one = parked.watch, let view = parked.views[list], let (key, watch) = ViewWatch.key(list, view)
                {
                    watches[key] = version
                    if state.viewWatches[list]?[key] == nil {
                        state.watchPaths[list, default: [:]][watch.path, default: 0] += 1
                    }
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

    /// Starts recording which commits touch `view`'s watch key on `list`
    /// (its condition path), if not recorded yet: from `head`, the version the
    /// router knows (a commit after it is heard; one before it is not asked about).
    private func track(_ view: ViewSpec, of list: Identifier, head: Int64, in state: inout State) {
        guard let (_, watch) = ViewWatch.key(list, view) else { return }
        if var touches = state.touches[list] {
            guard !touches.paths.contains(watch.path) else { return }
            // A new path: its keys were not looked at before now.
            touches.paths.insert(watch.path)
            touches.since = max(touches.since, head, state.heard[list]?.last ?? head)
            state.touches[list] = touches
        } else {
            state.touches[list] = Touches(since: max(head, state.heard[list]?.last ?? head), paths: [watch.path])
        }
    }

    /// Whether the view `parked` follows on `list` is known to be the same
    /// from `since` to the last commit the hub heard: every commit after
    /// `since` up to it was heard, in order, and none touched the view's
    /// watch key. Returns that commit's version then (the commits after it,
    /// up to `head`, are still on their way to the hub), else nil.
    private func unchangedView(_ parked: Parked, of list: Identifier, since: Int64, head: ListHead, in state: State)
        -> Int64?
    {
        guard case .one = parked.watch, let view = parked.views[list], let (key, _) = ViewWatch.key(list, view),
            since < head.version, head.version - since <= historyVersions,
            parked.epochs[list].map({ $0 == head.epoch }) ?? true,
            let heard = state.heard[list], heard.last >= since, heard.last <= head.version,
            heard.inOrderSince <= since,
            let touches = state.touches[list], touches.since <= since, (touches.last[key] ?? .min) <= since
        else { return nil }
        return heard.last
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
            // The paths of the list's view watches and tracked views: O(paths), not a look at every view.
            var paths = Set<[String]>()
            if let counted = state.watchPaths[commit.list] { paths.formUnion(counted.keys) }
            if let touches = state.touches[commit.list] { paths.formUnion(touches.paths) }
            let touched = commit.deleted || paths.isEmpty ? nil : Self.touchedKeys(of: commit, paths: paths)
            if let watches = state.viewWatches[commit.list] {
                if commit.deleted {
                    keys += Array(watches.keys)
                } else if let touched {
                    keys += Self.woken(watches, touched: touched)
                }
            }
            record(touched, of: commit, in: &state)
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
                            // The same since an earlier version, when it parked at the head so.
                            let same = min(waiter.payload.sameSince[list] ?? group.since, group.since)
                            waiter.payload = waiter.payload.parkedAgain(
                                since: [list: commit.version - 1], sameSince: [list: same])
                            return waiter
                        }
                        woken.append((since: commit.version - 1, waiters: restamped))
                    }
                }
                groups = woken
            }
            unsubscribeUnwatched([commit.list], keys: Array(keys.dropFirst()), in: &state)
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
            unsubscribeUnwatched(waiter.payload.since.keys, keys: waiter.payload.viewKeys, in: &state)
        }
    }

    private func expireDue() {
        let now = ticker.currentTick
        let expired = state.withLock { state in
            let expired = state.table.expire(through: now)
            for waiter in expired {
                unsubscribeUnwatched(waiter.payload.since.keys, keys: waiter.payload.viewKeys, in: &state)
            }
            return expired
        }
        for waiter in expired { answers.unchanged(waiter.payload) }
    }

    /// Forgets the view watch keys of `lists` no waiter watches any more
    /// (only `keys`: those that may have lost their waiters, so a commit or
    /// a park costs the views it concerns, not a look at every view), and
    /// unsubscribes from lists nothing watches.
    private func unsubscribeUnwatched(
        _ lists: some Sequence<Identifier>, keys: [String], in state: inout State
    ) {
        for list in lists {
            if state.viewWatches[list] != nil {
                // Only the keys named, in place: a filter over every watch, or a copy of
                // them, would cost O(views) per call.
                for key in keys where !state.table.isWatched(key) {
                    guard let removed = state.viewWatches[list]?.removeValue(forKey: key) else { continue }
                    state.watchPaths[list]?[removed.path]? -= 1
                    if state.watchPaths[list]?[removed.path] == 0 { state.watchPaths[list]?[removed.path] = nil }
                }
                if state.viewWatches[list]?.isEmpty == true {
                    state.viewWatches[list] = nil
                    state.watchPaths[list] = nil
                }
            }
            guard !state.table.isWatched(list.rawValue), state.viewWatches[list] == nil else { continue }
            state.subscriptions.removeValue(forKey: list)?.dispose()
            // Unsubscribed, the hub hears none of its commits: what it knew of their order ends here.
            state.heard[list] = nil
            state.touches[list] = nil
        }
    }

    /// The view watch keys of `commit`'s list that it may have changed: those
    /// whose condition a touched item held before or after, or all of them when
    /// a section was inserted, deleted, moved or updated (a view without
    /// `group` has the list's sections) or the commit has no recorded change.
    /// - Complexity: O(k · p) for k touched items and p distinct condition paths.
    static func woken(_ watches: [String: ViewWatch], by commit: Commit) -> [String] {
        woken(watches, touched: touchedKeys(of: commit, paths: Set(watches.values.map(\.path))))
    }

    /// The keys of `watches` among those a commit touched (all of them when it touched every key).
    private static func woken(_ watches: [String: ViewWatch], touched: (all: Bool, keys: [String])) -> [String] {
        touched.all ? Array(watches.keys) : touched.keys.filter { watches[$0] != nil }
    }

    /// Records which watch keys `commit` touched (`touched`, for the list's
    /// tracked paths) in the list's ``Touches``.
    /// - Complexity: O(k) for the k keys touched: the record is changed in
    ///   place (a copy of it would cost every key it remembers, at every commit).
    private func record(_ touched: (all: Bool, keys: [String])?, of commit: Commit, in state: inout State) {
        guard let remembered = state.touches[commit.list]?.last.count else { return }
        guard !commit.deleted, let touched, !touched.all, remembered + touched.keys.count <= Touches.maxKeys
        else {
            // Every key touched (or too many to remember): nothing is known unchanged before this commit.
            let since = max(state.touches[commit.list]?.since ?? .min, commit.version)
            state.touches[commit.list]?.last = [:]
            state.touches[commit.list]?.since = since
            return
        }
        for key in touched.keys {
            let last = max(state.touches[commit.list]?.last[key] ?? .min, commit.version)
            state.touches[commit.list]?.last[key] = last
        }
    }

    /// The watch keys of `paths` that `commit` may have changed: for each
    /// path, the value each touched item held there before and after; `all`
    /// when a section was inserted, deleted, moved or updated (a view without
    /// `group` has the list's sections) or the commit has no recorded change.
    /// - Complexity: O(k · p) for k touched items and p paths.
    static func touchedKeys(of commit: Commit, paths: Set<[String]>) -> (all: Bool, keys: [String]) {
        guard let change = commit.change else { return (true, []) }
        func sectionOrder(_ sections: CondensedListSections) -> [String] {
            sections.map { section in
                switch section.model {
                case .element(let entry): "s" + entry.id + "\u{1}" + entry.model.text
                case .run(let id, let count): "r\(id):\(count)"
                }
            }
        }
        if sectionOrder(change.old) != sectionOrder(change.new) { return (true, []) }
        var touched: [String] = []
        for side in [change.old, change.new] {
            for section in side {
                for item in section.items {
                    guard case .element(let entry) = item,
                        let model = try? JSONValue(
                            parsing: Array(entry.model.text.utf8), limits: JSONLimits(maxDepth: 512, maxBytes: .max))
                    else { continue }
                    for path in paths {
                        guard let value = model.value(atPath: path) else { continue }
                        touched.append(ViewWatch(path: path, value: value.canonicalText).key(commit.list))
                    }
                }
            }
        }
        return (false, touched)
    }

    /// Answers a `POST /changes` waiter with every watched list that moved on.
    /// (`mayPark`: parks it again when no list moved on, as a view's may not have.)
    func answerMany(_ waiter: Parked, mayPark: Bool) async { await answers.many(waiter, mayPark: mayPark) }
}
