import ListModel
import ListStore
import ListView
import ListWire
import Synchronization

/// The views followed lately, each kept at a recent version (``ViewState``)
/// within a memory budget, so a view's snapshot and its answers cost what
/// changed since the view's last use plus the view's own size, not the list's.
///
/// A view's first use reads its candidate rows once (only the items holding
/// an indexed condition's value when a declared index serves one, else every
/// item); later uses move it forward by what history says was touched since
/// (``Store/touched(_:since:)``). An answer from V reads what was touched since V,
/// brings the view to that span's end, shows it as it was at V, and diffs the two
/// (O(w) for windows of w members).
///
/// Concurrency: the store calls are async; the CPU work runs on the caller's
/// ``CatchUpStager`` thread, off the cooperative pool. The table is under a
/// mutex; two answers of one view may compute at once, and the newer state is kept.
final class LiveViews: Sendable {
    struct Key: Hashable, Sendable {
        var list: Identifier
        var view: ViewSpec
    }

    private struct Entry {
        var state: ViewState
        var bytes: Int
        var used: UInt64
    }

    private struct Table {
        var entries: [Key: Entry] = [:]
        var bytes = 0
        var clock: UInt64 = 0
        var builds = 0
    }

    private let store: any Store
    private let stager: CatchUpStager
    private let budget: Int
    private let table = Mutex(Table())

    /// - Parameter budget: the most bytes kept views may hold (roughly); the
    ///   least recently used views are dropped beyond it.
    init(store: any Store, stager: CatchUpStager, budget: Int) {
        self.store = store
        self.stager = stager
        self.budget = budget
    }

    /// How many views are kept, and roughly their bytes.
    var usage: (views: Int, bytes: Int) { table.withLock { ($0.entries.count, $0.bytes) } }
    /// How many views were built from the list's rows (for tests).
    var builds: Int { table.withLock { $0.builds } }

    /// The view now: its state at the list's current version.
    func current(_ key: Key) async throws(StoreError) -> ViewState {
        for _ in 0..<4 {
            var state = try await cachedOrBuilt(key)
            guard let span = try await store.touched(key.list, since: state.head.version),
                span.head.epoch == state.head.epoch
            else {
                drop(key)
                continue
            }
            if span.head.version > state.head.version {
                state = try await advanced(state, by: span)
            }
            keep(state, for: key)
            return state
        }
        return try await built(key)
    }

    /// The view's answer from `from`: its net change to now, or a reset (the
    /// view's whole snapshot) when `from` is outside the kept history or above
    /// the current version, `epoch` is not the list's, or `maxChanges` is set
    /// (asked only when the change is larger). `nil` when writes kept landing
    /// between its reads: the caller answers from one read of the whole list.
    func answer(_ key: Key, from: Int64, epoch: String?, maxChanges: Int?) async throws(StoreError)
        -> EncodedChangeAnswer?
    {
        for _ in 0..<4 {
            guard let span = try await store.touched(key.list, since: from),
                epoch.map({ $0 == span.head.epoch }) ?? true, maxChanges == nil
            else {
                let state = try await current(key)
                return await stager.run { .reset(state, from: from) }
            }
            var state = try await cachedOrBuilt(key)
            if state.head.epoch != span.head.epoch || state.head.version > span.head.version {
                // Built or moved past the span's end meanwhile: read the span again.
                if state.head.epoch != span.head.epoch { drop(key) }
                continue
            }
            if state.head.version < from {
                // Older than the version asked about: first its own span.
                guard let own = try await store.touched(key.list, since: state.head.version),
                    own.head.epoch == state.head.epoch
                else {
                    drop(key)
                    continue
                }
                state = try await advanced(state, by: own)
                keep(state, for: key)
                if state.head.version != span.head.version { continue }
            } else if state.head.version < span.head.version {
                // At or after `from`: the span holds everything touched since.
                state = try await advanced(state, by: span)
                keep(state, for: key)
            }
            if from == state.head.version { return .unchanged(state.head, from: from) }
            let now = state
            let result = await stager.run { () -> Result<EncodedChangeAnswer, StoreError> in
                do throws(StoreError) {
                    let old = try now.before(span)
                    return .success(.view(from: old.viewSections, at: from, to: now.viewSections, now.head))
                } catch {
                    return .failure(error)
                }
            }
            return try result.get()
        }
        return nil
    }

    private func cachedOrBuilt(_ key: Key) async throws(StoreError) -> ViewState {
        if let state = table.withLock({ table -> ViewState? in
            guard var entry = table.entries[key] else { return nil }
            table.clock += 1
            entry.used = table.clock
            table.entries[key] = entry
            return entry.state
        }) {
            return state
        }
        return try await built(key)
    }

    private func built(_ key: Key) async throws(StoreError) -> ViewState {
        let conditions = key.view.conditions.map { ItemQuery.Condition(path: $0.path, value: $0.value) }
        let rows = try await store.viewRows(of: key.list, matching: conditions)
        let view = key.view
        let state = try await stager.run { () -> Result<ViewState, StoreError> in
            do throws(StoreError) { return .success(try ViewState(view: view, rows: rows)) } catch {
                return .failure(error)
            }
        }.get()
        table.withLock { $0.builds += 1 }
        keep(state, for: key)
        return state
    }

    private func advanced(_ state: ViewState, by span: TouchedSpan) async throws(StoreError) -> ViewState {
        try await stager.run { () -> Result<ViewState, StoreError> in
            var moved = state
            do throws(StoreError) {
                try moved.advance(by: span)
                return .success(moved)
            } catch {
                return .failure(error)
            }
        }.get()
    }

    /// Keeps `state` unless a newer one of the view is kept; drops the least
    /// recently used views while over the budget (never the one just kept).
    private func keep(_ state: ViewState, for key: Key) {
        let bytes = state.approximateBytes
        table.withLock { table in
            if let existing = table.entries[key], existing.state.head.epoch == state.head.epoch,
                existing.state.head.version > state.head.version
            {
                return
            }
            table.clock += 1
            if let old = table.entries.updateValue(Entry(state: state, bytes: bytes, used: table.clock), forKey: key) {
                table.bytes -= old.bytes
            }
            table.bytes += bytes
            guard table.bytes > budget else { return }
            for (victim, entry) in table.entries.sorted(by: { $0.value.used < $1.value.used }) {
                guard table.bytes > budget else { break }
                guard victim != key else { continue }
                table.entries[victim] = nil
                table.bytes -= entry.bytes
            }
        }
    }

    private func drop(_ key: Key) {
        table.withLock { table in
            if let old = table.entries.removeValue(forKey: key) { table.bytes -= old.bytes }
        }
    }

    /// Drops every kept view of `list` (deleted).
    func forget(_ list: Identifier) {
        table.withLock { table in
            for key in table.entries.keys where key.list == list {
                if let old = table.entries.removeValue(forKey: key) { table.bytes -= old.bytes }
            }
        }
    }
}
