import Synchronization

/// Collects subscriptions and disposes them when the bag is released.
///
/// Store one in the owner of the subscriptions (a connection, a hub); when the owner
/// goes away, so do its subscriptions. Safe to use from any thread.
public final class DisposeBag: Sendable {
    private struct State {
        var items: [any Disposable] = []
        var disposed = false
    }

    private let state = Mutex(State())

    /// Creates an empty bag.
    public init() {}

    /// Adds a disposable; if the bag has already been emptied by `dispose()`, disposes it at once.
    public func insert(_ disposable: any Disposable) {
        let disposeNow = state.withLock { state -> Bool in
            if state.disposed { return true }
            state.items.append(disposable)
            return false
        }
        if disposeNow { disposable.dispose() }
    }

    /// Disposes everything in the bag now; later insertions are disposed at once.
    public func dispose() {
        let items = state.withLock { state -> [any Disposable] in
            state.disposed = true
            let items = state.items
            state.items = []
            return items
        }
        for item in items { item.dispose() }
    }

    deinit {
        let items = state.withLock { $0.items }
        for item in items { item.dispose() }
    }
}
