import Foundation
import ListStore
import ListdTestSupport
import Logging
import Postgres
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
            let list = Identifier("shared")!
            let created = try await a.createList(id: list, name: "", sections: [NewSection(id: Identifier("s")!)])
            let written = try await a.apply(
                [.insertItem(section: Identifier("s")!, item: NewItem(id: Identifier("i")!), at: nil)], to: list,
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
}
