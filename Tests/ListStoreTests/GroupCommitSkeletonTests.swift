import ListModel
import ListStore
import Storage
import Synchronization
import Testing

/// ``GroupCommit``'s walk on a fake dialect that records every step and can
/// be told to fail any of them: what each write is answered, what the feed
/// hears, and in which order, without a database.
@Suite struct GroupCommitSkeletonTests {
    /// What happened, in order: the dialect's steps, the writes' runs, the
    /// feed, the hook and the answers.
    final class Journal: Sendable {
        private let events = Mutex<[String]>([])

        func note(_ event: String) { events.withLock { $0.append(event) } }

        var all: [String] { events.withLock { $0 } }

        /// The answers, by write name: "ok" or the error's detail.
        var answers: [String: String] {
            var answers: [String: String] = [:]
            for event in all {
                if event.hasPrefix("ok "), let name = event.split(separator: " ").last {
                    answers[String(name)] = "ok"
                } else if event.hasPrefix("fail ") {
                    let parts = event.dropFirst(5).split(separator: ":", maxSplits: 1)
                    answers[String(parts[0])] = parts.count > 1 ? String(parts[1].dropFirst()) : ""
                }
            }
            return answers
        }
    }

    struct Job: GroupCommitJob {
        let cancellation = CancellationFlag()
        let run: @Sendable (ListWriter) throws(StoreError) -> CompletedWrite
        let fail: @Sendable (StoreError) -> Void

        /// A write named `name` that commits version `version` of list `a`,
        /// or throws `error`.
        init(_ name: String, version: Int64 = 1, throwing error: StoreError? = nil, journal: Journal) {
            run = { _ throws(StoreError) in
                journal.note("run \(name)")
                if let error { throw error }
                return CompletedWrite(
                    commits: [Commit(list: Identifier("a"), epoch: "e", version: version, deleted: false)],
                    succeed: { journal.note("ok \(name)") })
            }
            fail = { error in journal.note("fail \(name): \(error.detail)") }
        }
    }

    /// A session nobody calls: the fake dialect runs no SQL.
    final class NoSession: SQLSession {
        func execute(_ sql: String) throws(StoreError) {}
        func beginRead() throws(StoreError) {}
        func rows(_ sql: String, _ values: [SQLValue]) throws(StoreError) -> [[SQLValue]] { [] }
        var dialect: SQLDialect { .postgreSQL }
    }

    struct FakeDialect: GroupCommitDialect {
        let writer: ListWriter
        let journal: Journal
        var beginFails = false
        /// Jobs past this many are kept back by `begin`, as PostgreSQL's lock does.
        var runs = Int.max
        var savepointFailsAt: Int?
        var release: [Int: SavepointRelease] = [:]
        var breaksBatch = false
        var commitFails = false
        private var savepoints = 0

        init(journal: Journal) {
            self.journal = journal
            var configuration = StoreConfiguration()
            configuration.onGroupCommit = { journal.note("hook \($0)") }
            writer = ListWriter(db: Database(session: NoSession()), configuration: configuration)
        }

        mutating func begin(_ batch: [Job]) throws(StoreError) -> [Job] {
            journal.note("begin")
            if beginFails { throw StoreError(.storageFailure, "cannot begin") }
            return Array(batch.prefix(runs))
        }

        mutating func openSavepoint() throws(StoreError) {
            savepoints += 1
            journal.note("savepoint \(savepoints)")
            if savepoints == savepointFailsAt { throw StoreError(.storageFailure, "no savepoint") }
        }

        mutating func releaseSavepoint() -> SavepointRelease {
            journal.note("release \(savepoints)")
            return release[savepoints] ?? .released
        }

        mutating func batchBroken(byFailure failure: StoreError) -> StoreError? {
            breaksBatch ? StoreError(.storageFailure, "broken by \(failure.detail)") : nil
        }

        mutating func rollBackToSavepoint() throws(StoreError) { journal.note("rollback to \(savepoints)") }

        mutating func commit(_ commits: [Commit]) throws(StoreError) {
            journal.note("commit \(commits.map(\.version))")
            if commitFails { throw StoreError(.storageFailure, "disk I/O error") }
        }

        mutating func rollBack() { journal.note("rollback") }
        mutating func willPublish(_ commits: [Commit]) { journal.note("will publish") }
        mutating func didPublish(_ commits: [Commit]) { journal.note("did publish") }
    }

    /// Runs `jobs` through a group commit on `dialect`, with the feed and the
    /// hook noting what they hear; the statistics after.
    static func commit(
        _ jobs: [Job], _ dialect: inout FakeDialect, journal: Journal
    ) -> (writes: Int, commits: Int) {
        let feed = CommitFeed()
        let subscription = feed.subscribe { journal.note("feed v\($0.version)") }
        defer { subscription.cancel() }
        let statistics = CommitStatistics()
        let group = GroupCommit(feed: feed, board: IndexBoard(budget: 1 << 20), statistics: statistics)
        group.commit(jobs, on: &dialect)
        return (statistics.writes.load(ordering: .relaxed), statistics.commits.load(ordering: .relaxed))
    }

    @Test func theFeedHearsTheCommitsBeforeAnyWriterIsAnsweredFailuresFirst() {
        let journal = Journal()
        var dialect = FakeDialect(journal: journal)
        let jobs = [
            Job("one", version: 1, journal: journal),
            Job("bad", throwing: StoreError(.itemNotFound, "item \"x\" not found"), journal: journal),
            Job("two", version: 2, journal: journal),
        ]
        let counted = Self.commit(jobs, &dialect, journal: journal)
        #expect(
            journal.all == [
                "begin",
                "savepoint 1", "run one", "release 1",
                "savepoint 2", "run bad", "rollback to 2",
                "savepoint 3", "run two", "release 3",
                "commit [1, 2]", "hook 2", "will publish", "feed v1", "feed v2", "did publish",
                "fail bad: item \"x\" not found", "ok one", "ok two",
            ])
        #expect(counted.writes == 2 && counted.commits == 1)
    }

    @Test func aCancelledWriteIsSkippedBeforeItStartsAndTheOthersCommit() {
        let journal = Journal()
        var dialect = FakeDialect(journal: journal)
        let jobs = [Job("one", version: 1, journal: journal), Job("gone", journal: journal)]
        jobs[1].cancellation.cancel()
        let counted = Self.commit(jobs, &dialect, journal: journal)
        #expect(!journal.all.contains("run gone"))
        #expect(journal.all.filter { $0.hasPrefix("savepoint") } == ["savepoint 1"])
        #expect(journal.answers == ["one": "ok", "gone": StoreError.cancelledBeforeStart.detail])
        #expect(counted.writes == 1)
    }

    /// A failed COMMIT: every write of the batch (also one that failed alone,
    /// and one skipped) gets the one error; the feed hears nothing.
    @Test func aFailedCommitFailsEveryWriteWithOneErrorAndPublishesNothing() {
        let journal = Journal()
        var dialect = FakeDialect(journal: journal)
        dialect.commitFails = true
        let jobs = [
            Job("one", version: 1, journal: journal),
            Job("bad", throwing: StoreError(.itemNotFound, "item \"x\" not found"), journal: journal),
            Job("gone", journal: journal),
            Job("two", version: 2, journal: journal),
        ]
        jobs[2].cancellation.cancel()
        let counted = Self.commit(jobs, &dialect, journal: journal)
        let error = "the commit failed, nothing was written: disk I/O error"
        #expect(journal.answers == ["one": error, "bad": error, "gone": error, "two": error])
        #expect(journal.all.filter { $0.hasPrefix("fail") }.count == 4)
        #expect(
            !journal.all.contains {
                $0.hasPrefix("feed") || $0.hasPrefix("ok") || $0.hasPrefix("hook") || $0.contains("publish")
            })
        #expect(journal.all.suffix(5).first == "rollback")
        #expect(counted.writes == 0 && counted.commits == 0)
    }

    @Test func aFullDatabaseBreaksTheBatchAndEveryWriteIsToldSo() {
        let journal = Journal()
        var dialect = FakeDialect(journal: journal)
        let jobs = [
            Job("one", version: 1, journal: journal),
            Job("big", throwing: .databaseFull, journal: journal),
            Job("two", version: 2, journal: journal),
        ]
        _ = Self.commit(jobs, &dialect, journal: journal)
        #expect(!journal.all.contains("run two"))
        #expect(!journal.all.contains { $0.hasPrefix("commit") || $0.hasPrefix("rollback to") })
        #expect(journal.all.contains("rollback"))
        let full = StoreError.databaseFull.detail
        #expect(journal.answers == ["one": full, "big": full, "two": full])
    }

    @Test func aFailedBeginFailsEveryJobTakenWithItsError() {
        let journal = Journal()
        var dialect = FakeDialect(journal: journal)
        dialect.beginFails = true
        _ = Self.commit([Job("one", journal: journal), Job("two", journal: journal)], &dialect, journal: journal)
        #expect(journal.all == ["begin", "fail one: cannot begin", "fail two: cannot begin"])
    }

    /// Jobs `begin` keeps back (another session holds their lists) are neither run nor answered.
    @Test func onlyTheJobsBeginReturnsRun() {
        let journal = Journal()
        var dialect = FakeDialect(journal: journal)
        dialect.runs = 1
        _ = Self.commit([Job("one", journal: journal), Job("later", journal: journal)], &dialect, journal: journal)
        #expect(journal.answers == ["one": "ok"])
        #expect(!journal.all.contains("run later"))
    }

    @Test func aSessionThatBreaksMidBatchFailsTheWholeBatch() {
        // At a savepoint.
        var journal = Journal()
        var dialect = FakeDialect(journal: journal)
        dialect.savepointFailsAt = 2
        _ = Self.commit([Job("one", journal: journal), Job("two", journal: journal)], &dialect, journal: journal)
        var error = "the commit failed, nothing was written: no savepoint"
        #expect(journal.answers == ["one": error, "two": error])
        #expect(!journal.all.contains("run two"))

        // At a release.
        journal = Journal()
        dialect = FakeDialect(journal: journal)
        dialect.release = [1: .batchBroken(StoreError(.storageFailure, "connection lost"))]
        _ = Self.commit([Job("one", journal: journal), Job("two", journal: journal)], &dialect, journal: journal)
        error = "the commit failed, nothing was written: connection lost"
        #expect(journal.answers == ["one": error, "two": error])
        #expect(!journal.all.contains("run two"))

        // A write's failure the dialect says is not the write's own.
        journal = Journal()
        dialect = FakeDialect(journal: journal)
        dialect.breaksBatch = true
        let jobs = [
            Job("one", journal: journal), Job("bad", throwing: StoreError(.itemNotFound, "gone"), journal: journal),
        ]
        _ = Self.commit(jobs, &dialect, journal: journal)
        error = "the commit failed, nothing was written: broken by gone"
        #expect(journal.answers == ["one": error, "bad": error])
        #expect(!journal.all.contains { $0.hasPrefix("rollback to") })
    }

    /// A release that fails is the write's failure: it rolls back alone.
    @Test func aFailedReleaseFailsTheWriteAlone() {
        let journal = Journal()
        var dialect = FakeDialect(journal: journal)
        dialect.release = [1: .writeFailed(StoreError(.storageFailure, "deferred constraint"))]
        _ = Self.commit([Job("one", journal: journal), Job("two", journal: journal)], &dialect, journal: journal)
        #expect(journal.answers == ["one": "deferred constraint", "two": "ok"])
        #expect(journal.all.contains("rollback to 1"))
    }
}
