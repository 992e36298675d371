import ListStore
import ReactiveCore
import Synchronization

/// Carries the store's commits to whoever follows a list, through the reactive
/// core: the store publishes every commit on one subject; the router keeps each
/// list's latest head and hands each commit only to the observers of its own list.
///
/// The head is recorded *before* a commit is dispatched, so a follower that
/// subscribes and then reads ``head(of:)`` never misses a commit: either its
/// subscription was in place when the commit was dispatched, or the head it
/// reads already includes it. (It may see a commit both ways; followers treat
/// a commit they already know as a no-op.)
public final class CommitRouter: Sendable {
    /// Every commit of the store, in commit order.
    public let commits = PublishSubject<Commit>()

    private struct Route {
        var epoch: String
        var version: Int64
        var observers: [UInt64: AnyObserver<Commit>] = [:]
    }

    private struct State {
        var routes: [Identifier: Route] = [:]
        var nextToken: UInt64 = 1
    }

    private let state = Mutex(State())
    private let upstream = SingleAssignmentDisposable()

    /// Creates a router that dispatches what is published on ``commits``.
    public init() {
        upstream.setDisposable(commits.asObservable().subscribe(onNext: { [weak self] commit in
            self?.dispatch(commit)
        }))
    }

    deinit { upstream.dispose() }

    /// Feeds a store's commits into ``commits``; cancel the result to stop.
    public func connect(to store: any Store) -> CommitSubscription {
        store.onCommit { [commits] commit in commits.on(.next(commit)) }
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

    /// The commits of one list only.
    public func commits(of list: Identifier) -> Observable<Commit> {
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

    private func dispatch(_ commit: Commit) {
        let observers = state.withLock { state -> [AnyObserver<Commit>] in
            var route = state.routes[commit.list] ?? Route(epoch: commit.epoch, version: commit.version)
            let observers = Array(route.observers.values)
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
        for observer in observers { observer.on(.next(commit)) }
    }
}
