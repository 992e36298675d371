import ListModel
import Synchronization

/// Rank indexes the writer publishes for the reader threads, so "changes
/// since V" runs on a reader from its own snapshot and never waits for (or
/// holds) the writer.
///
/// Concurrency: a `Mutex` guards the table; callers on any thread. Indexes
/// are values: a published index shares its storage with the writer's copy
/// until either side changes it (copy on write), and a reader moves its own
/// copy forward, so neither ever sees the other's changes.
///
/// The writer publishes a list's index when it commits, every
/// ``publishInterval`` versions: a reader starting from an index a few
/// versions old brings its copy to its snapshot from history (O(k log n) for
/// the k entities touched in between), which costs less than the writer
/// copying the index's block table (O(n / 128)) on every write. So the first
/// catch-up on a list written since listd started finds an index here; one on
/// a list nobody wrote builds it from the rows once (O(n)) and publishes it.
package final class IndexBoard: Sendable {
    /// One published index and the list state it describes.
    struct Entry: Sendable {
        var epoch: String
        var version: Int64
        var index: ListIndex
        var bytes: Int
        var lastUse: UInt64
    }

    /// A reader moves an index at most this many versions forward before the
    /// writer publishes a newer one.
    static let publishInterval: Int64 = 32

    private struct State {
        var entries: [Identifier: Entry] = [:]
        var bytes = 0
        var clock: UInt64 = 0
    }

    private let state = Mutex(State())
    /// The memory the published indexes may hold (their own, not counting what
    /// they share with the writer's).
    let budget: Int

    package init(budget: Int) {
        self.budget = max(0, budget)
    }

    /// The list's newest published index, if any (a reader then keeps it wanted).
    func index(of list: Identifier) -> (epoch: String, version: Int64, index: ListIndex)? {
        state.withLock { state in
            guard var entry = state.entries[list] else { return nil }
            state.clock += 1
            entry.lastUse = state.clock
            state.entries[list] = entry
            return (entry.epoch, entry.version, entry.index)
        }
    }

    /// Whether the writer should publish the list's index at `epoch` and
    /// `version`: none is here, or the one here is of another epoch or
    /// ``publishInterval`` versions old.
    func wants(_ list: Identifier, epoch: String, version: Int64) -> Bool {
        state.withLock { state in
            guard let entry = state.entries[list] else { return true }
            return entry.epoch != epoch || version - entry.version >= Self.publishInterval
        }
    }

    /// Stores `index` as the list's at `epoch`/`version`, unless one of a later
    /// version of the same epoch is there already (a reader's snapshot may be
    /// older than the writer's last publication).
    func publish(_ index: ListIndex, of list: Identifier, epoch: String, version: Int64) {
        guard budget > 0 else { return }
        state.withLock { state in
            if let old = state.entries[list] {
                if old.epoch == epoch && old.version >= version { return }
                state.bytes -= old.bytes
            }
            state.clock += 1
            let bytes = index.byteCount
            state.entries[list] = Entry(
                epoch: epoch, version: version, index: index, bytes: bytes, lastUse: state.clock)
            state.bytes += bytes
            while state.bytes > budget, state.entries.count > 1 {
                guard let coldest = state.entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key,
                    coldest != list
                else { break }
                if let gone = state.entries.removeValue(forKey: coldest) { state.bytes -= gone.bytes }
            }
        }
    }

    /// Forgets the list's index (the list was deleted, or its index disagreed with its rows).
    func remove(_ list: Identifier) {
        state.withLock { state in
            if let gone = state.entries.removeValue(forKey: list) { state.bytes -= gone.bytes }
        }
    }

    /// How many lists have a published index (for tests).
    package var count: Int { state.withLock { $0.entries.count } }
}
