import Foundation
import ListModel
import ListStore
import ListdTestSupport
import Postgres
import Synchronization
import Testing

@testable import PostgresStore

/// The writer sessions' lanes and their locking: a list's jobs always go to
/// the same session, in every instance; a batch writes the lists nobody else
/// holds and puts the others' jobs back, keeping each list's order.
@Suite struct WriterLaneTests {
    static func job(_ lists: String...) -> PostgresStore.PendingWrite {
        PostgresStore.PendingWrite(
            cancellation: CancellationFlag(), lists: lists.map { Identifier($0)! },
            run: { _ throws(StoreError) in CompletedWrite(commits: [], succeed: {}) },
            fail: { _ in })
    }

    static func names(_ jobs: [PostgresStore.PendingWrite]) -> [String] {
        jobs.map { $0.lists.map(\.rawValue).joined(separator: "+") }
    }

    /// Fixed values: another process (another instance, another build) must
    /// pick the same session for a list, or two instances' batches lose the
    /// disjoint lanes that keep them from waiting on each other.
    @Test func aListsLaneIsTheSameInEveryProcess() {
        #expect(PostgresStore.lane(of: Identifier("a"), among: 2) == 0)
        #expect(PostgresStore.lane(of: Identifier("a"), among: 3) == 1)
        #expect(PostgresStore.lane(of: Identifier("a"), among: 8) == 4)
        #expect(PostgresStore.lane(of: Identifier("bench0"), among: 2) == 1)
        #expect(PostgresStore.lane(of: Identifier("bench3"), among: 8) == 6)
        #expect(PostgresStore.lane(of: Identifier("a"), among: 1) == 0)
    }

    @Test func lanesSpreadListsEvenly() {
        var counts = [0, 0, 0, 0]
        for index in 0..<4_000 {
            counts[PostgresStore.lane(of: Identifier("list-\(index)")!, among: 4)] += 1
        }
        #expect(counts.allSatisfy { (900...1_100).contains($0) }, "\(counts)")
    }

    @Test func aBusyListsJobsWaitInTheirOrderAndTheOthersRun() {
        let batch = [Self.job("a"), Self.job("b"), Self.job("a"), Self.job("c"), Self.job("b")]
        let split = PostgresCommitDialect.split(batch, blocked: [Identifier("b")])
        #expect(Self.names(split.run) == ["a", "a", "c"])
        #expect(Self.names(split.deferred) == ["b", "b"])
        #expect(split.deferred.map(\.deferrals) == [1, 1])
        #expect(split.run.map(\.deferrals) == [0, 0, 0])
    }

    /// A job of several lists waits when one of them is busy, and so does
    /// every later job of any of its lists: no list's jobs run out of order.
    @Test func aJobOfSeveralListsHoldsBackTheLaterJobsOfAllOfThem() {
        let batch = [Self.job("c"), Self.job("b", "c"), Self.job("c"), Self.job("a"), Self.job("b")]
        let split = PostgresCommitDialect.split(batch, blocked: [Identifier("b")])
        #expect(Self.names(split.run) == ["c", "a"])
        #expect(Self.names(split.deferred) == ["b+c", "c", "b"])
    }

    @Test func nothingBlockedRunsEverything() {
        var job = Self.job("a")
        job.deferrals = 2
        let split = PostgresCommitDialect.split([job, Self.job("b")], blocked: [])
        #expect(split.deferred.isEmpty)
        #expect(split.run.map(\.deferrals) == [2, 0])
    }
}

/// The same against PostgreSQL: another session (another instance) holding a
/// list's row does not hold up this session's writes to other lists.
@Suite(.serialized, .enabled(if: TestPostgres.enabled, Comment(rawValue: TestPostgres.skipReason)))
struct WriterLaneLockingTests {
    static let section = Identifier("s")

    static func insert(_ item: String) -> [ListOperation] {
        [.insertItem(section: section, item: NewItem(id: Identifier(item)!), at: nil)]
    }

    /// Another connection holding a list's row lock, as a writer of another
    /// instance does mid-batch (a free row: this does not wait).
    static func hold(_ list: String, url: String) throws -> Connection {
        let connection = try Connection(url: url)
        try connection.execute("BEGIN")
        try connection.query("SELECT id FROM lists WHERE id = $1 FOR UPDATE", .text(list))
        return connection
    }

    @Test func aBatchWritesTheFreeListsWhileAnotherSessionHoldsOne() async throws {
        try await withMigratedDatabase { database, _ in
            let gate = WriterGate()
            var configuration = StoreConfiguration(
                migrationsDirectory: ListdProcess.migrations, fullSync: false, onGroupCommit: { gate.hook($0) })
            configuration.readers = 1
            // One writer session: every list is in its lane, and jobs queue behind each other.
            let store = try await PostgresStore(
                url: database.url, configuration: configuration, writers: 1, logger: PostgresStoreTests.quiet)
            for name in ["held", "free", "other"] {
                _ = try await store.createList(
                    id: Identifier(name)!, name: "", sections: [NewSection(id: Self.section)])
            }
            let holder = try Self.hold("held", url: database.url)

            // Queue a write to the held list and two to free ones while the writer is held
            // after a commit, so that all three are in its next batch.
            gate.arm()
            let opener = Task {
                try await store.apply(Self.insert("x"), to: Identifier("other"), expectedVersion: nil)
            }
            try await waitUntil("the writer committed and waits") { gate.isHolding }
            let finished = Finished()
            let blocked = Task {
                let result = try await store.apply(Self.insert("h"), to: Identifier("held"), expectedVersion: nil)
                finished.names.withLock { $0.append("held") }
                return result
            }
            try await waitUntil("the held list's write is queued") { store.queuedWrites == 1 }
            let free = Task {
                let result = try await store.apply(Self.insert("f"), to: Identifier("free"), expectedVersion: nil)
                finished.names.withLock { $0.append("free") }
                return result
            }
            try await waitUntil("two are queued") { store.queuedWrites == 2 }
            let other = Task {
                let result = try await store.apply(Self.insert("y"), to: Identifier("other"), expectedVersion: nil)
                finished.names.withLock { $0.append("other") }
                return result
            }
            try await waitUntil("all three are queued") { store.queuedWrites == 3 }
            gate.open()
            #expect(try await opener.value.version == 2)

            // The free lists are written while the other session still holds "held".
            do {
                try await waitUntil("the free lists' writes are answered while another session holds one") {
                    finished.names.withLock { Set($0) } == ["free", "other"]
                }
            } catch {
                try holder.execute("COMMIT")
                throw error
            }
            #expect(try await free.value.version == 2)
            #expect(try await other.value.version == 3)
            #expect(
                !finished.names.withLock { $0 }.contains("held"),
                "the held list's write ran under another session's lock")

            // Released, the deferred write runs, once.
            try holder.execute("COMMIT")
            holder.close()
            #expect(try await blocked.value.version == 2)
            let held = try await store.snapshot(of: Identifier("held"))
            #expect(held.version == 2)
            #expect(held.sections[0].items.map(\.id) == [Identifier("h")])
            #expect(
                try await store.snapshot(of: Identifier("other")).sections[0].items.map(\.id.rawValue) == ["x", "y"])
            await store.close()
        }
    }

    /// When every queued write waits for another session's list, the writer
    /// waits for that lock (holding none) instead of spinning, and writes as
    /// soon as it is released; the writes keep their order.
    @Test func aWriterWhoseEveryListIsHeldWaitsForTheLock() async throws {
        try await withMigratedDatabase { database, admin in
            var configuration = StoreConfiguration(migrationsDirectory: ListdProcess.migrations, fullSync: false)
            configuration.readers = 1
            let store = try await PostgresStore(
                url: database.url, configuration: configuration, writers: 1, logger: PostgresStoreTests.quiet)
            let list = Identifier("held")
            _ = try await store.createList(id: list, name: "", sections: [NewSection(id: Self.section)])
            let holder = try Self.hold("held", url: database.url)
            let first = Task { try await store.apply(Self.insert("a"), to: list, expectedVersion: nil) }
            try await waitUntil("the writer waits for the row lock") {
                let waiting = try? admin.query(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
                )[0].int64(0)
                return waiting == 1
            }
            let second = Task { try await store.apply(Self.insert("b"), to: list, expectedVersion: nil) }
            try await waitUntil("the second write is queued") { store.queuedWrites == 1 }
            try holder.execute("COMMIT")
            holder.close()
            #expect(try await first.value.version == 2)
            #expect(try await second.value.version == 3)
            #expect(try await store.snapshot(of: list).sections[0].items.map(\.id.rawValue) == ["a", "b"])
            await store.close()
        }
    }
}

/// Which writes were answered, in order.
final class Finished: Sendable {
    let names = Mutex<[String]>([])
}
