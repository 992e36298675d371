import Synchronization

/// Keeps an ``Store/onCommit(_:)`` observer registered until cancelled.
///
/// Cancelling is idempotent; dropping the subscription does not cancel it, so a
/// long-lived observer need not be stored.
public final class CommitSubscription: Sendable {
    private let cancelAction: Mutex<(@Sendable () -> Void)?>

    /// Creates a subscription that runs `cancel` once when cancelled.
    public init(cancel: @escaping @Sendable () -> Void) {
        self.cancelAction = Mutex(cancel)
    }

    /// Stops the observer from being called for later commits.
    public func cancel() {
        let action = cancelAction.withLock { action in
            defer { action = nil }
            return action
        }
        action?()
    }
}

/// The observers of a store's commits.
package final class CommitFeed: Sendable {
    private struct State {
        var nextToken: UInt64 = 0
        var observers: [UInt64: @Sendable (Commit) -> Void] = [:]
    }

    private let state = Mutex(State())

    package init() {}

    package func subscribe(_ observer: @escaping @Sendable (Commit) -> Void) -> CommitSubscription {
        let token = state.withLock { state in
            state.nextToken += 1
            state.observers[state.nextToken] = observer
            return state.nextToken
        }
        return CommitSubscription { [weak self] in
            _ = self?.state.withLock { $0.observers.removeValue(forKey: token) }
        }
    }

    /// Calls every observer with every commit, in order, outside the lock.
    package func publish(_ commits: [Commit]) {
        guard !commits.isEmpty else { return }
        let observers = state.withLock { state in
            state.observers.sorted { $0.key < $1.key }.map(\.value)
        }
        for commit in commits {
            for observer in observers { observer(commit) }
        }
    }
}
