import ListView
import ListWire
import Synchronization

/// Writes follows' states to their snapshot stores off the follows' paths.
///
/// Each entry (a store, a list, a view) has at most one write running and one
/// state waiting: an update replaces the waiting state, so a burst of updates
/// on a large list costs one write, not one per update, and the follow never
/// waits for the disk. Writes of one entry run in order, at least `interval`
/// apart, and the last state handed over is always written.
final class SnapshotKeeper: Sendable {
    static let shared = SnapshotKeeper()

    enum Write: Sendable {
        case save(ListState)
        case remove
    }

    private struct Key: Hashable {
        let store: ObjectIdentifier
        let list: String
        let view: String
    }

    private struct Waiting {
        var write: Write
        var onFailure: (@Sendable (SnapshotStoreFailure) -> Void)?
    }

    /// The entries being written, with the write waiting for each (nil: none).
    private let entries = Mutex<[Key: Waiting?]>([:])

    /// Hands `write` over for `view` of `list` in `store`; returns at once.
    func keep(
        _ write: Write, list: String, view: ViewSpec, in store: any SnapshotStore, interval: Duration,
        onFailure: (@Sendable (SnapshotStoreFailure) -> Void)?
    ) {
        let key = Key(store: ObjectIdentifier(store), list: list, view: view.canonicalQuery)
        let start = entries.withLock { entries -> Bool in
            let idle = entries[key] == nil
            entries[key] = .some(Waiting(write: write, onFailure: onFailure))
            return idle
        }
        guard start else { return }
        Task { await drain(key, list: list, view: view, store: store, interval: interval) }
    }

    /// Writes the entry's waiting state until none waits, `interval` apart.
    private func drain(_ key: Key, list: String, view: ViewSpec, store: any SnapshotStore, interval: Duration) async {
        while true {
            let next = entries.withLock { entries -> Waiting? in
                guard let waiting = entries[key], let next = waiting else {
                    entries[key] = nil
                    return nil
                }
                entries[key] = .some(nil)
                return next
            }
            guard let next else { return }
            do {
                switch next.write {
                case .save(let state): try await store.save(state, view: view)
                case .remove: try await store.remove(list: list, view: view)
                }
            } catch {
                let operation: SnapshotStoreFailure.Operation
                if case .save = next.write { operation = .save } else { operation = .remove }
                next.onFailure?(SnapshotStoreFailure(list: list, view: view, operation: operation, error: error))
            }
            try? await Task.sleep(for: interval)
        }
    }

    /// Whether a write of `view` of `list` in `store` runs or waits (for tests).
    func isBusy(list: String, view: ViewSpec, in store: any SnapshotStore) -> Bool {
        entries.withLock { $0[Key(store: ObjectIdentifier(store), list: list, view: view.canonicalQuery)] != nil }
    }
}
