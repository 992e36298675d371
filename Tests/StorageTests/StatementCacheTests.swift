import CSQLite
import Testing

@testable import Storage

@Suite struct StatementCacheTests {
    @Test func repeatedSQLHitsTheCache() throws {
        let db = try Connection(path: ":memory:")
        let first = try db.prepare("SELECT ?")
        let second = try db.prepare("SELECT ?")
        #expect(first === second)
        let stats = db.statementCacheStatistics
        #expect(stats.misses == 1)
        #expect(stats.hits == 1)
        #expect(stats.count == 1)
    }

    @Test func cachedStatementComesBackResetWithClearedBindings() throws {
        let db = try Connection(path: ":memory:")
        let statement = try db.prepare("SELECT ?")
        try statement.bind([.integer(9)])
        #expect(try statement.step())
        #expect(statement.isBusy)
        statement.reset()
        let again = try db.prepare("SELECT ?")
        #expect(again === statement)
        #expect(!again.isBusy)
        #expect(try again.step())
        #expect(again.row.isNull(0))
    }

    @Test func leastRecentlyUsedIsEvicted() throws {
        let db = try Connection(path: ":memory:", options: .init(statementCacheCapacity: 3))
        let one = try db.prepare("SELECT 1")
        _ = try db.prepare("SELECT 2")
        _ = try db.prepare("SELECT 3")
        _ = try db.prepare("SELECT 1")  // 2 is now the least recently used
        _ = try db.prepare("SELECT 4")  // evicts 2
        var stats = db.statementCacheStatistics
        #expect(stats.evictions == 1)
        #expect(stats.count == 3)
        #expect(try db.prepare("SELECT 1") === one)
        _ = try db.prepare("SELECT 2")  // a miss: it was evicted
        stats = db.statementCacheStatistics
        #expect(stats.misses == 5)
        #expect(stats.hits == 2)
        #expect(stats.evictions == 2)
    }

    @Test func evictedStatementHeldByACallerStillWorks() throws {
        let db = try Connection(path: ":memory:", options: .init(statementCacheCapacity: 1))
        let held = try db.prepare("SELECT 'held'")
        _ = try db.prepare("SELECT 'other'")
        #expect(db.statementCacheStatistics.evictions == 1)
        #expect(try held.step())
        #expect(held.row.text(0) == "held")
    }

    @Test func zeroCapacityDisablesTheCache() throws {
        let db = try Connection(path: ":memory:", options: .init(statementCacheCapacity: 0))
        let first = try db.prepare("SELECT 1")
        let second = try db.prepare("SELECT 1")
        #expect(first !== second)
        #expect(db.statementCacheStatistics.count == 0)
    }

    @Test func nestedQueryOfTheSameSQLDoesNotDisturbTheOuterOne() throws {
        let db = try Connection(path: ":memory:")
        try db.execute("CREATE TABLE t(v INTEGER) STRICT; INSERT INTO t VALUES (1), (2), (3);")
        let sql = "SELECT v FROM t WHERE v >= ? ORDER BY v"
        let pairs = try db.query(sql, 1) { outer in
            let value = outer.int(0)
            let inner = try db.query(sql, value) { $0.int(0) }
            return (value, inner)
        }
        #expect(pairs.map(\.0) == [1, 2, 3])
        #expect(pairs.map(\.1) == [[1, 2, 3], [2, 3], [3]])
        #expect(db.statementCacheStatistics.bypasses == 3)
        #expect(db.statementCacheStatistics.count == 1)
    }

    @Test func queryResetsItsStatementEvenWhenTheRowClosureThrows() throws {
        struct Stop: Error {}
        let db = try Connection(path: ":memory:")
        try db.execute("CREATE TABLE t(v INTEGER) STRICT; INSERT INTO t VALUES (1), (2);")
        #expect(throws: Stop.self) {
            _ = try db.query("SELECT v FROM t") { _ in throw Stop() }
        }
        #expect(!(try db.prepare("SELECT v FROM t").isBusy))
        #expect(!db.isInTransaction)
    }
}
