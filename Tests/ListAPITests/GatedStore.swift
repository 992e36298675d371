import ListModel
import ListStore
import Synchronization

/// A ``Store`` in front of a real one that counts the calls the service makes
/// and can hold them, the way a busy store keeps a call queued: a held call
/// waits (ignoring its task's cancellation, as a queued job does) until
/// ``release(_:)``, then goes on to the real store, which skips it with
/// `cancelled` if its task was cancelled meanwhile. It can also fail a call
/// instead of passing it on.
final class GatedStore: Store {
    /// The calls that can be counted, held or failed.
    enum Call: Hashable, Sendable, CustomStringConvertible {
        case head, snapshot, changes, recordAnswer, snapshotsAtVersions

        var description: String {
            switch self {
            case .head: "head"
            case .snapshot: "snapshot"
            case .changes: "changes"
            case .recordAnswer: "recordIdempotentAnswer"
            case .snapshotsAtVersions: "snapshots(of:at:)"
            }
        }
    }

    private struct State {
        var holding: Set<Call> = []
        var held: [Call: [CheckedContinuation<Void, Never>]] = [:]
        var calls: [Call: Int] = [:]
        var cancelled: [Call: Int] = [:]
        var failures: [Call: [StoreError]] = [:]
    }

    let inner: any Store
    private let state = Mutex(State())

    init(_ inner: any Store) {
        self.inner = inner
    }

    /// Holds every later `call` until ``release(_:)``.
    func hold(_ call: Call) {
        state.withLock { _ = $0.holding.insert(call) }
    }

    /// Lets the held `call`s go on and stops holding new ones.
    func release(_ call: Call) {
        let held = state.withLock { state in
            state.holding.remove(call)
            return state.held.removeValue(forKey: call) ?? []
        }
        for continuation in held { continuation.resume() }
    }

    /// Lets the `call`s held now go on, and keeps holding new ones.
    func resumeHeld(_ call: Call) {
        let held = state.withLock { $0.held.removeValue(forKey: call) ?? [] }
        for continuation in held { continuation.resume() }
    }

    /// Fails the next `call` with `error` (after holding it, if held) instead of passing it on.
    func failNext(_ call: Call, with error: StoreError) {
        state.withLock { $0.failures[call, default: []].append(error) }
    }

    /// How many `call`s the service made.
    func calls(_ call: Call) -> Int { state.withLock { $0.calls[call] ?? 0 } }

    /// How many `call`s are held now.
    func held(_ call: Call) -> Int { state.withLock { $0.held[call]?.count ?? 0 } }

    /// How many `call`s the real store refused because their task was cancelled.
    func cancelled(_ call: Call) -> Int { state.withLock { $0.cancelled[call] ?? 0 } }

    private func pass<T>(_ call: Call, _ body: () async throws(StoreError) -> T) async throws(StoreError) -> T {
        let failure = state.withLock { state -> StoreError? in
            state.calls[call, default: 0] += 1
            guard var failures = state.failures[call], !failures.isEmpty else { return nil }
            let failure = failures.removeFirst()
            state.failures[call] = failures
            return failure
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let wait = state.withLock { state -> Bool in
                guard state.holding.contains(call) else { return false }
                state.held[call, default: []].append(continuation)
                return true
            }
            if !wait { continuation.resume() }
        }
        if let failure { throw failure }
        do {
            return try await body()
        } catch {
            if error.kind == .cancelled { state.withLock { $0.cancelled[call, default: 0] += 1 } }
            throw error
        }
    }

    // MARK: Store

    func head(of list: Identifier) async throws(StoreError) -> ListHead {
        try await pass(.head) { () throws(StoreError) in try await inner.head(of: list) }
    }

    func snapshot(of list: Identifier) async throws(StoreError) -> ListSnapshot {
        try await pass(.snapshot) { () throws(StoreError) in try await inner.snapshot(of: list) }
    }

    func changes(of list: Identifier, since version: Int64) async throws(StoreError) -> ChangeSince {
        try await pass(.changes) { () throws(StoreError) in try await inner.changes(of: list, since: version) }
    }

    func createList(id: Identifier?, name: String, sections: [NewSection], indexes: [[String]])
        async throws(StoreError) -> ListSnapshot
    {
        try await inner.createList(id: id, name: name, sections: sections, indexes: indexes)
    }

    func lists(limit: Int, after: Identifier?, in range: ClosedRange<String>?) async throws(StoreError) -> [ListSummary]
    {
        try await inner.lists(limit: limit, after: after, in: range)
    }

    func apply(_ ops: [ListOperation], to list: Identifier, expectedVersion: Int64?) async throws(StoreError)
        -> WriteResult
    {
        try await inner.apply(ops, to: list, expectedVersion: expectedVersion)
    }

    func replace(
        _ list: Identifier, name: String?, sections: [NewSection], indexes: [[String]], expectedVersion: Int64?
    ) async throws(StoreError) -> WriteResult {
        try await inner.replace(
            list, name: name, sections: sections, indexes: indexes, expectedVersion: expectedVersion)
    }

    func deleteList(_ list: Identifier, expectedVersion: Int64?) async throws(StoreError) {
        try await inner.deleteList(list, expectedVersion: expectedVersion)
    }

    func idempotencyRecord(caller: String, key: String) async throws(StoreError) -> IdempotencyRecord? {
        try await inner.idempotencyRecord(caller: caller, key: key)
    }

    func recordIdempotentAnswer(_ claim: IdempotencyClaim, _ answer: StoredAnswer) async throws(StoreError)
        -> IdempotencyRecord?
    {
        try await pass(.recordAnswer) { () throws(StoreError) in try await inner.recordIdempotentAnswer(claim, answer) }
    }

    func snapshots(of list: Identifier, at versions: Set<Int64>) async throws(StoreError) -> VersionedSnapshots {
        try await pass(.snapshotsAtVersions) { () throws(StoreError) in
            try await inner.snapshots(of: list, at: versions)
        }
    }

    func items(of list: Identifier, query: ItemQuery) async throws(StoreError) -> ItemPage {
        try await inner.items(of: list, query: query)
    }

    func viewRows(of list: Identifier, matching conditions: [ItemQuery.Condition]) async throws(StoreError)
        -> ViewRows
    {
        try await inner.viewRows(of: list, matching: conditions)
    }

    func touched(_ list: Identifier, since version: Int64) async throws(StoreError) -> TouchedSpan? {
        try await inner.touched(list, since: version)
    }

    func indexes(of list: Identifier) async throws(StoreError) -> ListIndexes {
        try await inner.indexes(of: list)
    }

    func addIndex(_ path: [String], to list: Identifier, progress: @escaping @Sendable (Int, Int) -> Void)
        async throws(StoreError) -> Bool
    {
        try await inner.addIndex(path, to: list, progress: progress)
    }

    func dropIndex(_ path: [String], from list: Identifier) async throws(StoreError) -> Bool {
        try await inner.dropIndex(path, from: list)
    }

    func setTextIndex(_ enabled: Bool, on list: Identifier, progress: @escaping @Sendable (Int, Int) -> Void)
        async throws(StoreError) -> Bool
    {
        try await inner.setTextIndex(enabled, on: list, progress: progress)
    }

    func onCommit(_ observer: @escaping @Sendable (Commit) -> Void) -> CommitSubscription {
        inner.onCommit(observer)
    }
}
