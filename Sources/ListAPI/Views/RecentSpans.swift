import DequeModule
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
/// lock and merges it outside.
final class RecentSpans: Sendable {
    private struct Entry {
        var rows: TouchedRows
        /// When it was recorded (about when it committed): the store keeps a
        /// version's state only while the next commit is younger than its history age.
        var at: ContinuousClock.Instant
        /// Whether the commit inserted, deleted, moved or changed a section.
        var sectionsChanged: Bool
        /// The values its touched items held at each path asked about, before and after.
        var values: TouchedValues

        init(_ rows: TouchedRows) {
            self.rows = rows
            at = .now
            sectionsChanged = rows.sections.values.contains { $0.before != $0.after }
            values = TouchedValues()
        }
    }

    /// The values one commit's touched items held at a path, before and
    /// after, worked out when first asked (parsing each touched model once)
    /// and kept for every later view asking about the same path.
    private final class TouchedValues: Sendable {
        let byPath = Mutex<[[String]: Set<JSONValue>]>([:])

        func contains(_ value: JSONValue, at path: [String], in rows: TouchedRows) -> Bool {
            if let known = byPath.withLock({ $0[path] }) { return known.contains(value) }
            var found = Set<JSONValue>()
            for change in rows.items.values {
                for row in [change.before, change.after] {
                    // A model that does not parse matches no view: it is refused when a view reads it.
                    guard let row, let model = try? row.model.jsonValue(), let held = model.value(atPath: path)
                    else { continue }
                    found.insert(held)
                }
            }
            byPath.withLock { $0[path] = found }
            return found.contains(value)
        }
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
        /// The version the run ends at.
        var end: Int64 { first + Int64(entries.count) }

        mutating func restart(_ commit: Commit) {
            entries.removeAll()
            rows = 0
            guard !commit.deleted, let touched = commit.touched else {
                epoch = nil
                return
            }
            epoch = commit.epoch
            first = commit.version - 1
            entries.append(Entry(touched))
            rows = touched.count
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
    private struct State {
        var rings: [Identifier: Ring] = [:]
        var rows = 0
    }

    private let state = Mutex(State())

    /// The defaults keep a list's last 16,384 single-item commits: a follower
    /// 10,000 versions behind is answered from memory. A row is a few hundred
    /// bytes (two item rows and their models), so the 131,072 rows kept in all
    /// come to some tens of MB.
    init(
        maxVersions: Int = 16_384, maxRows: Int = 65_536, maxTotalRows: Int = 131_072,
        history: (versions: Int64, age: Duration) = (10_000, .seconds(7 * 86_400))
    ) {
        self.maxVersions = maxVersions
        self.maxRows = maxRows
        self.maxTotalRows = maxTotalRows
        self.history = history
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
    /// - Complexity: O(1), amortized.
    func record(_ commit: Commit) {
        state.withLock { state in
            guard var ring = state.rings[commit.list] else { return }
            // Taken out while changed, so the entries are not copied.
            state.rings[commit.list] = nil
            state.rows -= ring.rows
            defer {
                state.rows += ring.rows
                state.rings[commit.list] = ring
            }
            if !commit.deleted, ring.epoch == commit.epoch, commit.version <= ring.end {
                return  // heard already
            }
            if !commit.deleted, ring.epoch == commit.epoch, commit.version == ring.end + 1,
                let touched = commit.touched
            {
                ring.entries.append(Entry(touched))
                ring.rows += touched.count
            } else {
                ring.restart(commit)
            }
            while ring.entries.count > maxVersions
                || (ring.entries.count > 1 && (ring.rows > maxRows || state.rows + ring.rows > maxTotalRows))
            {
                ring.rows -= ring.entries.removeFirst().rows.count
                ring.first += 1
            }
        }
    }

    /// What the commits after `version` up to `head` touched, merged: each
    /// entity's row before the first of them and after the last. `nil` when
    /// the run does not cover that span (or is of another epoch).
    /// - Complexity: O(k) for k touched rows in the span.
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
        let entries = state.withLock { state -> [Entry]? in
            guard let ring = state.rings[list], ring.epoch == head.epoch, version >= ring.first,
                version <= head.version,
                head.version <= ring.end
            else { return nil }
            let start = Int(version - ring.first)
            let end = Int(head.version - ring.first)
            // The state at `version` is kept while the commit after it is younger than the age.
            if history.age > .zero, start < end, ring.entries[start].at.duration(to: .now) >= history.age {
                return nil
            }
            return Array(ring.entries[start..<end])
        }
        guard let entries else { return nil }
        // Outside the lock: the store's thread appends under it.
        let slice =
            condition.map { condition in
                entries.compactMap { entry in
                    entry.sectionsChanged || entry.values.contains(condition.value, at: condition.path, in: entry.rows)
                        ? entry.rows : nil
                }
            } ?? entries.map(\.rows)
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

    /// How many lists have a ring, and how many commits and rows they hold (for tests and metrics).
    var usage: (lists: Int, versions: Int, rows: Int) {
        state.withLock { state in
            (state.rings.count, state.rings.values.reduce(0) { $0 + $1.entries.count }, state.rows)
        }
    }
}
