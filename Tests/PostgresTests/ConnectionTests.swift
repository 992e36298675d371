import Foundation
import ListdTestSupport
import Testing

@testable import Postgres

/// Runs `body` on a connection to a fresh database, then drops it; all of it
/// on a thread of its own (libpq blocks), never on Swift's pool.
func withDatabase<T: Sendable>(_ body: @escaping @Sendable (Connection, TestDatabase) throws -> T) async throws -> T {
    try await blocking {
        let database = try TestPostgres.createDatabaseBlocking()
        defer { database.drop() }
        let connection = try Connection(url: database.url)
        defer { connection.close() }
        return try body(connection, database)
    }
}

func postgresError(_ body: () throws(PostgresError) -> Void) -> PostgresError? {
    do {
        try body()
        return nil
    } catch {
        return error
    }
}

@Suite(.enabled(if: TestPostgres.enabled, Comment(rawValue: TestPostgres.skipReason)))
struct ConnectionTests {
    @Test func parametersRoundTripThroughPreparedAndOneShotStatements() async throws {
        try await withDatabase { db, _ throws in
            let values: [PostgresValue] = [
                .integer(0), .integer(.max), .integer(.min), .double(1.5), .double(-0.25), .bool(true), .bool(false),
                .text(""), .text("ünïcödé ✓ 'quotes' \"double\" \\ backslash $1"), .bytes([]),
                .bytes([0, 1, 0xff, 0x5c]),
                .null,
            ]
            for value in values {
                let cast: String
                switch value {
                case .integer: cast = "::int8"
                case .double: cast = "::float8"
                case .bool: cast = "::bool"
                case .text, .null: cast = "::text"
                case .bytes: cast = "::bytea"
                }
                let prepared = try db.query("SELECT $1\(cast)", value)[0].value(0)
                let once = try db.queryOnce("SELECT $1\(cast)", [value])[0].value(0)
                #expect(prepared == value)
                #expect(once == value)
            }
        }
    }

    @Test func randomTextAndBytesSurviveTheWire() async throws {
        let seed = SeededGenerator.seed(for: "Postgres.randomTextAndBytes")
        try await withDatabase { db, _ throws in
            var generator = SeededGenerator(seed: seed)
            try db.execute("CREATE TABLE t (id int8 PRIMARY KEY, s text NOT NULL, b bytea NOT NULL)")
            var expected: [Int64: (String, [UInt8])] = [:]
            for id in 0..<300 {
                let length = Int.random(in: 0...64, using: &generator)
                // Any scalar but NUL, which PostgreSQL's text cannot hold.
                let text = String(
                    String.UnicodeScalarView(
                        (0..<length).compactMap { _ in
                            Unicode.Scalar(UInt32.random(in: 1...0x10FFFF, using: &generator))
                        }))
                let bytes = (0..<Int.random(in: 0...64, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
                try db.query("INSERT INTO t VALUES ($1, $2, $3)", .integer(Int64(id)), .text(text), .bytes(bytes))
                expected[Int64(id)] = (text, bytes)
            }
            let rows = try db.query("SELECT id, s, b FROM t ORDER BY id").map { row throws(PostgresError) in
                (try row.int64(0), try row.text(1), try row.bytes(2))
            }
            #expect(rows.count == expected.count)
            for (id, text, bytes) in rows {
                #expect(expected[id]?.0 == text, "row \(id) text")
                #expect(expected[id]?.1 == bytes, "row \(id) bytes")
            }
            #expect(db.preparedCount == 2)
        }
    }

    @Test func typedReadsRefuseOtherTypesAndNullNamingTheColumn() async throws {
        try await withDatabase { db, _ throws in
            let row = try db.query("SELECT 'x'::text AS word, NULL::int8 AS nothing, 7::int4 AS seven")[0]
            #expect(try row.int(2) == 7)
            #expect(try row.optionalInt64(1) == nil)
            #expect(try row.optionalText(0) == "x")
            let wrongType = postgresError { () throws(PostgresError) in _ = try row.int64(0) }
            #expect(wrongType?.kind == .misuse)
            #expect(wrongType?.message.contains("word") == true)
            #expect(postgresError { () throws(PostgresError) in _ = try row.text(1) }?.kind == .misuse)
            #expect(postgresError { () throws(PostgresError) in _ = try row.text(9) }?.kind == .misuse)
        }
    }

    @Test func serverErrorsCarrySQLStateMessageDetailAndStatement() async throws {
        try await withDatabase { db, _ throws in
            try db.execute("CREATE TABLE u (id text PRIMARY KEY)")
            try db.query("INSERT INTO u VALUES ($1)", "a")
            let duplicate = postgresError { () throws(PostgresError) in try db.query("INSERT INTO u VALUES ($1)", "a") }
            #expect(duplicate?.kind == .server)
            #expect(duplicate?.isUniqueViolation == true)
            #expect(duplicate?.detail?.contains("(id)=(a)") == true)
            #expect(duplicate?.sql == "INSERT INTO u VALUES ($1)")
            #expect(duplicate?.description.contains("SQLSTATE 23505") == true)
            let syntax = postgresError { () throws(PostgresError) in try db.execute("SELEC 1") }
            #expect(syntax?.sqlState == "42601")
            // The session is still usable after an error outside a transaction.
            #expect(try db.query("SELECT count(*) FROM u")[0].int64(0) == 1)
        }
    }

    @Test func transactionsCommitOrRollBack() async throws {
        try await withDatabase { db, _ throws in
            try db.execute("CREATE TABLE v (n int8)")
            try db.transaction { () throws(PostgresError) in try db.query("INSERT INTO v VALUES ($1)", .integer(1)) }
            let failed = postgresError { () throws(PostgresError) in
                try db.transaction { () throws(PostgresError) in
                    try db.query("INSERT INTO v VALUES ($1)", .integer(2))
                    #expect(db.transactionState == .inTransaction)
                    try db.execute("SELECT 1/0")
                }
            }
            #expect(failed?.sqlState == "22012")
            #expect(db.transactionState == .idle)
            #expect(try db.query("SELECT n FROM v").map { row throws(PostgresError) in try row.int64(0) } == [1])
        }
    }

    @Test func connectingToNothingFailsWithAConnectionErrorWithoutThePassword() async throws {
        _ = try TestPostgres.requireURL()
        let error = try await blocking {
            postgresError { () throws(PostgresError) in
                _ = try Connection(url: "postgres://listd:s3cret@127.0.0.1:1/none?connect_timeout=2")
            }
        }
        #expect(error?.kind == .connection)
        #expect(error?.isConnectionFailure == true)
        #expect(error?.description.contains("s3cret") == false)
        #expect(error?.description.contains("127.0.0.1") == true)
    }

    @Test func notificationsArriveOnCommitOnlyAndInOrder() async throws {
        try await withDatabase { sender, database throws in
            let listener = try Connection(url: database.url)
            defer { listener.close() }
            try listener.listen("listd changes")
            #expect(try listener.notifications(waitingUpTo: .milliseconds(10)).isEmpty)

            try sender.execute("BEGIN")
            try sender.notify("listd changes", payload: "one")
            try sender.notify("listd changes", payload: "two")
            #expect(try listener.notifications(waitingUpTo: .milliseconds(100)).isEmpty)  // not before COMMIT
            try sender.execute("COMMIT")
            var heard: [Connection.Notification] = []
            let deadline = ContinuousClock.now + .seconds(10)
            while heard.count < 2, ContinuousClock.now < deadline {
                heard += try listener.notifications(waitingUpTo: .seconds(1))
            }
            #expect(heard.map(\.payload) == ["one", "two"])
            #expect(heard.allSatisfy { $0.channel == "listd changes" && $0.senderPID == sender.backendPID })

            try sender.execute("BEGIN")
            try sender.notify("listd changes", payload: "rolled back")
            try sender.execute("ROLLBACK")
            try sender.notify("listd changes", payload: "after")
            var next: [Connection.Notification] = []
            while next.isEmpty, ContinuousClock.now < deadline {
                next = try listener.notifications(waitingUpTo: .seconds(1))
            }
            #expect(next.map(\.payload) == ["after"])
        }
    }

    @Test func aTerminatedListenerReportsAConnectionFailure() async throws {
        try await withDatabase { admin, database throws in
            let listener = try Connection(url: database.url)
            defer { listener.close() }
            try listener.listen("c")
            try admin.query("SELECT pg_terminate_backend($1::int4)", .integer(Int64(listener.backendPID)))
            var failure: PostgresError?
            let deadline = ContinuousClock.now + .seconds(10)
            while failure == nil, ContinuousClock.now < deadline {
                failure = postgresError { () throws(PostgresError) in
                    _ = try listener.notifications(waitingUpTo: .milliseconds(200))
                }
            }
            #expect(failure?.isConnectionFailure == true)
            #expect(!listener.isOpen)
        }
    }

    @Test func settingsOverrideAndExtendTheURL() async throws {
        try await withDatabase { _, database throws in
            let url = database.url + (database.url.contains("?") ? "&" : "?") + "application_name=from-url"
            let plain = try Connection(url: url)
            defer { plain.close() }
            #expect(try plain.query("SHOW application_name")[0].text(0) == "from-url")
            let tuned = try Connection(url: url, settings: ["application_name": "listd-test", "keepalives_idle": "7"])
            defer { tuned.close() }
            #expect(try tuned.query("SHOW application_name")[0].text(0) == "listd-test")
            #expect(try tuned.query("SELECT current_database()")[0].text(0) == database.name)
        }
    }

    @Test func redactedURLsHideThePassword() {
        #expect(Connection.redacted("postgres://u:pw@h:5432/db") == "postgres://u:***@h:5432/db")
        #expect(Connection.redacted("postgres://u@h/db") == "postgres://u@h/db")
        #expect(Connection.redacted("host=h password=pw user=u") == "host=h password=*** user=u")
        #expect(Connection.quoteIdentifier("a\"b") == "\"a\"\"b\"")
    }
}
