import Foundation
import ListModel
import ListStore
import ListdTestSupport
import Logging
import Postgres
import Synchronization
import Testing

@testable import PostgresStore

@Suite(.enabled(if: TestPostgres.enabled, Comment(rawValue: TestPostgres.skipReason)))
struct PostgresStoreTests {
    static let quiet: Logger = {
        var logger = Logger(label: "listd.test")
        logger.logLevel = .critical
        return logger
    }()

    @Test func anUnreachableDatabaseFailsToOpenNamingItWithoutThePassword() async throws {
        _ = try TestPostgres.requireURL()
        do {
            let store = try await PostgresStore(
                url: "postgres://listd:hunter2@127.0.0.1:1/none?connect_timeout=2", logger: Self.quiet)
            await store.close()
            Issue.record("a store opened on a closed port")
        } catch {
            #expect(error.kind == .storageFailure)
            #expect(error.detail.contains("postgres://listd:***@127.0.0.1:1/none"))
            #expect(!error.detail.contains("hunter2"))
        }
    }

    /// Two stores on one database (two instances): a write through one reaches
    /// the other's commit stream, and the versions they serve agree.
    @Test func aCommitOnOneStoreReachesTheOthersCommitStream() async throws {
        try await withMigratedDatabase { database, _ in
            let configuration = StoreConfiguration(migrationsDirectory: ListdProcess.migrations, fullSync: true)
            let a = try await PostgresStore(url: database.url, configuration: configuration, logger: Self.quiet)
            let b = try await PostgresStore(url: database.url, configuration: configuration, logger: Self.quiet)
            let heardOnB = Heard()
            let heardOnA = Heard()
            let subscriptionB = b.onCommit { heardOnB.append($0) }
            let subscriptionA = a.onCommit { heardOnA.append($0) }
            let list = Identifier("shared")
            let created = try await a.createList(id: list, name: "", sections: [NewSection(id: Identifier("s"))])
            let written = try await a.apply(
                [.insertItem(section: Identifier("s"), item: NewItem(id: Identifier("i")), at: nil)], to: list,
                expectedVersion: created.version)
            #expect(await eventually { heardOnB.latest["shared"] == written.version })
            #expect(try await b.head(of: list).version == written.version)
            // If-Match holds across instances: B refuses a write expecting A's old version.
            var stale: StoreError?
            do {
                _ = try await b.apply([], to: list, expectedVersion: created.version)
            } catch let error as StoreError {
                stale = error
            }
            #expect(stale?.kind == .versionMismatch(expected: created.version, actual: written.version))
            // A heard its own commits once each, from its writer, not again from the listener.
            #expect(heardOnA.all.map(\.version) == [1, 2])
            subscriptionA.cancel()
            subscriptionB.cancel()
            await a.close()
            await b.close()
        }
    }

    /// Every session of the store killed (as a PostgreSQL restart would): a
    /// request may fail once per broken session, then the store works again
    /// on fresh sessions, and no acknowledged write is lost.
    @Test func theStoreRecoversWhenItsSessionsAreTerminated() async throws {
        try await withMigratedDatabase { database, admin in
            let configuration = StoreConfiguration(migrationsDirectory: ListdProcess.migrations, fullSync: true)
            let store = try await PostgresStore(url: database.url, configuration: configuration, logger: Self.quiet)
            let list = Identifier("l")
            let section = Identifier("s")
            _ = try await store.createList(id: list, name: "", sections: [NewSection(id: section)])
            var acknowledged: [String] = []
            var failures = 0
            for round in 0..<3 {
                // The listener is back (sessions of idle writers and readers reconnect when next used).
                let listening = await eventually { store.commitListener.backendPID != 0 }
                #expect(listening)
                let killed = try admin.query(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                        + "WHERE datname = current_database() AND pid <> pg_backend_pid()")[0].int64(0)
                #expect(killed >= 2, "the listener and at least the writer that wrote")
                for index in 0..<10 {
                    let item = "r\(round)-\(index)"
                    do {
                        _ = try await store.apply(
                            [.insertItem(section: section, item: NewItem(id: Identifier(item)!), at: nil)], to: list,
                            expectedVersion: nil)
                        acknowledged.append(item)
                    } catch {
                        #expect((error as? StoreError)?.kind == .storageFailure)
                        failures += 1
                    }
                }
            }
            #expect(failures <= 3 * store.writers, "at most one failed batch per broken writer session")
            #expect(acknowledged.count >= 30 - 3 * store.writers)
            var snapshot: ListSnapshot?
            for _ in 0..<5 where snapshot == nil { snapshot = try? await store.snapshot(of: list) }
            let present = Set(snapshot?.sections.first?.items.map(\.id.rawValue) ?? [])
            #expect(Set(acknowledged).isSubset(of: present))
            #expect(await eventually { store.commitListener.reconnects >= 3 })
            await store.close()
        }
    }
    /// The change engine across instances: each instance keeps its own rank
    /// index of a list and, whichever instance wrote, brings it forward from
    /// the list's history (O(k log n)); after the first build, neither writes
    /// nor net-change answers read the whole list again, and every answer is
    /// the one-version change asked for, with no inconsistency found.
    @Test func rankIndexesCatchUpFromHistoryAcrossInstances() async throws {
        try await withMigratedDatabase { database, _ in
            let found = Reported()
            var configuration = StoreConfiguration(migrationsDirectory: ListdProcess.migrations, fullSync: false)
            configuration.onInconsistency = { detail in found.append(detail) }
            let a = try await PostgresStore(
                url: database.url, configuration: configuration, writers: 1, logger: Self.quiet)
            let b = try await PostgresStore(
                url: database.url, configuration: configuration, writers: 1, logger: Self.quiet)
            let list = Identifier("big")
            let section = Identifier("s")
            let count = 2_000
            let created = try await a.createList(
                id: list, name: "",
                sections: [NewSection(id: section, items: (0..<count).map { NewItem(id: Identifier("i\($0)")!) })])
            var version = created.version
            for step in 0..<40 {
                let writer = step % 2 == 0 ? a : b
                let asked = step % 3 == 0 ? a : b
                let written = try await writer.apply(
                    [
                        .insertItem(
                            section: section, item: NewItem(id: Identifier("n\(step)")!), at: (step * 53) % count)
                    ],
                    to: list, expectedVersion: version)
                #expect(written.version == version + 1)
                #expect(written.change != nil, "step \(step): the write recorded its net change")
                version = written.version
                for since in [version - 1, max(1, version - 5)] {
                    switch try await asked.changes(of: list, since: since) {
                    case .change(let change):
                        #expect(change.from == since && change.to == version, "step \(step)")
                    case .reset:
                        Issue.record("step \(step): a reset for v\(since), inside the history")
                    }
                }
            }
            #expect(a.rankIndexBuilds == 1, "instance A read the whole list \(a.rankIndexBuilds) times")
            #expect(b.rankIndexBuilds == 1, "instance B read the whole list \(b.rankIndexBuilds) times")
            #expect(found.all == [])
            await a.close()
            await b.close()
        }
    }
}

/// What a store reported to ``StoreConfiguration/onInconsistency``.
final class Reported: Sendable {
    private let details = Mutex<[String]>([])
    func append(_ detail: String) { details.withLock { $0.append(detail) } }
    var all: [String] { details.withLock { $0 } }
}
