import Foundation
import Storage
import Synchronization

/// Copies ``SQLiteStore``'s write-ahead log back into the database file on a
/// thread of its own, so that the writer never waits for the copy.
///
/// Why: SQLite's automatic checkpoint runs inside the commit that fills the
/// log past 1,000 pages, on the writer's thread, and copies and syncs those
/// pages before the next batch of writes may start. On a list with indexes a
/// write dirties about ten pages, so that copy came every few batches and
/// cost the writer about a third of its time (measured with Python's sqlite3
/// on a copy of a benchmark database: 658 → 447 µs a write). WAL lets a
/// passive checkpoint run beside the writer; the writer's connection only
/// signals (``Connection/handOffCheckpoints(atPages:backstopPages:due:)``),
/// and checkpoints itself only past a backstop, should this thread fall behind.
final class Checkpointer: Sendable {
    /// Log size, in pages, at which a checkpoint is asked for: 16 MiB of log
    /// at 4 KiB pages. Four times SQLite's default: a page written many times
    /// between checkpoints (interior b-tree pages, the tail of history, the
    /// text index's structure) is copied once, which took the checkpointer's
    /// CPU per write on a 100,000-item indexed list from about 43 to 30 us.
    static let pages = 4_000
    /// Log size at which the writer checkpoints itself after all.
    static let backstopPages = 10_000

    private let wake = DispatchSemaphore(value: 0)
    private let pending = Atomic<Bool>(false)
    private let stopping = Atomic<Bool>(false)

    /// Starts the thread; its connection to `path` opens at the first request.
    /// `exited` is called when the thread ends.
    init(path: String, options: ConnectionOptions, exited: @escaping @Sendable () -> Void) {
        let thread = Thread { [self] in
            nameCurrentThread("store-checkpt")
            defer { exited() }
            var connection: Connection?
            while true {
                wake.wait()
                pending.store(false, ordering: .releasing)
                if connection == nil { connection = try? Connection(path: path, options: options) }
                // A failed checkpoint is tried again at the next request, and the
                // writer's backstop bounds the log; the writer's own commits report
                // what is wrong with the file.
                _ = try? connection?.checkpoint(.passive)
                if stopping.load(ordering: .acquiring) { break }
            }
            connection?.close()
        }
        thread.start()
    }

    /// A commit left a long log: checkpoint soon. Cheap; called on the writer's thread.
    func due() {
        if !pending.exchange(true, ordering: .acquiringAndReleasing) { wake.signal() }
    }

    /// Ends the thread after one last checkpoint (it does not wait for it).
    func stop() {
        stopping.store(true, ordering: .releasing)
        wake.signal()
    }
}
