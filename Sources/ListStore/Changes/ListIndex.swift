import ListModel

/// The order statistics of one list's current position keys: the section keys,
/// and each section's item keys. Enough to turn a key into an index path in
/// O(log n) without reading the list.
struct ListIndex: Sendable {
    var sections = RankedKeys()
    var items: [Identifier: RankedKeys] = [:]

    /// Approximate heap bytes held.
    var byteCount: Int {
        items.values.reduce(sections.byteCount + 128) { $0 + $1.byteCount + 96 }
    }

    /// Moves the index from the state before a change to the state after it.
    mutating func apply(_ touched: TouchedEntities) {
        for item in touched.items.values {
            if let before = item.before {
                items[before.section]?.remove(before.key)
            }
            if let after = item.after {
                items[after.section, default: RankedKeys()].insert(after.key)
            }
        }
        for (id, section) in touched.sections {
            if let before = section.before { sections.remove(before.key) }
            if let after = section.after {
                sections.insert(after.key)
            } else {
                items[id] = nil
            }
        }
    }
}

/// The rank indexes of the lists written or followed lately, within a memory
/// budget; the least recently used list's index goes first when over it.
///
/// Owned by one thread (the store's writer), so it needs no lock.
final class HotLists {
    private struct Entry {
        var index: ListIndex
        var bytes: Int
        var lastUse: UInt64
        /// The list state the index describes, when the writer said (see ``tag(_:epoch:version:)``).
        var tag: Tag?
    }

    /// A list state: its epoch and version.
    struct Tag: Equatable {
        let epoch: String
        let version: Int64
    }

    let budget: Int
    private var entries: [Identifier: Entry] = [:]
    private var clock: UInt64 = 0
    private(set) var bytes = 0
    /// Lists whose index changed since ``markClean()``, to evict when a write rolls back.
    private(set) var dirty = Set<Identifier>()
    /// How many indexes were built from the database (for tests and metrics).
    private(set) var builds = 0

    init(budget: Int) {
        self.budget = max(0, budget)
    }

    var listCount: Int { entries.count }

    /// The list's index, if it is hot.
    func index(of list: Identifier) -> ListIndex? {
        guard var entry = entries[list] else { return nil }
        clock += 1
        entry.lastUse = clock
        entries[list] = entry
        return entry.index
    }

    /// The state the list's index was tagged with; `nil` when not hot or untagged.
    func tag(of list: Identifier) -> Tag? {
        entries[list]?.tag
    }

    /// Records that the list's hot index describes the list at `epoch` and
    /// `version` (a store whose rows other sessions write trusts an index only
    /// at the state it was tagged with).
    func tag(_ list: Identifier, epoch: String, version: Int64) {
        entries[list]?.tag = Tag(epoch: epoch, version: version)
    }

    /// Stores a freshly built index.
    func store(_ index: ListIndex, for list: Identifier) {
        builds += 1
        put(index, for: list, tag: nil)
    }

    /// Moves a hot list's index across a change; a cold list stays cold.
    /// - Returns: whether the list was hot.
    @discardableResult
    func apply(_ touched: TouchedEntities, to list: Identifier) -> Bool {
        guard var entry = entries.removeValue(forKey: list) else { return false }
        bytes -= entry.bytes
        entry.index.apply(touched)
        put(entry.index, for: list, tag: nil)
        return true
    }

    func evict(_ list: Identifier) {
        if let entry = entries.removeValue(forKey: list) { bytes -= entry.bytes }
        dirty.remove(list)
    }

    /// Lists whose index changed in the current write.
    private var writeDirty = Set<Identifier>()

    /// A write starts: ``evictWrite()`` undoes only what it does.
    func beginWrite() { writeDirty.removeAll(keepingCapacity: true) }

    /// The current write rolled back: drop the indexes it changed.
    func evictWrite() {
        for list in writeDirty { evict(list) }
        writeDirty.removeAll(keepingCapacity: true)
    }

    /// Forgets which lists changed: their changes are durable.
    func markClean() {
        dirty.removeAll(keepingCapacity: true)
        writeDirty.removeAll(keepingCapacity: true)
    }

    /// Evicts every list changed since ``markClean()``: their changes were rolled back.
    func evictDirty() {
        for list in dirty { evict(list) }
        dirty.removeAll(keepingCapacity: true)
    }

    /// Stores `index` with `tag` (the caller tags it once it knows the state it describes).
    private func put(_ index: ListIndex, for list: Identifier, tag: Tag?) {
        // A zero budget keeps no index past the write that built it (a store whose
        // rows other processes also write cannot trust an index kept across transactions).
        guard budget > 0 else { return }
        clock += 1
        let size = index.byteCount
        entries[list] = Entry(index: index, bytes: size, lastUse: clock, tag: tag)
        bytes += size
        dirty.insert(list)
        writeDirty.insert(list)
        while bytes > budget, entries.count > 1 {
            guard let coldest = entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key, coldest != list
            else { break }
            evict(coldest)
        }
    }
}
