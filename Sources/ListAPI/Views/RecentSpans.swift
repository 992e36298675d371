import DequeModule
import Dispatch
import JSON
import ListModel
import ListStore
import Synchronization

/// What the recent commits of each list with kept views touched
/// (``Commit/touched``), in version order: a kept view a few versions behind
/// moves forward by them, and shows itself as it was, with no read of history.
///
/// A list's ring holds an unbroken run of commits, each one version after the
/// last. A commit that breaks the run starts it again: one carrying no
/// touched rows (another instance's, a rename, a large write), a deletion,
/// a new epoch, or a version that skips. Commits already in the run (a
/// commit heard twice) are ignored. The oldest commits go first beyond
/// ``maxVersions`` or ``maxRows`` per list, or ``maxTotalRows`` in all.
///
/// Concurrency: ``record(_:)`` runs on the store's thread that committed,
/// before the write is answered, so it only appends under a lock; whatever
/// asks (``span(of:since:through:)``) copies the run's slice out under the
/// lock and merges it outside. A list's path indexes are kept up with its
/// commits on a utility queue (``indexAhead``), never on the store's thread.
final class RecentSpans: Sendable {
    private struct Entry {
        var rows: TouchedRows
        /// When it was recorded (about when it committed): the store keeps a
        /// version's state only while the next commit is younger than its history age.
        var at: ContinuousClock.Instant

        init(_ rows: TouchedRows) {
            self.rows = rows
            at = .now
        }

        /// Whether the commit inserted, deleted, moved or changed a section.
        static func changesSections(_ rows: TouchedRows) -> Bool {
            rows.sections.values.contains { $0.before != $0.after }
        }

        /// The values the commit's touched items held at `path`, before or after.
        static func values(at path: [String], in rows: TouchedRows) -> Set<JSONValue> {
            var found = Set<JSONValue>()
            for change in rows.items.values {
                for row in [change.before, change.after] {
                    // A model that does not parse matches no view: it is refused when a view reads it.
                    guard let row, let model = try? row.model.jsonValue(), let held = model.value(atPath: path)
                    else { continue }
                    found.insert(held)
                }
            }
            return found
        }
    }

    /// For one path, the versions of the run's commits whose touched items
    /// held each value there (before or after), ascending: which commits can
    /// move a view whose `where` asks for that value, found without a scan.
    /// Built on first ask, then extended over the commits recorded since by
    /// each later ask and, once ``indexAhead`` of them wait, on a utility
    /// queue: a follower asking after a burst of writes finds them indexed.
    /// Each commit's models are parsed once per path, off the store's
    /// thread. Versions the run let go of are skipped by the search and
    /// pruned once they outnumber the run.
    private struct PathIndex {
        /// The version through which the run's commits are indexed.
        var through: Int64
        var versions: [JSONValue: [Int64]] = [:]
        /// How many versions `versions` holds in all, pruned or not.
        var count = 0

        /// `versions[value]` in `after...through`.
        func versions(of value: JSONValue, after: Int64, through: Int64) -> ArraySlice<Int64> {
            guard let all = versions[value] else { return [] }
            return all[RecentSpans.slice(all, after: after, through: through)]
        }

        /// Drops the versions at or before `first` (the run's start).
        mutating func prune(before first: Int64) {
            count = 0
            versions = versions.compactMapValues { all in
                let kept = all.drop { $0 <= first }
                count += kept.count
                return kept.isEmpty ? nil : Array(kept)
            }
        }
    }

    /// The indices of ascending `versions` in `after...through`, by binary search.
    static func slice(_ versions: [Int64], after: Int64, through: Int64) -> Range<Int> {
        func firstIndex(above bound: Int64) -> Int {
            var low = 0
            var high = versions.count
            while low < high {
                let middle = (low + high) / 2
                if versions[middle] <= bound { low = middle + 1 } else { high = middle }
            }
            return low
        }
        let start = firstIndex(above: after)
        return start..<max(start, firstIndex(above: through))
    }

    private struct Ring {
        /// How many kept views of the list want its commits.
        var watchers = 0
        /// The run's epoch; `nil` while the run is empty.
        var epoch: String?
        /// The version the run starts from: `entries[i]` goes from `first + i` to `first + i + 1`.
        var first: Int64 = 0
        var entries: Deque<Entry> = []
        var rows = 0
        /// Which run this is: a restart starts another (so an index built
        /// outside the lock over one run is never added to the next).
        var run = 0
        /// The versions of the run's commits that changed a section, ascending.
        var sectionVersions: [Int64] = []
        /// By `where` path asked about.
        var indexes: [[String]: PathIndex] = [:]
        /// Whether a catch-up of the indexes is scheduled or running.
        var indexing = false
        /// The version the run ends at.
        var end: Int64 { first + Int64(entries.count) }

        mutating func append(_ touched: TouchedRows, version: Int64) {
            entries.append(Entry(touched))
            rows += touched.count
            if Entry.changesSections(touched) { sectionVersions.append(version) }
        }

        mutating func restart(_ commit: Commit, run: Int) {
            entries.removeAll()
            rows = 0
            sectionVersions.removeAll()
            indexes.removeAll()
            self.run = run
            guard !commit.deleted, let touched = commit.touched else {
                epoch = nil
                return
            }
            epoch = commit.epoch
            first = commit.version - 1
            append(touched, version: commit.version)
        }

        /// Lets go of the oldest commit.
        mutating func dropFirst() {
            rows -= entries.removeFirst().rows.count
            first += 1
            if sectionVersions.count > 2 * entries.count + 64 {
                sectionVersions.removeAll { $0 <= first }
            }
            for (path, index) in indexes where index.count > 2 * entries.count + 64 {
                indexes[path]?.prune(before: first)
            }
        }

        /// How many of the run's commits the most behind of its indexes has still to take.
        var indexLag: Int64 {
            indexes.values.reduce(0) { lag, index in max(lag, end - max(index.through, first)) }
        }

        /// The commits after what `path`'s index holds, to index: `nil` when it
        /// holds the run through `through`.
        func unindexed(_ path: [String], through: Int64) -> Lookup? {
            let index = indexes[path]
            let indexed = max(index?.through ?? first, first)
            guard indexed < through else { return nil }
            let pending = entries[Int(indexed - first)...].enumerated().map {
                (version: indexed + Int64($0.offset) + 1, rows: $0.element.rows)
            }
            return .unindexed(run: run, from: index?.through ?? first, pending)
        }
    }

    /// The most versions kept per list.
    let maxVersions: Int
    /// The most touched sections and items kept per list.
    let maxRows: Int
    /// The most touched sections and items kept in all (a list recording a
    /// commit beyond it lets go of its own oldest commits).
    let maxTotalRows: Int
    /// The store's history retention (an age of zero: no age limit): a span
    /// is given only from a version the store still keeps (older ones are
    /// answered with a reset, as the contract says, by whoever asks the store instead).
    let history: (versions: Int64, age: Duration)
    /// How many commits may wait past a path's index before they are indexed
    /// on ``schedule``'s queue (a first ask after a burst of writes then
    /// parses at most that many commits' models, not the burst's).
    let indexAhead: Int64
    /// Runs an index catch-up (a utility-QoS global queue; tests run it in place).
    private let schedule: @Sendable (@escaping @Sendable () -> Void) -> Void
    private struct State {
        var rings: [Identifier: Ring] = [:]
        var rows = 0
        /// The runs started so far (the next run's number).
        var runs = 0
    }

    private let state = Mutex(State())

    /// The defaults keep a list's last 16,384 single-item commits: a follower
    /// 10,000 versions behind is answered from memory. A row is a few hundred
    /// bytes (two item rows and their models), so the 131,072 rows kept in all
    /// come to some tens of MB.
    init(
        maxVersions: Int = 16_384, maxRows: Int = 65_536, maxTotalRows: Int = 131_072,
        history: (versions: Int64, age: Duration) = (10_000, .seconds(7 * 86_400)), indexAhead: Int64 = 256,
        schedule: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void = {
            DispatchQueue.global(qos: .utility).async(execute: $0)
        }
    ) {
        self.maxVersions = maxVersions
        self.maxRows = maxRows
        self.maxTotalRows = maxTotalRows
        self.history = history
        self.indexAhead = indexAhead
        self.schedule = schedule
    }

    /// A kept view of `list` starts wanting its commits.
    func watch(_ list: Identifier) {
        state.withLock { $0.rings[list, default: Ring()].watchers += 1 }
    }

    /// A kept view of `list` no longer wants its commits; the last one drops the ring.
    func unwatch(_ list: Identifier) {
        state.withLock { state in
            guard var ring = state.rings[list] else { return }
            ring.watchers -= 1
            if ring.watchers > 0 {
                state.rings[list] = ring
            } else {
                state.rings[list] = nil
                state.rows -= ring.rows
            }
        }
    }

    /// Records a commit (of any list: those without kept views are passed over).
    /// - Complexity: O(1), amortized (and, once per ``indexAhead`` commits of
    ///   a list with path indexes, scheduling their catch-up).
    func record(_ commit: Commit) {
        let behind = state.withLock { state -> Bool in
            guard var ring = state.rings[commit.list] else { return false }
            // Taken out while changed, so the entries are not copied.
            state.rings[commit.list] = nil
            state.rows -= ring.rows
            defer {
                state.rows += ring.rows
                state.rings[commit.list] = ring
            }
            if !commit.deleted, ring.epoch == commit.epoch, commit.version <= ring.end {
                return false  // heard already
            }
            if !commit.deleted, ring.epoch == commit.epoch, commit.version == ring.end + 1,
                let touched = commit.touched
            {
                ring.append(touched, version: commit.version)
            } else {
                state.runs += 1
                ring.restart(commit, run: state.runs)
            }
            while ring.entries.count > maxVersions
                || (ring.entries.count > 1 && (ring.rows > maxRows || state.rows + ring.rows > maxTotalRows))
            {
                ring.dropFirst()
            }
            guard !ring.indexing, !ring.indexes.isEmpty, ring.indexLag >= indexAhead else { return false }
            ring.indexing = true
            return true
        }
        if behind {
            let list = commit.list
            schedule { [self] in catchUpIndexes(of: list) }
        }
    }

    /// Indexes the commits recorded since each of `list`'s path indexes was
    /// last extended (what an ask would otherwise parse first).
    private func catchUpIndexes(of list: Identifier) {
        let paths = state.withLock { state in state.rings[list].map { Array($0.indexes.keys) } ?? [] }
        for path in paths {
            let found = state.withLock { state in state.rings[list].flatMap { $0.unindexed(path, through: $0.end) } }
            guard case .unindexed(let run, let from, let pending) = found else { continue }
            index(pending, of: list, at: path, run: run, from: from)
        }
        state.withLock { state in state.rings[list]?.indexing = false }
    }

    /// Parses the models of `pending` (commits of run `run` after `from`) at
    /// `path`, outside the lock (the store's thread appends under it), then
    /// adds them to the path's index, unless the run or the index moved
    /// meanwhile (whoever moved it indexed them).
    private func index(
        _ pending: [(version: Int64, rows: TouchedRows)], of list: Identifier, at path: [String], run: Int,
        from: Int64
    ) {
        var found: [(JSONValue, Int64)] = []
        for (version, rows) in pending {
            for value in Entry.values(at: path, in: rows) { found.append((value, version)) }
        }
        let through = pending.last?.version ?? from
        state.withLock { state in
            // Taken out while grown, so neither the ring nor the index's arrays are copied.
            guard var ring = state.rings.removeValue(forKey: list) else { return }
            defer { state.rings[list] = ring }
            guard ring.run == run, (ring.indexes[path]?.through ?? from) == from else { return }
            var grown = ring.indexes.removeValue(forKey: path) ?? PathIndex(through: from)
            for (value, version) in found { grown.versions[value, default: []].append(version) }
            grown.count += found.count
            grown.through = through
            ring.indexes[path] = grown
        }
    }

    /// How far `path`'s index of `list`'s run reaches (for tests): `nil` without one.
    func indexed(_ list: Identifier, path: [String]) -> Int64? {
        state.withLock { $0.rings[list]?.indexes[path]?.through }
    }

    /// What the commits after `version` up to `head` touched, merged: each
    /// entity's row before the first of them and after the last. `nil` when
    /// the run does not cover that span (or is of another epoch).
    /// - Complexity: O(k) for k touched rows in the span; with a condition,
    ///   O(log n + k) for k rows in the commits that concern it (n: the run's
    ///   commits), plus, once per commit and path, parsing its touched models.
    ///
    /// `matching`: a view's equality condition (its first `where`): only the
    /// commits that touched an item holding that value before or after, or
    /// changed a section, are merged. The others cannot change the view (an
    /// item that never held the value there is in it at neither end), so
    /// the span moves the view as the whole one would, at the cost of the
    /// commits that concern it.
    func span(
        of list: Identifier, since version: Int64, through head: ListHead, name: String,
        matching condition: (path: [String], value: JSONValue)? = nil
    ) -> TouchedSpan? {
        guard head.version - version <= history.versions else { return nil }
        var slice: [TouchedRows]?
        for _ in 0..<3 {
            let found = state.withLock { state -> Lookup in
                guard let ring = state.rings[list] else { return .uncovered }
                return lookup(in: ring, since: version, through: head, matching: condition)
            }
            switch found {
            case .uncovered:
                return nil
            case .rows(let rows):
                slice = rows
            case .unindexed(let run, let from, let pending):
                guard let condition else { return nil }
                index(pending, of: list, at: condition.path, run: run, from: from)
                continue
            }
            break
        }
        guard let slice else { return nil }
        guard var merged = slice.first else {
            return TouchedSpan(head: head, name: name, from: version, sections: [:], items: [:])
        }
        for rows in slice.dropFirst() {
            for (id, change) in rows.sections {
                if let earlier = merged.sections[id] {
                    merged.sections[id] = RowChange(before: earlier.before, after: change.after)
                } else {
                    merged.sections[id] = change
                }
            }
            for (id, change) in rows.items {
                if let earlier = merged.items[id] {
                    merged.items[id] = RowChange(before: earlier.before, after: change.after)
                } else {
                    merged.items[id] = change
                }
            }
        }
        return TouchedSpan(head: head, name: name, from: version, sections: merged.sections, items: merged.items)
    }

    private enum Lookup {
        /// The run does not cover the span.
        case uncovered
        /// The rows of the commits in the span (that concern the condition), in order.
        case rows([TouchedRows])
        /// The condition's path is not indexed through the span's end: the
        /// commits of run `run` after `from` to index, with their versions.
        case unindexed(run: Int, from: Int64, [(version: Int64, rows: TouchedRows)])
    }

    /// ``span(of:since:through:name:matching:)``'s part under the lock.
    private func lookup(
        in ring: Ring, since version: Int64, through head: ListHead,
        matching condition: (path: [String], value: JSONValue)?
    ) -> Lookup {
        guard ring.epoch == head.epoch, version >= ring.first, version <= head.version, head.version <= ring.end
        else { return .uncovered }
        let start = Int(version - ring.first)
        let end = Int(head.version - ring.first)
        // The state at `version` is kept while the commit after it is younger than the age.
        if history.age > .zero, start < end, ring.entries[start].at.duration(to: .now) >= history.age {
            return .uncovered
        }
        guard let condition else { return .rows(ring.entries[start..<end].map(\.rows)) }
        if let unindexed = ring.unindexed(condition.path, through: head.version) { return unindexed }
        let index = ring.indexes[condition.path]
        // The versions of the commits that held the value or changed a section, merged in order.
        let held = index?.versions(of: condition.value, after: version, through: head.version) ?? []
        let sections = ring.sectionVersions[
            Self.slice(ring.sectionVersions, after: version, through: head.version)]
        var rows: [TouchedRows] = []
        rows.reserveCapacity(held.count + sections.count)
        var a = held.startIndex
        var b = sections.startIndex
        while a < held.endIndex || b < sections.endIndex {
            let next: Int64
            if b == sections.endIndex || (a < held.endIndex && held[a] < sections[b]) {
                next = held[a]
                a += 1
            } else if a == held.endIndex || sections[b] < held[a] {
                next = sections[b]
                b += 1
            } else {
                next = held[a]
                a += 1
                b += 1
            }
            rows.append(ring.entries[Int(next - ring.first) - 1].rows)
        }
        return .rows(rows)
    }

    /// How many lists have a ring, and how many commits and rows they hold (for tests and metrics).
    var usage: (lists: Int, versions: Int, rows: Int) {
        state.withLock { state in
            (state.rings.count, state.rings.values.reduce(0) { $0 + $1.entries.count }, state.rows)
        }
    }
}
