import Foundation
import ListModel
import ListStore
import ListdTestSupport
import Postgres
import SchemaMigration
import Synchronization
import Testing

@testable import PostgresStore

/// A fresh database with listd's PostgreSQL schema.
/// (The migration runs off Swift's pool; the short statements tests make on
/// the connection they are given do not.)
func withMigratedDatabase<T>(_ body: (TestDatabase, Connection) async throws -> T) async throws -> T {
    let database = try await TestPostgres.createDatabase()
    defer { database.drop() }
    try await blocking {
        let connection = try Connection(url: database.url)
        defer { connection.close() }
        try Migrator(directory: ListdProcess.migrations.appendingPathComponent("postgres")).migrate(connection)
    }
    let connection = try Connection(url: database.url)
    defer { connection.close() }
    return try await body(database, connection)
}

func commit(_ list: String, _ version: Int64, epoch: String = "e1", deleted: Bool = false) -> Commit {
    Commit(list: Identifier(list)!, epoch: epoch, version: version, deleted: deleted)
}

/// Commits heard by a listener, for tests to wait on.
final class Heard: Sendable {
    private let commits = Mutex<[Commit]>([])
    func append(_ commit: Commit) { commits.withLock { $0.append(commit) } }
    var all: [Commit] { commits.withLock { $0 } }
    /// The highest version heard per list (deletions as -1).
    var latest: [String: Int64] {
        var latest: [String: Int64] = [:]
        for commit in all {
            latest[commit.list.rawValue] = commit.deleted ? -1 : max(latest[commit.list.rawValue] ?? 0, commit.version)
        }
        return latest
    }
}

@Suite struct CommitPayloadTests {
    @Test func payloadsRoundTripAndStayUnderTheLimit() {
        var generator = SeededGenerator(seed: SeededGenerator.seed(for: "CommitPayloadTests"))
        for _ in 0..<SeededGenerator.cases(normal: 200, long: 20_000) {
            let commits = (0..<Int.random(in: 0...400, using: &generator)).map { _ in
                let length = Int.random(in: 1...Identifier.maxLength, using: &generator)
                let alphabet = Array("ABCXYZabcxyz0189._~-")
                var list = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
                // "." and ".." are the two strings of these characters that are no id.
                if Identifier(list) == nil { list += "x" }
                return Commit(
                    list: Identifier(list)!, epoch: Identifier.generate().rawValue,
                    version: Int64.random(in: 1...Int64.max, using: &generator), deleted: Bool.random(using: &generator)
                )
            }
            let payloads = CommitChannel.payloads(commits)
            #expect(payloads.allSatisfy { $0.utf8.count <= CommitChannel.maxPayloadBytes })
            let decoded = payloads.flatMap { CommitChannel.commits(inPayload: $0).commits }
            #expect(decoded == commits)
        }
    }

    @Test func malformedLinesAreSkippedAndCounted() {
        let (commits, malformed) = CommitChannel.commits(
            inPayload: "a e 1 0\nbad line\nb e x 0\nc e 2 1\nd e 3 2\n has space e 1 0")
        #expect(commits == [commit("a", 1, epoch: "e"), commit("c", 2, epoch: "e", deleted: true)])
        #expect(malformed == 4)
    }
}

@Suite(.enabled(if: TestPostgres.enabled, Comment(rawValue: TestPostgres.skipReason)))
struct CommitChannelTests {
    @Test func missedCommitsAreTheLatestOfEachListInCommitOrder() async throws {
        try await withMigratedDatabase { _, db in
            let start = try CommitChannel.serverNow(on: db)
            try db.transaction { () throws(PostgresError) in
                try CommitChannel.publish([commit("a", 1), commit("b", 1), commit("a", 2)], on: db)
            }
            try db.transaction { () throws(PostgresError) in
                try CommitChannel.publish([commit("b", 1, deleted: true), commit("c", 5)], on: db)
            }
            let missed = try CommitChannel.missed(since: start, on: db)
            #expect(missed == [commit("a", 2), commit("b", 1, deleted: true), commit("c", 5)])
            #expect(try CommitChannel.missed(since: start + 3_600_000, on: db).isEmpty)
            // Bounded: two, then two, then what is left.
            #expect(try CommitChannel.prune(before: start + 3_600_000, limit: 2, on: db) == 2)
            #expect(try CommitChannel.prune(before: start + 3_600_000, limit: 2, on: db) == 2)
            #expect(try CommitChannel.prune(before: start + 3_600_000, on: db) == 1)
            #expect(try CommitChannel.missed(since: 0, on: db).isEmpty)
        }
    }

    @Test func aListenerHearsCommittedCommitsOnlyAndNotItsOwnWriters() async throws {
        try await withMigratedDatabase { database, db in
            let heard = Heard()
            let listener = CommitListener(url: database.url, logger: PostgresStoreTests.quiet) { heard.append($0) }
            try await listener.start()
            try db.transaction { () throws(PostgresError) in try CommitChannel.publish([commit("a", 2)], on: db) }
            try db.execute("BEGIN")
            try CommitChannel.publish([commit("rolled-back", 9)], on: db)
            try db.execute("ROLLBACK")
            try db.transaction { () throws(PostgresError) in try CommitChannel.publish([commit("a", 3)], on: db) }
            #expect(await eventually { heard.all.count >= 2 })
            #expect(heard.all == [commit("a", 2), commit("a", 3)])

            listener.ignoreSender(db.backendPID)
            try db.transaction { () throws(PostgresError) in try CommitChannel.publish([commit("own", 1)], on: db) }
            let other = try Connection(url: database.url)
            defer { other.close() }
            try other.transaction { () throws(PostgresError) in try CommitChannel.publish([commit("b", 1)], on: other) }
            #expect(await eventually { heard.all.count >= 3 })
            #expect(heard.all.last == commit("b", 1))
            #expect(!heard.all.contains(commit("own", 1)))
            await listener.stop()
            #expect(listener.backendPID == 0)
        }
    }

    @Test func aListenerOnABadURLFailsToStart() async throws {
        _ = try TestPostgres.requireURL()
        let listener = CommitListener(url: "postgres://nobody@127.0.0.1:1/none?connect_timeout=2") { _ in }
        await #expect(throws: PostgresError.self) { try await listener.start() }
        await listener.stop()  // returns at once: nothing runs
    }

    /// `pg_terminate_backend` on the listening session, again and again while
    /// writers commit: every list's last commit still reaches the listener
    /// (heard live or replayed after the reconnect).
    @Test func terminatingTheListeningSessionLosesNoWakeUp() async throws {
        try await withMigratedDatabase { database, _ in
            let heard = Heard()
            var configuration = CommitListener.Configuration()
            configuration.initialBackoff = .milliseconds(50)
            let listener = CommitListener(
                url: database.url, configuration: configuration, logger: PostgresStoreTests.quiet
            ) { heard.append($0) }
            try await listener.start()
            // 400 commits and the terminations, on a thread of their own (libpq blocks).
            let seed = SeededGenerator.seed(for: "terminatingTheListeningSession")
            let (published, terminations) = try await blocking { [url = database.url] in
                let writer = try Connection(url: url)
                defer { writer.close() }
                let killer = try Connection(url: url)
                defer { killer.close() }
                var generator = SeededGenerator(seed: seed)
                var published: [String: Int64] = [:]
                var terminations = 0
                var killed: Int32 = 0
                for round in 0..<400 {
                    let list = "list\(Int.random(in: 0..<20, using: &generator))"
                    let version = (published[list] ?? 0) + 1
                    published[list] = version
                    try writer.transaction { () throws(PostgresError) in
                        try CommitChannel.publish([commit(list, version)], on: writer)
                    }
                    if round % 50 == 25 {
                        // The listener's session since the last termination (it
                        // reconnects after its back-off; a loaded machine may take a while).
                        let deadline = ContinuousClock.now + .seconds(30)
                        var pid = listener.backendPID
                        while pid == 0 || pid == killed, ContinuousClock.now < deadline {
                            usleep(2_000)
                            pid = listener.backendPID
                        }
                        if pid != 0, pid != killed {
                            try killer.query("SELECT pg_terminate_backend($1::int4)", .integer(Int64(pid)))
                            killed = pid
                            terminations += 1
                        }
                    }
                }
                return (published, terminations)
            }
            #expect(terminations == 8)
            let caughtUp = await eventually(20) { heard.latest == published }
            #expect(caughtUp, "missing: \(published.filter { heard.latest[$0.key] != $0.value })")
            #expect(listener.reconnects >= terminations - 1)
            #expect(listener.replayed > 0, "commits made while disconnected came from the catch-up")
            await listener.stop()
        }
    }
}
