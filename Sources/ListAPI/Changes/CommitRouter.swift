import Dispatch
import ListModel
import ListStore
import ReactiveCore
import Synchronization

/// Carries the store's commits to whoever follows a list: the router keeps
/// each list's latest head and hands each commit only to the observers of its
/// own list (``commits(of:)``, an observable of the reactive core).
///
/// Concurrency: ``accept(_:)`` runs on the store's thread that committed,
/// before the writers are answered, and does only what must precede the
/// answer: it records the head and takes the list's observers, under the
/// router's lock, and queues the commit. The observers are called on the
/// fan-out queue (one serial queue, so a list's commits reach them in order),
/// never on the store's thread: waking 10,000 long-polls does not delay the
/// write's own answer.
///
/// Commits that arrive while the fan-out queue is busy are handed on together,
/// one batch per list in commit order: followers of a list written hundreds
/// of times a second do the work of one wake-up per batch, not one per commit,
/// and the fan-out never falls further behind the writer than one batch.
///
/// The head is recorded *before* a commit is dispatched, in the same lock
/// that takes the observers, so a follower that subscribes and then reads
/// ``head(of:)`` never misses a commit: either its subscription was taken
/// with the commit, or the head it reads already includes it. (It may see a
/// commit both ways; followers treat a commit they already know as a no-op.)
public final class CommitRouter: Sendable {
    private struct Route {
        var epoch: String
        var version: Int64
        var observers: [UInt64: AnyObserver<[Commit]>] = [:]
    }

    /// Commits accepted and not yet handed on, with the observers each had.
    private struct Pending {
        var commits: [(commit: Commit, observers: [UInt64: AnyObserver<[Commit]>])] = []
        /// Whether a drain is queued on the fan-out queue.
        var scheduled = false
    }

    private struct State {
        var routes: [Identifier: Route] = [:]
        var nextToken: UInt64 = 1
    }

    private let state = Mutex(State())
    private let pending = Mutex(Pending())
    /// Where observers are called: off the store's thread, in commit order.
    private let fanOut = DispatchQueue(label: "listd.fan-out", qos: .userInitiated)
    /// Called with every commit on the store's thread, before the write is
    /// answered (see ``init(onCommit:)``).
    private let onCommit: (@Sendable (Commit) -> Void)?

    /// Creates a router. `onCommit`, if given, hears every commit on the
    /// store's thread before the write is answered (a cache that must not
    /// serve a deleted list's snapshot once its deletion is acknowledged); it
    /// must return at once.
    public init(onCommit: (@Sendable (Commit) -> Void)? = nil) {
        self.onCommit = onCommit
    }

    /// Feeds a store's commits to the router; cancel the result to stop.
    public func connect(to store: any Store) -> CommitSubscription {
        store.onCommit { [weak self] commit in self?.accept(commit) }
    }

    /// Waits until every commit accepted so far has reached its observers (for tests and shutdown).
    public func drain() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            fanOut.async { continuation.resume() }
        }
    }

    /// The latest head the router has seen for `list`, or nil if it has seen
    /// none since it started (or the list was deleted).
    public func head(of list: Identifier) -> ListHead? {
        state.withLock { state in
            state.routes[list].map { ListHead(id: list, epoch: $0.epoch, version: $0.version) }
        }
    }

    /// Records a head read from the store. The router's own knowledge wins
    /// unless the store's is newer within the same epoch: the router hears
    /// every commit (and every deletion) of this process, so a differing
    /// epoch means the read was older than what the router already saw.
    public func note(_ head: ListHead) {
        state.withLock { state in
            guard var route = state.routes[head.id], route.version >= 0 else {
                let observers = state.routes[head.id]?.observers ?? [:]
                state.routes[head.id] = Route(epoch: head.epoch, version: head.version, observers: observers)
                return
            }
            if route.epoch == head.epoch && route.version < head.version {
                route.version = head.version
                state.routes[head.id] = route
            }
        }
    }

    /// The commits of one list only, in batches (in commit order; see the type's notes).
    public func commits(of list: Identifier) -> Observable<[Commit]> {
        Observable.create { [weak self] observer in
            guard let self else {
                observer.on(.completed)
                return Disposables.create()
            }
            let token = self.state.withLock { state in
                let token = state.nextToken
                state.nextToken += 1
                var route = state.routes[list] ?? Route(epoch: "", version: -1)
                route.observers[token] = observer
                state.routes[list] = route
                return token
            }
            return Disposables.create { [weak self] in
                self?.state.withLock { state in
                    state.routes[list]?.observers[token] = nil
                    if let route = state.routes[list], route.observers.isEmpty, route.version < 0 {
                        state.routes[list] = nil
                    }
                }
            }
        }
    }

    /// Records `commit`'s head and hands it to its list's observers on the
    /// fan-out queue. Called by the store (see ``connect(to:)``) on the thread
    /// that committed; the head is current when this returns.
    public func accept(_ commit: Commit) {
        onCommit?(commit)
        let observers = state.withLock { state -> [UInt64: AnyObserver<[Commit]>] in
            var route = state.routes[commit.list] ?? Route(epoch: commit.epoch, version: commit.version)
            let observers = route.observers
            if commit.deleted {
                // Forget the head; keep observers so they can learn of the deletion.
                route.epoch = ""
                route.version = -1
                state.routes[commit.list] = route.observers.isEmpty ? nil : route
            } else {
                if route.epoch != commit.epoch || route.version < commit.version {
                    route.epoch = commit.epoch
                    route.version = commit.version
                }
                state.routes[commit.list] = route
            }
            return observers
        }
        guard !observers.isEmpty else { return }
        let schedule = pending.withLock { pending -> Bool in
            pending.commits.append((commit, observers))
            guard !pending.scheduled else { return false }
            pending.scheduled = true
            return true
        }
        if schedule { fanOut.async { [weak self] in self?.handOn() } }
    }

    /// On the fan-out queue: hands every queued commit to its observers, a
    /// batch per list, until none is queued.
    private func handOn() {
        while true {
            let queued = pending.withLock { pending -> [(commit: Commit, observers: [UInt64: AnyObserver<[Commit]>])] in
                if pending.commits.isEmpty { pending.scheduled = false }
                defer { pending.commits.removeAll(keepingCapacity: true) }
                return pending.commits
            }
            guard !queued.isEmpty else { return }
            var lists: [Identifier] = []
            var batches: [Identifier: (commits: [Commit], observers: [UInt64: AnyObserver<[Commit]>])] = [:]
            for (commit, observers) in queued {
                if batches[commit.list] == nil {
                    lists.append(commit.list)
                    batches[commit.list] = ([commit], observers)
                } else {
                    batches[commit.list]?.commits.append(commit)
                    batches[commit.list]?.observers.merge(observers) { first, _ in first }
                }
            }
            for list in lists {
                guard let batch = batches[list] else { continue }
                for observer in batch.observers.values { observer.on(.next(batch.commits)) }
            }
        }
    }
}
