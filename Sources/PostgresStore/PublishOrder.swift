import Foundation
import ListModel
import ListStore
import Synchronization

/// Keeps this instance's own commits of a list in version order on the feed,
/// although several writer sessions commit and publish them.
///
/// Two sessions writing one list are serialised by its row lock, but the one
/// that committed first may be descheduled between its `COMMIT` and its
/// publish, and the later one would publish first (seen at load: version 81
/// before 74...80). A session registers its commits *before* `COMMIT` and,
/// after it, waits until no session of this instance still holds an earlier
/// version of the same list unpublished; then it publishes and unregisters.
///
/// The wait never deadlocks: a registered earlier version belongs to a
/// transaction that committed before this one took the row lock (strict
/// two-phase locking), so it only has to publish, and its own waits are for
/// still earlier commits. A bounded wait (``patience``) guards against a
/// session that dies between its `COMMIT` and its publish.
///
/// Other instances' commits come from the ``CommitListener`` and are not
/// ordered against these: the service takes a list's head as the highest
/// version heard and uses a commit's recorded change only when its `from` is
/// the follower's version, so a late commit is harmless.
final class PublishOrder: Sendable {
    private struct State {
        /// Versions registered and not yet published, per list.
        var pending: [Identifier: [Int64]] = [:]
    }

    private let state = Mutex(State())
    private let condition = NSCondition()
    /// The longest a session waits for an earlier one to publish.
    let patience: TimeInterval

    init(patience: TimeInterval = 2) {
        self.patience = patience
    }

    /// Registers commits about to be committed; call before `COMMIT`.
    func register(_ commits: [Commit]) {
        guard !commits.isEmpty else { return }
        state.withLock { state in
            for commit in commits { state.pending[commit.list, default: []].append(commit.version) }
        }
    }

    /// Forgets commits registered by ``register(_:)`` (published or rolled back)
    /// and wakes the sessions waiting on them.
    func unregister(_ commits: [Commit]) {
        guard !commits.isEmpty else { return }
        // Changed under the condition's lock, so a waiter between its check
        // and its wait cannot miss the broadcast.
        condition.lock()
        defer { condition.unlock() }
        state.withLock { state in
            for commit in commits {
                guard var versions = state.pending[commit.list],
                    let at = versions.firstIndex(of: commit.version)
                else { continue }
                versions.remove(at: at)
                state.pending[commit.list] = versions.isEmpty ? nil : versions
            }
        }
        condition.broadcast()
    }

    /// Waits until every earlier version of the lists in `commits` that a
    /// session of this instance registered has been published, or until
    /// ``patience`` runs out. - Returns: whether it waited in vain.
    @discardableResult
    func waitForEarlier(_ commits: [Commit]) -> Bool {
        guard !commits.isEmpty else { return false }
        let deadline = Date(timeIntervalSinceNow: patience)
        condition.lock()
        defer { condition.unlock() }
        while hasEarlier(commits) {
            if !condition.wait(until: deadline) { return hasEarlier(commits) }
        }
        return false
    }

    /// Whether another session holds a version unpublished that is earlier
    /// than the first of `commits` for its list (a batch's own commits of one
    /// list follow each other, and are registered too).
    private func hasEarlier(_ commits: [Commit]) -> Bool {
        var first: [Identifier: Int64] = [:]
        for commit in commits { first[commit.list] = min(first[commit.list] ?? .max, commit.version) }
        return state.withLock { state in
            first.contains { list, version in
                state.pending[list]?.contains { $0 < version } ?? false
            }
        }
    }
}
