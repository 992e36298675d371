import ListModel
import ListStore
import ListView
import ListWire
import Synchronization

/// The views followed lately, each kept at a recent version (``ViewState``)
/// within a memory budget, so a view's snapshot and its answers cost what
/// changed since the view's last use plus the view's window, not the list's size.
///
/// A view's first use reads its candidate rows once (only the items holding
/// an indexed condition's value when a declared index serves one, else every
/// item); later uses move it forward in place by what history says was
/// touched since (``Store/touched(_:since:)``). An answer from V reads what was
/// touched since V, brings the view to that span's end, shows its window as
/// it was at V, and diffs the two windows.
///
/// Concurrency: the store calls are async; the CPU work runs on the caller's
/// ``CatchUpStager`` thread, off the cooperative pool. Each kept view is one
/// ``ViewState`` under a mutex of its own (moved forward in place: a copy of a
/// large view would cost what the view holds); the table of views is under
/// another, never held while a view's is.
final class LiveViews: Sendable {
    struct Key: Hashable, Sendable {
        var list: Identifier
        var view: ViewSpec
    }

    /// One kept view.
    final class Kept: Sendable {
        let state: Mutex<ViewState>
        init(_ state: ViewState) { self.state = Mutex(state) }
    }

    private struct Entry {
        var kept: Kept
        var bytes: Int
        var used: UInt64
    }

    private struct Table {
        var entries: [Key: Entry] = [:]
        var bytes = 0
        var clock: UInt64 = 0
        var builds = 0
        /// Views being built, with the askers waiting for them: a hundred
        /// followers arriving at once build a view once.
        var building: [Key: [CheckedContinuation<Result<Kept, StoreError>, Never>]] = [:]
    }

    private let store: any Store
    private let stager: CatchUpStager
    private let budget: Int
    private let table = Mutex(Table())
    /// The recent commits of lists with kept views, fed by the commit router.
    private let spans: RecentSpans
    /// The list's head as the commit router knows it: an answer from the
    /// recent commits goes to it (never past it, so a follower is never
    /// ahead of the head it will next be compared with).
    private let currentHead: @Sendable (Identifier) -> ListHead?
    private let fromRecent = Atomic<Int>(0)

    /// - Parameters:
    ///   - budget: the most bytes kept views may hold (roughly); the
    ///     least recently used views are dropped beyond it.
    ///   - spans: the recent commits' touched rows: a kept view moves forward
    ///     by them when they cover its span, else by reading history.
    ///   - head: the list's latest head as the commit router knows it.
    init(
        store: any Store, stager: CatchUpStager, budget: Int, spans: RecentSpans = RecentSpans(),
        head: @escaping @Sendable (Identifier) -> ListHead? = { _ in nil }
    ) {
        self.store = store
        self.stager = stager
        self.budget = budget
        self.spans = spans
        self.currentHead = head
    }

    /// How many views are kept, and roughly their bytes.
    var usage: (views: Int, bytes: Int) { table.withLock { ($0.entries.count, $0.bytes) } }
    /// How many views were built from the list's rows (for tests and metrics).
    var builds: Int { table.withLock { $0.builds } }
    /// The store's history retention, as the recent commits know it.
    var history: (versions: Int64, age: Duration) { spans.history }
    /// How many spans were taken from the recent commits rather than read from history (for tests).
    var spansFromRecentCommits: Int { fromRecent.load(ordering: .relaxed) }

    /// The view's snapshot now: its head and its body (``ViewSnapshots/body(of:)``).
    func snapshot(_ key: Key) async throws(StoreError) -> (head: ListHead, body: [UInt8]) {
        for _ in 0..<4 {
            let kept = try await keptOrBuilt(key)
            let head = kept.state.withLock { $0.head }
            let current = try await store.head(of: key.list)
            if current.epoch != head.epoch || kept.state.withLock({ $0.isCheaperToRebuild(than: current.version) }) {
                drop(key)
                continue
            }
            guard let span = try await store.touched(key.list, since: head.version), span.head.epoch == head.epoch
            else {
                drop(key)
                continue
            }
            let made = await stager.run { () -> Result<(ListHead, [UInt8], Int), StoreError>? in
                kept.state.withLock { state in
                    guard state.head.version >= span.from else { return nil }
                    do throws(StoreError) {
                        if state.head.version < span.head.version { try state.advance(by: span) }
                        return .success((state.head, ViewSnapshots.body(of: state), state.approximateBytes))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            guard let made else { continue }
            let (now, body, bytes) = try made.get()
            account(key, kept, bytes)
            return (now, body)
        }
        // Writes kept landing between the reads: a view of its own, not kept.
        let state = try await fresh(key)
        return (state.head, await stager.run { ViewSnapshots.body(of: state) })
    }

    /// The view's answer from `from`: its net change to now, or a reset (the
    /// view's whole snapshot) when `from` is outside the kept history or above
    /// the current version, `epoch` is not the list's, or `maxChanges` is set
    /// (asked only when the change is larger). `nil` when writes kept landing
    /// between its reads: the caller answers from one read of the whole list.
    ///
    /// `reportFrom`: the version the client holds, when earlier than `from`
    /// and of the same view (the writes between left it alone); the answer
    /// is computed from `from` and says it starts at `reportFrom`.
    ///
    /// `sameSince`: a version from which the view is known to be the same
    /// through `from` (a long-poll parked there that no commit before woke):
    /// a kept view at or after it is taken as at `from`, with nothing to read.
    func answer(
        _ key: Key, from: Int64, reportFrom: Int64? = nil, sameSince: Int64? = nil, epoch: String?,
        maxChanges: Int?
    ) async throws(StoreError) -> EncodedChangeAnswer? {
        let reported = reportFrom ?? from
        // Whether spans may come from the recent commits: not after a kept
        // view turned out to be past them (moved on by a read of history).
        var recent = true
        for _ in 0..<4 {
            guard maxChanges == nil else { return try await reset(key, from: reported) }
            // Kept (or built) first: the recent commits serve only a kept view.
            let kept = try await keptOrBuilt(key)
            var read = recent ? recentSpan(key, since: from) : nil
            let fromRing = read != nil
            if read == nil { read = try await store.touched(key.list, since: from) }
            guard let span = read, epoch.map({ $0 == span.head.epoch }) ?? true else {
                return try await reset(key, from: reported)
            }
            let head = kept.state.withLock { $0.head }
            if head.epoch != span.head.epoch {
                drop(key)
                continue
            }
            if let sameSince, head.version >= sameSince, head.version < from {
                kept.state.withLock { state in
                    if state.head.version >= sameSince, state.head.version < from { state.assume(version: from) }
                }
                continue
            }
            // Far behind with only history to read: built again rather than moved forward
            // (the recent commits move it by those that concern it, at their cost).
            let stale = !fromRing && kept.state.withLock { $0.isCheaperToRebuild(than: span.head.version) }
            if stale {
                // Far behind: built again from its candidate rows rather than moved forward.
                drop(key)
                continue
            }
            if head.version < from {
                // Older than the version asked about: first its own span, then read again.
                var read = recent ? recentSpan(key, since: head.version) : nil
                if read == nil {
                    if kept.state.withLock({ $0.isCheaperToRebuild(than: from) }) {
                        drop(key)
                        continue
                    }
                    read = try await store.touched(key.list, since: head.version)
                }
                guard let own = read, own.head.epoch == head.epoch else {
                    drop(key)
                    continue
                }
                let bytes = try await advance(kept, by: own)
                account(key, kept, bytes)
                continue
            }
            let made = await stager.run { () -> Result<(EncodedChangeAnswer, Int), StoreError>? in
                kept.state.withLock { state in
                    // Moved past the span's end (or behind its start) meanwhile: read the span again.
                    guard state.head.version >= span.from, state.head.version <= span.head.version else {
                        return nil
                    }
                    do throws(StoreError) {
                        if state.head.version < span.head.version { try state.advance(by: span) }
                        if from == state.head.version {
                            let answer = EncodedChangeAnswer.unchanged(state.head, from: reported, to: from)
                            return .success((answer, state.approximateBytes))
                        }
                        let answer: EncodedChangeAnswer
                        if let change = try state.condensedChange(since: span) {
                            answer = .view(condensedFrom: change.old, at: reported, to: change.new, state.head)
                        } else {
                            let old = try state.sections(before: span)
                            answer = .view(from: old, at: reported, to: state.viewSections, state.head)
                        }
                        return .success((answer, state.approximateBytes))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            guard let made else {
                recent = false
                continue
            }
            let (answer, bytes) = try made.get()
            account(key, kept, bytes)
            return answer
        }
        return nil
    }

    /// What was touched in `key.list` after `version` up to the head the
    /// commit router knows, from the recent commits, when they cover it and
    /// the view is kept (its name is the span's: the recent commits hold no
    /// renames); `nil` otherwise: the caller reads history.
    private func recentSpan(_ key: Key, since version: Int64) -> TouchedSpan? {
        guard let kept = table.withLock({ $0.entries[key]?.kept }), let head = currentHead(key.list) else {
            return nil
        }
        let (name, epoch) = kept.state.withLock { ($0.name, $0.head.epoch) }
        let condition = key.view.conditions.first.map { (path: $0.path, value: $0.value) }
        guard epoch == head.epoch,
            let span = spans.span(of: key.list, since: version, through: head, name: name, matching: condition)
        else { return nil }
        fromRecent.add(1, ordering: .relaxed)
        return span
    }

    /// The view's whole snapshot now, as a reset answer from `from`.
    private func reset(_ key: Key, from: Int64) async throws(StoreError) -> EncodedChangeAnswer {
        for _ in 0..<4 {
            let kept = try await keptOrBuilt(key)
            let head = kept.state.withLock { $0.head }
            guard let span = try await store.touched(key.list, since: head.version), span.head.epoch == head.epoch
            else {
                drop(key)
                continue
            }
            let made = await stager.run { () -> Result<(EncodedChangeAnswer, Int), StoreError>? in
                kept.state.withLock { state in
                    guard state.head.version >= span.from else { return nil }
                    do throws(StoreError) {
                        if state.head.version < span.head.version { try state.advance(by: span) }
                        return .success((.reset(state, from: from), state.approximateBytes))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            guard let made else { continue }
            let (answer, bytes) = try made.get()
            account(key, kept, bytes)
            return answer
        }
        let state = try await fresh(key)
        return await stager.run { .reset(state, from: from) }
    }

    // MARK: - The table

    private func keptOrBuilt(_ key: Key) async throws(StoreError) -> Kept {
        enum Role { case found(Kept), wait, build }
        let role = table.withLock { table -> Role in
            if var entry = table.entries[key] {
                table.clock += 1
                entry.used = table.clock
                table.entries[key] = entry
                return .found(entry.kept)
            }
            if table.building[key] != nil { return .wait }
            table.building[key] = []
            return .build
        }
        switch role {
        case .found(let kept):
            return kept
        case .wait:
            let result = await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<Kept, StoreError>, Never>) in
                let waiting = table.withLock { table -> Bool in
                    guard table.building[key] != nil else { return false }
                    table.building[key]?.append(continuation)
                    return true
                }
                // Built between the look and here: look again.
                if !waiting { continuation.resume(returning: .failure(StoreError(.cancelled, "built meanwhile"))) }
            }
            switch result {
            case .success(let kept): return kept
            case .failure(let error) where error.kind == .cancelled: return try await keptOrBuilt(key)
            case .failure(let error): throw error
            }
        case .build:
            let result: Result<Kept, StoreError>
            do throws(StoreError) {
                let state = try await fresh(key)
                let bytes = state.approximateBytes
                result = .success(
                    table.withLock { table in
                        table.builds += 1
                        let kept = Kept(state)
                        table.clock += 1
                        if let old = table.entries.updateValue(
                            Entry(kept: kept, bytes: bytes, used: table.clock), forKey: key)
                        {
                            table.bytes -= old.bytes
                        } else {
                            spans.watch(key.list)
                        }
                        table.bytes += bytes
                        evict(sparing: key, in: &table)
                        return kept
                    })
            } catch {
                result = .failure(error)
            }
            let waiting = table.withLock { $0.building.removeValue(forKey: key) ?? [] }
            for continuation in waiting { continuation.resume(returning: result) }
            return try result.get()
        }
    }

    /// The view built from the list's rows now (not kept).
    private func fresh(_ key: Key) async throws(StoreError) -> ViewState {
        let conditions = key.view.conditions.map { ItemQuery.Condition(path: $0.path, value: $0.value) }
        let rows = try await store.viewRows(of: key.list, matching: conditions)
        let view = key.view
        return try await stager.run { () -> Result<ViewState, StoreError> in
            do throws(StoreError) { return .success(try ViewState(view: view, rows: rows)) } catch {
                return .failure(error)
            }
        }.get()
    }

    /// Moves `kept` forward by `span` (when it is not past it already); returns its bytes.
    private func advance(_ kept: Kept, by span: TouchedSpan) async throws(StoreError) -> Int {
        try await stager.run { () -> Result<Int, StoreError> in
            kept.state.withLock { state in
                do throws(StoreError) {
                    if state.head.version >= span.from, state.head.version < span.head.version {
                        try state.advance(by: span)
                    }
                    return .success(state.approximateBytes)
                } catch {
                    return .failure(error)
                }
            }
        }.get()
    }

    /// Records the bytes `kept` now holds, and drops the least recently used
    /// views while over the budget (never the one just used).
    private func account(_ key: Key, _ kept: Kept, _ bytes: Int) {
        table.withLock { table in
            guard var entry = table.entries[key], entry.kept === kept else { return }
            table.bytes += bytes - entry.bytes
            table.clock += 1
            entry.bytes = bytes
            entry.used = table.clock
            table.entries[key] = entry
            evict(sparing: key, in: &table)
        }
    }

    private func evict(sparing key: Key, in table: inout Table) {
        guard table.bytes > budget else { return }
        for (victim, entry) in table.entries.sorted(by: { $0.value.used < $1.value.used }) {
            guard table.bytes > budget else { break }
            guard victim != key else { continue }
            table.entries[victim] = nil
            table.bytes -= entry.bytes
            spans.unwatch(victim.list)
        }
    }

    private func drop(_ key: Key) {
        table.withLock { table in
            if let old = table.entries.removeValue(forKey: key) {
                table.bytes -= old.bytes
                spans.unwatch(key.list)
            }
        }
    }
}
