/// The parked long-polls of one server, as a value: who waits for which lists
/// since which versions, and until when.
///
/// A waiter watches one list (`GET /lists/{list}/changes`) or several
/// (`POST /changes`). Waiters are grouped by (list, since) so that a commit
/// finds exactly its own list's waiters, and each group can share one computed
/// answer. Deadlines live in a tick wheel (one bucket per tick, no timer per
/// waiter): expiring is proportional to the waiters that expire.
///
/// Not thread-safe by itself; ``ChangeHub`` keeps it under a lock.
struct WaiterTable<Payload> {
    /// One parked request.
    struct Waiter {
        /// Unique for the life of the table.
        var id: UInt64
        /// The version each watched list is awaited after, keyed by list id.
        var watches: [String: Int64]
        /// The tick at or after which the waiter times out.
        var deadline: UInt64
        /// The caller's data (the responder and whatever is needed to answer).
        var payload: Payload
    }

    private(set) var waiters: [UInt64: Waiter] = [:]
    private var groups: [String: [Int64: Set<UInt64>]] = [:]
    private var wheel: [UInt64: [UInt64]] = [:]
    private var earliestTick: UInt64 = .max
    private var nextID: UInt64 = 1

    /// How many requests are parked.
    var count: Int { waiters.count }

    /// Whether anyone waits for `list`.
    func isWatched(_ list: String) -> Bool { groups[list] != nil }

    /// The lists anyone waits for.
    var watchedLists: Dictionary<String, [Int64: Set<UInt64>]>.Keys { groups.keys }

    /// Parks a waiter and returns its id.
    mutating func park(watches: [String: Int64], deadline: UInt64, payload: Payload) -> UInt64 {
        precondition(!watches.isEmpty, "a waiter watches at least one list")
        let id = nextID
        nextID += 1
        waiters[id] = Waiter(id: id, watches: watches, deadline: deadline, payload: payload)
        for (list, since) in watches {
            groups[list, default: [:]][since, default: []].insert(id)
        }
        wheel[deadline, default: []].append(id)
        earliestTick = min(earliestTick, deadline)
        return id
    }

    /// Removes a waiter (its client went away, or it was answered) and returns it.
    @discardableResult
    mutating func remove(_ id: UInt64) -> Waiter? {
        guard let waiter = waiters.removeValue(forKey: id) else { return nil }
        for (list, since) in waiter.watches {
            removeFromGroup(id, list: list, since: since)
        }
        // The wheel keeps the stale id; expire() skips ids it no longer knows.
        return waiter
    }

    /// Removes and returns, grouped by the version they waited after, every
    /// waiter of `list` that waited for a version below `version`.
    ///
    /// Why whole groups at once: one commit may wake 10,000 waiters, and this
    /// runs under the hub's lock on the store's writer thread (before the
    /// write is answered). Taking each (list, since) group out in one step
    /// leaves one dictionary removal per waiter, instead of the three nested
    /// look-ups and a copy-on-write of the group that `remove(_:)` costs.
    /// - Complexity: O(w log w) for w woken waiters (they are sorted by id),
    ///   plus the other lists a multi-list waiter watched.
    mutating func wake(list: String, version: Int64) -> [(since: Int64, waiters: [Waiter])] {
        guard var byVersion = groups.removeValue(forKey: list) else { return [] }
        var woken: [(since: Int64, waiters: [Waiter])] = []
        for since in byVersion.keys.sorted() where since < version {
            guard let ids = byVersion.removeValue(forKey: since) else { continue }
            woken.append((since, take(ids, woken: list)))
        }
        if !byVersion.isEmpty { groups[list] = byVersion }
        return woken
    }

    /// Removes and returns every waiter of `list`, whatever it waited for
    /// (the list was deleted).
    mutating func removeAll(watching list: String) -> [Waiter] {
        guard let byVersion = groups.removeValue(forKey: list) else { return [] }
        return take(byVersion.values.reduce(into: Set<UInt64>()) { $0.formUnion($1) }, woken: list)
    }

    /// Removes the waiters `ids`, whose groups of `list` the caller already
    /// took out, from the table and from the groups of their other lists.
    private mutating func take(_ ids: Set<UInt64>, woken list: String) -> [Waiter] {
        var taken: [Waiter] = []
        taken.reserveCapacity(ids.count)
        for id in ids.sorted() {
            guard let waiter = waiters.removeValue(forKey: id) else { continue }
            if waiter.watches.count > 1 {
                for (other, since) in waiter.watches where other != list {
                    removeFromGroup(id, list: other, since: since)
                }
            }
            taken.append(waiter)
        }
        return taken
    }

    private mutating func removeFromGroup(_ id: UInt64, list: String, since: Int64) {
        guard var byVersion = groups.removeValue(forKey: list) else { return }
        if var ids = byVersion.removeValue(forKey: since) {
            ids.remove(id)
            if !ids.isEmpty { byVersion[since] = ids }
        }
        if !byVersion.isEmpty { groups[list] = byVersion }
    }

    /// Removes and returns every waiter whose deadline is at or before `tick`.
    mutating func expire(through tick: UInt64) -> [Waiter] {
        guard earliestTick <= tick else { return [] }
        var expired: [Waiter] = []
        var remaining: UInt64 = .max
        for (deadline, ids) in wheel {
            if deadline <= tick {
                wheel[deadline] = nil
                expired += ids.compactMap { remove($0) }
            } else {
                remaining = min(remaining, deadline)
            }
        }
        earliestTick = remaining
        return expired.sorted { $0.id < $1.id }
    }

    /// Removes and returns every waiter (the server is shutting down).
    mutating func removeAll() -> [Waiter] {
        let all = waiters.values.sorted { $0.id < $1.id }
        waiters = [:]
        groups = [:]
        wheel = [:]
        earliestTick = .max
        return all
    }
}

/// A woken waiter is handed to the task that answers it.
extension WaiterTable.Waiter: Sendable where Payload: Sendable {}
