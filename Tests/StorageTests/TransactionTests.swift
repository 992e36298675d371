import CSQLite
import Dispatch
import Foundation
import ListdTestSupport
import Synchronization
import Testing

@testable import Storage

@Suite struct TransactionTests {
    struct Boom: Error, Equatable {}

    private func makeTable(_ db: Connection) throws {
        try db.execute("CREATE TABLE t(v INTEGER PRIMARY KEY) STRICT")
    }

    private func values(_ db: Connection) throws -> [Int] {
        try db.query("SELECT v FROM t ORDER BY v") { $0.int(0) }
    }

    @Test(arguments: TransactionKind.allCases)
    func commitsWhenTheBodyReturns(kind: TransactionKind) throws {
        let dir = try TemporaryDirectory()
        let db = try Connection(path: dir.path("t.sqlite"))
        try makeTable(db)
        let result = try db.transaction(kind) {
            #expect(db.isInTransaction)
            try db.run("INSERT INTO t VALUES (1)")
            return "done"
        }
        #expect(result == "done")
        #expect(!db.isInTransaction)
        #expect(try values(db) == [1])
    }

    @Test func rollsBackWhenTheBodyThrows() throws {
        let db = try Connection(path: ":memory:")
        try makeTable(db)
        #expect(throws: Boom.self) {
            try db.transaction(.immediate) {
                try db.run("INSERT INTO t VALUES (1)")
                throw Boom()
            }
        }
        #expect(!db.isInTransaction)
        #expect(try values(db) == [])
    }

    @Test func rollsBackWhenAStatementFails() throws {
        let db = try Connection(path: ":memory:")
        try makeTable(db)
        let error = try #require(
            sqliteError {
                try db.transaction {
                    try db.run("INSERT INTO t VALUES (1)")
                    try db.run("INSERT INTO t VALUES (1)")
                }
            })
        #expect(error.isUniqueViolation)
        #expect(try values(db) == [])
    }

    @Test func transactionsDoNotNest() throws {
        let db = try Connection(path: ":memory:")
        try makeTable(db)
        try db.transaction {
            try db.run("INSERT INTO t VALUES (1)")
            let error = try #require(sqliteError { try db.transaction { try db.run("INSERT INTO t VALUES (2)") } })
            #expect(error.message.contains("within a transaction"))
            // The failed inner BEGIN must not have rolled back the outer transaction.
            #expect(db.isInTransaction)
        }
        #expect(try values(db) == [1])
    }

    @Test func failingInnerSavepointLeavesTheOuterWorkIntact() throws {
        let db = try Connection(path: ":memory:")
        try makeTable(db)
        try db.transaction(.immediate) {
            try db.run("INSERT INTO t VALUES (1)")
            try db.savepoint {
                try db.run("INSERT INTO t VALUES (2)")
                #expect(throws: Boom.self) {
                    try db.savepoint {
                        try db.run("INSERT INTO t VALUES (3)")
                        throw Boom()
                    }
                }
                #expect(try values(db) == [1, 2])
                try db.savepoint {
                    try db.run("INSERT INTO t VALUES (4)")
                }
            }
            let failed = try #require(
                sqliteError {
                    try db.savepoint {
                        try db.run("INSERT INTO t VALUES (5)")
                        try db.run("INSERT INTO t VALUES (1)")  // duplicate
                    }
                })
            #expect(failed.isUniqueViolation)
            try db.run("INSERT INTO t VALUES (6)")
        }
        #expect(try values(db) == [1, 2, 4, 6])
    }

    @Test func savepointNamesFollowNestingDepth() throws {
        let db = try Connection(path: ":memory:")
        try makeTable(db)
        try db.savepoint {
            try db.savepoint {
                // Rolling back to a savepoint keeps it open: with nothing done
                // yet, this only proves that sp2 exists and sp3 does not.
                try db.execute("ROLLBACK TO sp2")
                #expect(
                    sqliteError { try db.execute("ROLLBACK TO sp3") }?.message.contains("no such savepoint") == true)
            }
            try db.execute("ROLLBACK TO sp1")
            try db.run("INSERT INTO t VALUES (1)")
        }
        #expect(try values(db) == [1])
        #expect(!db.isInTransaction)
    }

    @Test func outermostSavepointActsAsATransaction() throws {
        let db = try Connection(path: ":memory:")
        try makeTable(db)
        #expect(throws: Boom.self) {
            try db.savepoint {
                try db.run("INSERT INTO t VALUES (1)")
                #expect(db.isInTransaction)
                throw Boom()
            }
        }
        #expect(!db.isInTransaction)
        #expect(try values(db) == [])
        try db.savepoint { try db.run("INSERT INTO t VALUES (2)") }
        #expect(try values(db) == [2])
    }

    @Test func walReaderSeesCommittedDataOnly() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("w.sqlite")
        let writer = try Connection(path: path)
        try makeTable(writer)
        try writer.run("INSERT INTO t VALUES (1)")
        let reader = try Connection(path: path, options: .init(readOnly: true))

        try writer.execute("BEGIN IMMEDIATE")
        try writer.run("INSERT INTO t VALUES (2)")
        #expect(try values(reader) == [1], "uncommitted rows are invisible")

        // A reader inside its own transaction keeps its snapshot across the commit.
        try reader.transaction {
            #expect(try values(reader) == [1])
            try writer.execute("COMMIT")
            #expect(try values(reader) == [1])
        }
        #expect(try values(reader) == [1, 2])
    }

    /// A writer thread moves money between two accounts while a reader thread
    /// reads both balances in one transaction: every snapshot must show the
    /// same total, and the reader never blocks or fails.
    @Test func concurrentReaderThreadAlwaysSeesAConsistentSnapshot() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("c.sqlite")
        do {
            let setup = try Connection(path: path)
            try setup.execute(
                "CREATE TABLE account(id INTEGER PRIMARY KEY, balance INTEGER NOT NULL) STRICT;"
                    + "INSERT INTO account VALUES (1, 1000), (2, 0);")
        }
        let transfers = 300
        let finished = Atomic<Bool>(false)
        let failures = Mutex<[String]>([])
        let snapshots = Atomic<Int>(0)
        let group = DispatchGroup()

        group.enter()
        Thread.detachNewThread {
            defer {
                finished.store(true, ordering: .releasing)
                group.leave()
            }
            do {
                let db = try Connection(path: path, options: .init(synchronous: .normal))
                for _ in 0..<transfers {
                    try db.transaction(.immediate) {
                        try db.run("UPDATE account SET balance = balance - 1 WHERE id = 1")
                        try db.run("UPDATE account SET balance = balance + 1 WHERE id = 2")
                    }
                }
            } catch {
                failures.withLock { $0.append("writer: \(error)") }
            }
        }
        group.enter()
        Thread.detachNewThread {
            defer { group.leave() }
            do {
                let db = try Connection(path: path, options: .init(readOnly: true))
                var done = false
                while !done {
                    done = finished.load(ordering: .acquiring)
                    let (first, second) = try db.transaction {
                        let first = try db.scalar("SELECT balance FROM account WHERE id = 1")
                        let second = try db.scalar("SELECT balance FROM account WHERE id = 2")
                        return (first, second)
                    }
                    guard case .integer(let a) = first, case .integer(let b) = second, a + b == 1000 else {
                        failures.withLock {
                            $0.append(
                                "inconsistent snapshot \(String(describing: first)) + \(String(describing: second))")
                        }
                        return
                    }
                    snapshots.add(1, ordering: .relaxed)
                }
            } catch {
                failures.withLock { $0.append("reader: \(error)") }
            }
        }
        // Waited for on a thread of its own: blocking here would hold one of
        // Swift's cooperative threads (two on a two-core machine) from every other suite.
        try await blocking { group.wait() }
        #expect(failures.withLock { $0 } == [])
        #expect(snapshots.load(ordering: .relaxed) > 0)
        let db = try Connection(path: path)
        #expect(try db.scalar("SELECT balance FROM account WHERE id = 2") == .integer(Int64(transfers)))
    }
}
