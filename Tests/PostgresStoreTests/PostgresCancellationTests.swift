import Foundation
import ListModel
import ListStore
import ListdTestSupport
import Postgres
import Testing

@testable import PostgresStore

/// PostgresStore honours cancellation as SQLiteStore does (the SQLite
/// `CancellationTests`): a call whose task is cancelled before a writer or
/// reader session takes it up does nothing and fails with `cancelled`; one a
/// session has started runs to its end, and a committed write is answered as
/// committed.
@Suite(.serialized, .enabled(if: TestPostgres.enabled, Comment(rawValue: TestPostgres.skipReason)))
struct PostgresCancellationTests {
    /// One writer session and one reader session, so a second job queues
    /// behind the first; the writer can be held after a commit (``WriterGate``).
    static func open(_ database: TestDatabase, gate: WriterGate) async throws -> PostgresStore {
        var configuration = StoreConfiguration(
            migrationsDirectory: ListdProcess.migrations, fullSync: false, onGroupCommit: { gate.hook($0) })
        configuration.readers = 1
        return try await PostgresStore(
            url: database.url, configuration: configuration, writers: 1, logger: PostgresStoreTests.quiet)
    }

    static let section = Identifier("s")

    static func insert(_ item: String) -> [ListOperation] {
        [.insertItem(section: section, item: NewItem(id: Identifier(item)!), at: nil)]
    }

    @Test func aQueuedWriteWhoseClientLeftIsNotApplied() async throws {
        try await withMigratedDatabase { database, _ in
            let gate = WriterGate()
            let store = try await Self.open(database, gate: gate)
            let list = try await store.createList(
                id: Identifier("l"), name: "", sections: [NewSection(id: Self.section)]
            ).id

            gate.arm()
            let first = Task { try await store.apply(Self.insert("a"), to: list, expectedVersion: nil) }
            try await waitUntil("the first write committed and the writer waits") { gate.isHolding }
            let second = Task { try await store.apply(Self.insert("b"), to: list, expectedVersion: nil) }
            try await waitUntil("the second write is queued") { store.queuedWrites == 1 }
            second.cancel()
            gate.open()

            #expect(try await first.value.version == 2)
            let error = await #expect(throws: StoreError.self) { try await second.value }
            #expect(error?.kind == .cancelled)
            let snapshot = try await store.snapshot(of: list)
            #expect(snapshot.sections[0].items.map(\.id) == [Identifier("a")])
            #expect(snapshot.version == 2)
            // The writer goes on: the next write gets the next version.
            #expect(try await store.apply(Self.insert("c"), to: list, expectedVersion: 2).version == 3)
            #expect(store.counters.writes == 3, "the create, a and c; never b")
            await store.close()
        }
    }

    @Test func aWriteTheStoreStartedIsAnsweredAsCommitted() async throws {
        try await withMigratedDatabase { database, _ in
            let gate = WriterGate()
            let store = try await Self.open(database, gate: gate)
            let list = try await store.createList(
                id: Identifier("l"), name: "", sections: [NewSection(id: Self.section)]
            ).id

            gate.arm()
            let write = Task { try await store.apply(Self.insert("a"), to: list, expectedVersion: nil) }
            try await waitUntil("the write committed and the writer waits") { gate.isHolding }
            write.cancel()
            gate.open()
            #expect(try await write.value.version == 2)
            #expect(try await store.snapshot(of: list).sections[0].items.map(\.id) == [Identifier("a")])
            await store.close()
        }
    }

    /// A net-change question runs on a reader session, never a writer's: with
    /// the only writer session held after a commit, it is answered from the
    /// committed state.
    @Test func aChangeQuestionDoesNotWaitForTheWriter() async throws {
        try await withMigratedDatabase { database, _ in
            let gate = WriterGate()
            let store = try await Self.open(database, gate: gate)
            let list = try await store.createList(
                id: Identifier("l"), name: "", sections: [NewSection(id: Self.section)]
            ).id

            gate.arm()
            let write = Task { try await store.apply(Self.insert("a"), to: list, expectedVersion: nil) }
            try await waitUntil("the write committed and the writer waits") { gate.isHolding }
            let question = Outcome { try await store.changes(of: list, since: 1) }
            var waited: (any Error)?
            do {
                try await waitUntil("the question is answered while the writer waits") { question.isDone }
            } catch { waited = error }
            gate.open()
            if let waited { throw waited }
            guard case .change(let change) = try question.value() else {
                Issue.record("a reset for a version inside the history")
                return
            }
            #expect(change.from == 1 && change.to == 2)
            #expect(try await write.value.version == 2)
            await store.close()
        }
    }

    /// A read queued behind another on the one reader session (held by a
    /// table lock) and cancelled is skipped; the read the session started ends normally.
    @Test func aQueuedReadWhoseClientLeftIsSkipped() async throws {
        try await withMigratedDatabase { database, admin in
            let gate = WriterGate()
            let store = try await Self.open(database, gate: gate)
            let list = try await store.createList(
                id: Identifier("l"), name: "", sections: [NewSection(id: Self.section)]
            ).id

            // Watched from a session of its own: inside the lock's transaction,
            // pg_stat_activity would show the snapshot it took at its first read.
            let observer = try Connection(url: database.url)
            defer { observer.close() }
            try admin.execute("BEGIN")
            try admin.execute("LOCK TABLE lists IN ACCESS EXCLUSIVE MODE")
            let first = Task { try await store.head(of: list) }
            try await waitUntil("the reader session waits for the lock with the first read") {
                let waiting = try? observer.query(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                        + "AND wait_event_type = 'Lock' "
                        + "AND query LIKE 'SELECT epoch, version, name, history_floor FROM lists%'")[0].int64(0)
                return waiting == 1
            }
            let second = Task { try await store.head(of: list) }
            try await waitUntil("the second read is queued") { store.queuedReads == 1 }
            second.cancel()
            try admin.execute("COMMIT")

            #expect(try await first.value.version == 1)
            let error = await #expect(throws: StoreError.self) { try await second.value }
            #expect(error?.kind == .cancelled)
            #expect(try await store.head(of: list).version == 1)
            await store.close()
        }
    }

    @Test func aCallWhoseTaskIsAlreadyCancelledDoesNothing() async throws {
        try await withMigratedDatabase { database, _ in
            let store = try await Self.open(database, gate: WriterGate())
            let list = Identifier("l")
            let cancelled = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await store.createList(id: list, name: "", sections: [])
            }
            let error = await #expect(throws: StoreError.self) { try await cancelled.value }
            #expect(error?.kind == .cancelled)
            let read = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await store.lists(limit: 10, after: nil)
            }
            #expect((await #expect(throws: StoreError.self) { try await read.value })?.kind == .cancelled)
            #expect(try await store.lists(limit: 10, after: nil).isEmpty, "nothing was created")
            await store.close()
        }
    }
}
