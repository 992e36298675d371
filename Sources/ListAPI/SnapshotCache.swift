import JSON
import ListModel
import ListStore
import Synchronization

/// The latest serialized snapshot of recently read lists, so a GET of an
/// unchanged list costs no database work and no JSON encoding.
///
/// An entry is served only while its version is the list's current head (as
/// the ``CommitRouter`` knows it, which hears every commit before its writer
/// is answered), so a client never reads a snapshot older than its own
/// acknowledged write; a deletion drops the list's entry in the same commit
/// pipeline (``committed(_:)``). Bounded by bytes; the least recently stored
/// go first.
final class SnapshotCache: Sendable {
    /// One list's snapshot at one version, as a value and as compact JSON.
    /// The snapshot's entry, encoded, without caching it.
    static func entry(_ snapshot: ListSnapshot) -> Entry {
        var writer = JSONWriterFactory.snapshotWriter(for: snapshot)
        writer.snapshot(snapshot)
        return Entry(snapshot: snapshot, body: JSONBody.finish(writer, pretty: false), etag: snapshot.etag)
    }

    struct Entry: Sendable {
        var snapshot: ListSnapshot
        /// Compact JSON with a trailing newline.
        var body: [UInt8]
        var etag: String
    }

    private struct State {
        var entries: [Identifier: Entry] = [:]
        var order: [Identifier] = []
        var bytes = 0
    }

    private let state = Mutex(State())
    private let capacity: Int

    init(capacityBytes: Int) { self.capacity = capacityBytes }

    /// The entry for `head`, if the cache holds exactly that version.
    func entry(for head: ListHead) -> Entry? {
        state.withLock { state in
            guard let entry = state.entries[head.id], entry.snapshot.version == head.version,
                entry.snapshot.epoch == head.epoch
            else { return nil }
            return entry
        }
    }

    /// Serializes and keeps `snapshot`, unless a newer version is kept already.
    @discardableResult
    func store(_ snapshot: ListSnapshot) -> Entry {
        let entry = Self.entry(snapshot)
        guard entry.body.count <= capacity / 4 else { return entry }
        state.withLock { state in
            if let old = state.entries[snapshot.id] {
                if old.snapshot.epoch == snapshot.epoch && old.snapshot.version > snapshot.version { return }
                state.bytes -= old.body.count
                state.order.removeAll { $0 == snapshot.id }
            }
            state.entries[snapshot.id] = entry
            state.order.append(snapshot.id)
            state.bytes += entry.body.count
            while state.bytes > capacity, let oldest = state.order.first {
                state.order.removeFirst()
                if let dropped = state.entries.removeValue(forKey: oldest) { state.bytes -= dropped.body.count }
            }
        }
        return entry
    }

    /// Hears every commit, from the commit pipeline (``CommitRouter``'s
    /// `onCommit`, on the store's committing thread, before the writer is
    /// answered): a deleted list's entry goes, so no client reads a list
    /// whose deletion was acknowledged. Other commits need nothing here: an
    /// entry is served only while its version is the router's head, which
    /// the same commit moves on.
    func committed(_ commit: Commit) {
        if commit.deleted { remove(commit.list) }
    }

    /// Forgets a list (it was deleted).
    func remove(_ list: Identifier) {
        state.withLock { state in
            if let dropped = state.entries.removeValue(forKey: list) {
                state.bytes -= dropped.body.count
                state.order.removeAll { $0 == list }
            }
        }
    }
}

/// Sizes a writer for a snapshot so it rarely grows while writing.
enum JSONWriterFactory {
    static func snapshotWriter(for snapshot: ListSnapshot) -> JSONWriter {
        var estimate = 128
        for section in snapshot.sections {
            estimate += 48 + section.id.rawValue.utf8.count + section.model.byteCount
            for item in section.items { estimate += 24 + item.id.rawValue.utf8.count + item.model.byteCount }
        }
        return JSONWriter(capacity: estimate)
    }
}
