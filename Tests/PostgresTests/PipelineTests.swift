import ListdTestSupport
import Testing

@testable import Postgres

/// `enqueue` and `sync`: statements sent without waiting inside a transaction,
/// read back at the next statement that waits; the first failure is thrown
/// there and nothing after it runs.
@Suite(.enabled(if: TestPostgres.enabled, Comment(rawValue: TestPostgres.skipReason)))
struct PipelineTests {
    @Test func queuedStatementsRunInOrderAndTravelWithTheNextRead() async throws {
        try await withDatabase { db, _ throws in
            try db.execute("CREATE TABLE t (id int8 PRIMARY KEY, s text NOT NULL)")
            try db.execute("BEGIN")
            for id in 0..<300 {
                try db.enqueue("INSERT INTO t (id, s) VALUES ($1, $2)", [.integer(Int64(id)), .text("v\(id)")])
                // Never more than the bound waits unread.
                #expect(db.queuedCount <= Connection.maxQueued)
            }
            try db.enqueue("UPDATE t SET s = 'changed' WHERE id = $1", [.integer(7)])
            #expect(db.queuedCount > 0)
            // A read sends itself behind the queue and sees all of it.
            let rows = try db.query("SELECT count(*), max(s) FILTER (WHERE id = 7) FROM t")
            #expect(db.queuedCount == 0)
            #expect(try rows[0].int64(0) == 300)
            #expect(try rows[0].text(1) == "changed")
            try db.enqueue("COMMIT")
            #expect(try db.sync() == "COMMIT")
            #expect(db.transactionState == .idle)
            #expect(try db.query("SELECT count(*) FROM t")[0].int64(0) == 300)
        }
    }

    @Test func theFirstFailureIsThrownAtTheNextWaitAndNothingAfterItRuns() async throws {
        try await withDatabase { db, _ throws in
            try db.execute("CREATE TABLE t (id int8 PRIMARY KEY)")
            try db.execute("BEGIN")
            try db.enqueue("INSERT INTO t (id) VALUES ($1)", [.integer(1)])
            try db.enqueue("SAVEPOINT w")
            try db.enqueue("INSERT INTO t (id) VALUES ($1)", [.integer(2)])
            try db.enqueue("INSERT INTO t (id) VALUES ($1)", [.integer(2)])  // a duplicate
            try db.enqueue("INSERT INTO t (id) VALUES ($1)", [.integer(3)])  // never runs
            let error = postgresError { () throws(PostgresError) in _ = try db.sync() }
            #expect(error?.isUniqueViolation == true)
            #expect(error?.sql?.contains("INSERT INTO t") == true)
            #expect(db.transactionState == .failed)
            // The savepoint queued before the failure holds: roll back to it and go on.
            try db.execute("ROLLBACK TO w")
            try db.enqueue("INSERT INTO t (id) VALUES ($1)", [.integer(4)])
            let ids = try db.query("SELECT id FROM t ORDER BY id").map { row throws(PostgresError) in try row.int64(0) }
            #expect(ids == [1, 4])
            // A read behind a failing statement throws that statement's error.
            try db.enqueue("INSERT INTO t (id) VALUES ($1)", [.integer(4)])
            let readError = postgresError { () throws(PostgresError) in _ = try db.query("SELECT count(*) FROM t") }
            #expect(readError?.isUniqueViolation == true)
            // COMMIT of a failed transaction ends in ROLLBACK: the tag says so.
            try db.enqueue("COMMIT")
            #expect(try db.sync() != "COMMIT")
            #expect(db.transactionState == .idle)
            #expect(try db.query("SELECT count(*) FROM t")[0].int64(0) == 0)
        }
    }

    @Test func queriesHandEachStatementsRowsInOrderBehindTheQueuedOnes() async throws {
        try await withDatabase { db, _ throws in
            try db.execute("CREATE TABLE t (id int8 PRIMARY KEY)")
            try db.execute("BEGIN")
            try db.enqueue("INSERT INTO t (id) SELECT generate_series(1, $1)", [.integer(5_000)])
            var seen: [(statement: Int, ids: [Int64])] = []
            let select = "SELECT id FROM t WHERE id > $1 AND id <= $2 ORDER BY id"
            try db.queries(
                stride(from: 0, to: 5_000, by: 2_000).map {
                    (select, [.integer(Int64($0)), .integer(Int64($0 + 2_000))])
                }
            ) { statement, rows in
                seen.append((statement, (0..<rows.count).compactMap { try? rows[$0].int64(0) }))
            }
            // The queued INSERT ran first; each statement's rows came whole, in order.
            #expect(seen.map(\.statement) == [0, 1, 2])
            #expect(seen.map(\.ids.count) == [2_000, 2_000, 1_000])
            #expect(seen.flatMap(\.ids) == Array(1...5_000))
            #expect(db.queuedCount == 0)
            #expect(db.transactionState == .inTransaction)
            try db.execute("COMMIT")
        }
    }

    @Test func aFailingQueryIsThrownOnceAllAnswersAreReadAndTheRowsAfterItAreNotHanded() async throws {
        try await withDatabase { db, _ throws in
            try db.execute("CREATE TABLE t (id int8 PRIMARY KEY)")
            try db.execute("INSERT INTO t (id) SELECT generate_series(1, 10)")
            try db.execute("BEGIN")
            var handed: [Int] = []
            let error = postgresError { () throws(PostgresError) in
                try db.queries([
                    ("SELECT id FROM t WHERE id <= $1", [.integer(5)]),
                    ("SELECT id / $1 FROM t", [.integer(0)]),  // division by zero
                    ("SELECT id FROM t WHERE id > $1", [.integer(5)]),
                ]) { statement, _ in handed.append(statement) }
            }
            #expect(error?.sql?.contains("/") == true)
            #expect(handed == [0])
            // The connection is in step: the failed transaction rolls back, and it reads again.
            #expect(db.transactionState == .failed)
            try db.execute("ROLLBACK")
            #expect(try db.query("SELECT count(*) FROM t")[0].int64(0) == 10)
        }
    }

    @Test func outsideATransactionAStatementRunsAtOnce() async throws {
        try await withDatabase { db, _ throws in
            try db.execute("CREATE TABLE t (id int8 PRIMARY KEY)")
            try db.enqueue("INSERT INTO t (id) VALUES ($1)", [.integer(1)])
            #expect(db.queuedCount == 0)
            // Its failure is the caller's, not a later call's.
            let error = postgresError { () throws(PostgresError) in
                try db.enqueue("INSERT INTO t (id) VALUES ($1)", [.integer(1)])
            }
            #expect(error?.isUniqueViolation == true)
            #expect(try db.query("SELECT count(*) FROM t")[0].int64(0) == 1)
            // A queued BEGIN opens the transaction the next read runs in.
            try db.enqueue("BEGIN", outsideTransaction: true)
            #expect(db.queuedCount == 1)
            try db.enqueue("INSERT INTO t (id) VALUES ($1)", [.integer(2)])
            #expect(try db.query("SELECT count(*) FROM t")[0].int64(0) == 2)
            #expect(db.transactionState == .inTransaction)
            try db.execute("ROLLBACK")
            #expect(try db.query("SELECT count(*) FROM t")[0].int64(0) == 1)
        }
    }

    @Test func aLostSessionFailsTheSyncAndClosesTheConnection() async throws {
        try await withDatabase { db, database throws in
            let admin = try Connection(url: database.url)
            defer { admin.close() }
            try db.execute("CREATE TABLE t (id int8 PRIMARY KEY)")
            try db.execute("BEGIN")
            try db.enqueue("INSERT INTO t (id) VALUES ($1)", [.integer(1)])
            try admin.query("SELECT pg_terminate_backend($1)", .integer(Int64(db.backendPID)))
            let error = postgresError { () throws(PostgresError) in _ = try db.sync() }
            #expect(error != nil)
            #expect(!db.isOpen)
        }
    }
}
