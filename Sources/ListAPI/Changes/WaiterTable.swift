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
            groups[list]?[since]?.remove(id)
            if groups[list]?[since]?.isEmpty == true { groups[list]?[since] = nil }
            if groups[list]?.isEmpty == true { groups[list] = nil }
        }
        // The wheel keeps the stale id; expire() skips ids it no longer knows.
        return waiter
    }

    /// Removes and returns, grouped by the version they waited after, every
    /// waiter of `list` that waited for a version below `version`.
    mutating func wake(list: String, version: Int64) -> [(since: Int64, waiters: [Waiter])] {
        guard let byVersion = groups[list] else { return [] }
        var woken: [(since: Int64, waiters: [Waiter])] = []
        for (since, ids) in byVersion where since < version {
            woken.append((since, ids.sorted().compactMap { remove($0) }))
        }
        return woken.sorted { $0.since < $1.since }
    }

    /// Removes and returns every waiter of `list`, whatever it waited for
    /// (the list was deleted).
    mutating func removeAll(watching list: String) -> [Waiter] {
        guard let byVersion = groups[list] else { return [] }
        return byVersion.values.flatMap { $0 }.sorted().compactMap { remove($0) }
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
