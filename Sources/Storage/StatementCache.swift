/// Prepared statements of one connection, keyed by SQL text, least recently
/// used evicted first.
///
/// Evicting only drops the cache's reference: a caller still holding the
/// statement keeps it until it lets go, and it is finalized then.
///
/// - Complexity: a hit is O(1); a miss that evicts is O(capacity), which for
///   the few dozen statements of a connection is cheaper than keeping a list.
struct StatementCache {
    private struct Entry {
        var statement: Statement
        var lastUse: UInt64
    }

    let capacity: Int
    private var entries: [String: Entry] = [:]
    private var clock: UInt64 = 0
    private(set) var statistics = StatementCacheStatistics()

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// The cached statement for `sql`, marked as just used, or `nil`.
    ///
    /// A cached statement that is still mid-iteration (a caller is reading
    /// its rows and prepared the same SQL again) is not handed out twice:
    /// that counts as a bypass and the caller compiles a private copy.
    mutating func lookup(_ sql: String) -> Statement? {
        // One hash of the SQL per hit: the entry is marked in place.
        guard let index = entries.index(forKey: sql) else {
            statistics.misses += 1
            return nil
        }
        let statement = entries.values[index].statement
        guard !statement.isBusy else {
            statistics.bypasses += 1
            return nil
        }
        clock &+= 1
        entries.values[index].lastUse = clock
        statistics.hits += 1
        return statement
    }

    /// Whether `sql` has no entry at all (a busy entry is not replaced, so the
    /// bypassing caller's private statement stays out of the cache).
    func lookupWouldMiss(_ sql: String) -> Bool {
        entries[sql] == nil
    }

    /// Adds a statement, evicting the least recently used one when full.
    mutating func insert(_ statement: Statement) {
        guard capacity > 0 else { return }
        if entries[statement.sql] == nil, entries.count >= capacity,
            let oldest = entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key
        {
            entries[oldest] = nil
            statistics.evictions += 1
        }
        clock &+= 1
        entries[statement.sql] = Entry(statement: statement, lastUse: clock)
        statistics.count = entries.count
    }

    /// Forgets every statement.
    mutating func removeAll() {
        entries.removeAll()
        statistics.count = 0
    }
}

/// Counters of a connection's statement cache, for tests and diagnostics.
public struct StatementCacheStatistics: Sendable, Hashable {
    /// `prepare` calls served from the cache.
    public var hits = 0
    /// `prepare` calls that compiled the SQL.
    public var misses = 0
    /// `prepare` calls whose cached statement was busy with an earlier
    /// caller's rows, so a private uncached statement was compiled instead.
    public var bypasses = 0
    /// Statements dropped to stay within capacity.
    public var evictions = 0
    /// Statements cached now.
    public var count = 0
}
