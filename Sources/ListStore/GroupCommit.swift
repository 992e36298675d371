import Synchronization

// Concurrency model
//
// A group commit runs on one writer thread and never leaves it: SQLiteStore's
// `store-writer`, or one of PostgresStore's `pg-writer-N` (one per lane, each
// with a session of its own). That thread owns the dialect (its connection and
// its per-batch state), the `ListWriter` with its hot rank indexes, and the
// batch; it runs each job's `run` (the write itself), the feed's observers
// (`CommitFeed.publish` calls them on this thread, outside the feed's lock),
// and then the answers (`fail`, `succeed`), which only resume the callers'
// continuations: the callers' tasks wait on Swift's cooperative pool, where no
// database call ever runs. What other threads touch is locked on its own: the
// queue the jobs came from (`WorkQueue`, a Mutex), a job's `CancellationFlag`
// (an Atomic the caller's cancellation handler sets from any thread), the
// `IndexBoard` the readers take rank indexes from (a Mutex), and the
// `CommitStatistics` (Atomics). PostgresStore's writer threads share the
// feed, the board and the statistics (each runs its own batches with its own
// dialect), and its `PublishOrder` (a Mutex and a condition), which keeps
// their commits of one list in version order on the feed. A dialect is not
// Sendable: it is made on the writer thread and stays there.

/// A write waiting for a writer thread, as a ``GroupCommit`` takes it.
package protocol GroupCommitJob: Sendable {
    /// Set when the caller's task is cancelled: the writer skips the write if it has not started it.
    var cancellation: CancellationFlag { get }
    /// Runs the write, in its savepoint: what it committed and how to answer its caller.
    var run: @Sendable (ListWriter) throws(StoreError) -> CompletedWrite { get }
    /// Answers the caller with a failure.
    var fail: @Sendable (StoreError) -> Void { get }
}

/// A write that ran in its savepoint and waits for the commit.
package struct CompletedWrite: Sendable {
    /// The commits it made (none for an index declaration).
    package let commits: [Commit]
    /// Answers the caller with the write's result.
    package let succeed: @Sendable () -> Void

    package init(commits: [Commit], succeed: @escaping @Sendable () -> Void) {
        self.commits = commits
        self.succeed = succeed
    }
}

/// How a write's savepoint ended after the write ran (``GroupCommitDialect/releaseSavepoint()``).
package enum SavepointRelease {
    /// The write's work is kept in the transaction.
    case released
    /// The write failed after all: it is rolled back to its savepoint and fails alone.
    case writeFailed(StoreError)
    /// Nothing of the batch can be kept (the session is gone): every write fails.
    case batchBroken(StoreError)
}

/// The steps of a group commit that differ between databases: transaction
/// control and what a database needs around it. ``GroupCommit`` calls them
/// in its walk; a dialect keeps whatever state a batch needs between them.
///
/// Errors: a step that throws breaks the batch (nothing of it is kept) unless
/// its documentation says otherwise; the batch's writes are then failed with
/// `the commit failed, nothing was written: <detail>`, or with
/// ``StoreError/databaseFull`` when the error is `storageFull`.
package protocol GroupCommitDialect {
    associatedtype Job: GroupCommitJob

    /// The writer the batch's writes run on.
    var writer: ListWriter { get }

    /// Begins the batch's transaction.
    /// - Returns: the jobs to run in it, in their order (a dialect may keep
    ///   others for a later batch, e.g. jobs of lists another session holds).
    /// - Throws: the error every job of `batch` is failed with; nothing began
    ///   (the dialect has undone what it started).
    mutating func begin(_ batch: [Job]) throws(StoreError) -> [Job]

    /// Opens the next write's savepoint.
    mutating func openSavepoint() throws(StoreError)

    /// Ends the savepoint of a write that ran, keeping its work.
    mutating func releaseSavepoint() -> SavepointRelease

    /// Asked when a write failed, before its savepoint is rolled back.
    /// - Returns: the error that breaks the batch instead (the failure may not
    ///   be the write's own), or `nil`: the write fails alone.
    mutating func batchBroken(byFailure failure: StoreError) -> StoreError?

    /// Rolls the failed write back to its savepoint and ends the savepoint.
    mutating func rollBackToSavepoint() throws(StoreError)

    /// Commits the transaction, whose writes made `commits`. Returns when it
    /// committed (also when the answer to `COMMIT` was lost and the dialect
    /// found the commit afterwards); throws when it did not, or
    /// ``StoreError/Kind/commitOutcomeUnknown`` when that cannot be known.
    mutating func commit(_ commits: [Commit]) throws(StoreError)

    /// Rolls the transaction back, quietly: the batch broke.
    mutating func rollBack()

    /// After the commit, just before the feed hears of `commits`.
    mutating func willPublish(_ commits: [Commit])

    /// After the feed heard of `commits`, just before the writers are answered.
    mutating func didPublish(_ commits: [Commit])
}

extension GroupCommitDialect {
    package mutating func batchBroken(byFailure failure: StoreError) -> StoreError? { nil }
    package mutating func willPublish(_ commits: [Commit]) {}
    package mutating func didPublish(_ commits: [Commit]) {}
}

/// How many writes and commits a store made; the benchmark divides them by
/// time to show group commit at work.
package final class CommitStatistics: Sendable {
    package let writes = Atomic<Int>(0)
    package let commits = Atomic<Int>(0)

    package init() {}
}

/// One group commit, the same for every store: the writes a writer thread
/// took, each in its own savepoint inside one transaction, committed once,
/// and only then answered, so one commit (one fsync) covers many writes. A
/// write that fails rolls back to its savepoint and fails alone; a failure of
/// the transaction itself fails the whole batch with one error. The
/// database's own steps are its ``GroupCommitDialect``'s.
package struct GroupCommit: Sendable {
    /// Hears every commit, before the writers are answered.
    package let feed: CommitFeed
    /// Where the writer publishes rank indexes for catch-ups on other threads.
    package let board: IndexBoard
    package let statistics: CommitStatistics

    package init(feed: CommitFeed, board: IndexBoard, statistics: CommitStatistics) {
        self.feed = feed
        self.board = board
        self.statistics = statistics
    }

    /// Runs `taken` as one transaction of `dialect` and answers every job.
    ///
    /// SQLiteStore's call is specialised in this module: its dialect's steps
    /// are inlined, as the loop had them. PostgresStore's is not (this
    /// toolchain serialises no body of a `package` generic for other
    /// modules, `@inlinable` or not): its steps are a few witness-table calls
    /// per write, beside the `any SQLSession` call each of the write's
    /// statements already makes, and no allocation.
    package func commit<Dialect: GroupCommitDialect>(_ taken: [Dialect.Job], on dialect: inout Dialect) {
        let batch: [Dialect.Job]
        do throws(StoreError) {
            batch = try dialect.begin(taken)
        } catch {
            for job in taken { job.fail(error) }
            return
        }
        let writer = dialect.writer
        var succeeded: [CompletedWrite] = []
        var failed: [(Dialect.Job, StoreError)] = []
        var broken: StoreError?
        walk: for job in batch {
            // Not started yet, so a cancelled caller's write is skipped, not torn.
            if job.cancellation.isCancelled {
                failed.append((job, .cancelledBeforeStart))
                continue
            }
            do throws(StoreError) {
                try dialect.openSavepoint()
            } catch {
                broken = error
                break
            }
            writer.writeStarted()
            let failure: StoreError
            do throws(StoreError) {
                let completed = try job.run(writer)
                switch dialect.releaseSavepoint() {
                case .released:
                    succeeded.append(completed)
                    continue walk
                case .writeFailed(let error):
                    failure = error
                case .batchBroken(let error):
                    broken = error
                    break walk
                }
            } catch {
                failure = error
            }
            if let error = dialect.batchBroken(byFailure: failure) {
                broken = error
                break
            }
            writer.writeRolledBack()
            // A full database may have rolled the whole transaction back already: none of
            // the batch is kept, and each write is told the database is full.
            if failure.kind == .storageFull {
                broken = failure
                break
            }
            failed.append((job, failure))
            do throws(StoreError) {
                try dialect.rollBackToSavepoint()
            } catch {
                broken = error
                break
            }
        }
        var commits: [Commit] = []
        if broken == nil {
            commits = succeeded.flatMap(\.commits)
            do throws(StoreError) {
                try dialect.commit(commits)
            } catch {
                broken = error
            }
        }
        if let broken {
            dialect.rollBack()
            writer.transactionRolledBack()
            let error: StoreError =
                switch broken.kind {
                case .storageFull: .databaseFull
                // The dialect could not tell whether the commit happened: it says so.
                case .commitOutcomeUnknown: broken
                default: StoreError(.storageFailure, "the commit failed, nothing was written: \(broken.detail)")
                }
            for job in batch { job.fail(error) }
            return
        }
        writer.transactionCommitted()
        writer.publishIndexes(of: commits, to: board)
        statistics.commits.add(1, ordering: .relaxed)
        statistics.writes.add(succeeded.count, ordering: .relaxed)
        writer.configuration.onGroupCommit?(succeeded.count)
        // Publish before answering: whoever keeps a cache of heads from the
        // feed has heard of a commit before its writer can read it back, so a
        // client never sees its own acknowledged write missing.
        dialect.willPublish(commits)
        feed.publish(commits)
        dialect.didPublish(commits)
        for (job, error) in failed { job.fail(error) }
        for completed in succeeded { completed.succeed() }
    }
}
