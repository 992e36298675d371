import ListView
import ListWire
import ReactiveCore

extension ListClient {
    /// The start of a single-list follow with a ``FollowOptions/snapshotStore``: the state
    /// kept there, if any, is taken by `machine` and emitted at once (as `.snapshot`, or
    /// through ``FollowOptions/onRestored``). Returns whether a state was restored. A
    /// store that fails is reported and read as empty.
    func restore(
        _ machine: inout FollowMachine, options: FollowOptions, observer: AnyObserver<FollowUpdate>
    ) async -> Bool {
        guard let store = options.snapshotStore else { return false }
        let stored: ListState?
        do {
            stored = try await store.load(list: machine.list, view: machine.view)
        } catch {
            options.onSnapshotStoreFailure?(
                SnapshotStoreFailure(list: machine.list, view: machine.view, operation: .load, error: error))
            return false
        }
        guard let stored, !Task.isCancelled, let update = machine.restore(stored) else { return false }
        if options.onRestored?(stored) != true { observer.onNext(update) }
        return true
    }

    /// The start of a multi-list follow with a ``FollowOptions/snapshotStore``: each
    /// list's stored state, in id order, taken by its machine and emitted as a `.snapshot`.
    /// Returns whether any was restored.
    func restore(
        _ machines: inout [String: FollowMachine], options: FollowOptions, observer: AnyObserver<ListUpdate>
    ) async -> Bool {
        guard options.snapshotStore != nil else { return false }
        var restored = false
        for list in machines.keys.sorted() {
            guard var machine = machines[list] else { continue }
            let single = AnyObserver<FollowUpdate> { event in
                if case .next(let update) = event { observer.onNext(ListUpdate(list: list, update: update)) }
            }
            if await restore(&machine, options: options, observer: single) { restored = true }
            machines[list] = machine
        }
        return restored
    }

    /// Keeps the state after `update` in the ``FollowOptions/snapshotStore`` (or forgets
    /// the list when it was deleted), off the follow's path (``SnapshotKeeper``). A store
    /// that fails is reported; the follow goes on.
    func keep(_ update: FollowUpdate, of machine: FollowMachine, options: FollowOptions) async {
        await keep(update, list: machine.list, view: machine.view, options: options)
    }

    /// ``keep(_:of:options:)`` for `view` of `list`.
    func keep(_ update: FollowUpdate, list: String, view: ViewSpec, options: FollowOptions) async {
        guard let store = options.snapshotStore else { return }
        // A change with no stages at a view's new version is kept too: the version moved on.
        SnapshotKeeper.shared.keep(
            update.state.map { .save($0) } ?? .remove, list: list, view: view, in: store,
            interval: options.snapshotInterval, onFailure: options.onSnapshotStoreFailure)
    }
}
