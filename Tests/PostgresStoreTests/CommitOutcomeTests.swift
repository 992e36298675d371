import ListdTestSupport
import Postgres
import Testing

@testable import PostgresStore

/// A COMMIT whose answer was lost is judged on a new session by its
/// transaction's status, never by whether a `commits` row of its list and
/// version is there: once it rolled back, another instance may commit that
/// same version (the torture harness, PostgreSQL with 3 instances, seed 27:
/// "t0@37823 acknowledged to both insert-w1-17907 and update-w3-17930-18034",
/// after a writer session was ended mid-COMMIT).
@Suite(.serialized, .enabled(if: TestPostgres.enabled, Comment(rawValue: TestPostgres.skipReason)))
struct CommitOutcomeTests {
    static let row =
        "INSERT INTO commits (list_id, epoch, version, deleted, committed_at) VALUES ('l', 'e', 7, 0, 0)"

    @Test func aCommittedTransactionIsCommitted() async throws {
        try await withMigratedDatabase { database, _ in
            let outcome = try await blocking {
                let session = try Connection(url: database.url)
                defer { session.close() }
                try session.execute("BEGIN")
                let id = try session.query("SELECT pg_current_xact_id()::text")[0].text(0)
                try session.execute(Self.row)
                try session.execute("COMMIT")
                return PostgresCommitDialect.outcome(ofTransaction: id, url: database.url, lostSession: 0)
            }
            #expect(outcome == .committed)
        }
    }

    /// The lost session is ended by the check itself, its transaction rolled back.
    @Test func aTransactionStillOpenOnTheLostSessionIsEndedAndRolledBack() async throws {
        try await withMigratedDatabase { database, admin in
            let outcome = try await blocking {
                let lost = try Connection(url: database.url)
                defer { lost.close() }
                try lost.execute("BEGIN")
                let id = try lost.query("SELECT pg_current_xact_id()::text")[0].text(0)
                try lost.execute(Self.row)
                return PostgresCommitDialect.outcome(ofTransaction: id, url: database.url, lostSession: lost.backendPID)
            }
            #expect(outcome == .rolledBack)
            #expect(try admin.query("SELECT count(*) FROM commits")[0].int64(0) == 0)
        }
    }

    /// The case that acknowledged one version to two writes: the lost
    /// transaction rolled back, then another session committed the same list's
    /// same version before the check looked.
    @Test func aRolledBackTransactionIsNotTakenForAnotherThatCommittedItsVersion() async throws {
        try await withMigratedDatabase { database, admin in
            let outcome = try await blocking {
                let lost = try Connection(url: database.url)
                defer { lost.close() }
                try lost.execute("BEGIN")
                let id = try lost.query("SELECT pg_current_xact_id()::text")[0].text(0)
                try lost.execute(Self.row)
                let other = try Connection(url: database.url)
                defer { other.close() }
                _ = try other.query("SELECT pg_terminate_backend($1::int4)", .integer(Int64(lost.backendPID)))
                try other.execute("BEGIN")
                try other.execute(Self.row)
                try other.execute("COMMIT")
                // (The check waits for the ended session to be gone, so its rollback is over.)
                return PostgresCommitDialect.outcome(
                    ofTransaction: id, url: database.url, lostSession: lost.backendPID)
            }
            #expect(outcome == .rolledBack)
            #expect(try admin.query("SELECT count(*) FROM commits")[0].int64(0) == 1, "only the other session's row")
        }
    }

    @Test func anIdPostgreSQLCannotTellIsUnknown() async throws {
        try await withMigratedDatabase { database, _ in
            let outcome = try await blocking {
                PostgresCommitDialect.outcome(ofTransaction: "not an id", url: database.url, lostSession: 0)
            }
            guard case .unknown = outcome else {
                Issue.record("\(outcome)")
                return
            }
        }
    }
}
