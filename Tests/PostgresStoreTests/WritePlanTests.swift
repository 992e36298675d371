import Foundation
import ListModel
import ListStore
import ListdTestSupport
import Postgres
import Testing

@testable import PostgresStore

/// A write on PostgreSQL costs what it touches even on a list the tables'
/// statistics have never seen. After an `ANALYZE` that knew only two lists,
/// the planner guessed one row for a list created since, and its plans for
/// the writer's statements walked every item of that list on every write
/// (the item `UPDATE` by the position index, the commit's history read
/// hash-joining all items): 300 writes/s on a new 10,000-item list.
@Suite(.enabled(if: TestPostgres.enabled, Comment(rawValue: TestPostgres.skipReason)))
struct WritePlanTests {
    static let items = 2_000
    static let writes = 20

    static func section(_ list: String) -> NewSection {
        NewSection(
            id: Identifier("s"),
            items: (0..<items).map { NewItem(id: Identifier("\(list)-\($0)"), model: .emptyObject) })
    }

    /// Item rows PostgreSQL read (sequentially or through indexes) and updated, as its statistics have them.
    static func itemCounters(_ admin: Connection) throws -> (read: Int64, updated: Int64) {
        let rows = try admin.query(
            """
            SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0), n_tup_upd
            FROM pg_stat_user_tables WHERE relname = 'items'
            """)
        return (try rows[0].int64(0), try rows[0].int64(1))
    }

    @Test func writesOnAListNewerThanTheStatisticsReadOnlyTheRowsTheyTouch() async throws {
        try await withMigratedDatabase { database, admin in
            let configuration = StoreConfiguration(migrationsDirectory: ListdProcess.migrations, fullSync: false)
            let store = try await PostgresStore(
                url: database.url, configuration: configuration, logger: PostgresStoreTests.quiet)
            for name in ["old-a", "old-b"] {
                _ = try await store.createList(id: Identifier(name), name: "", sections: [Self.section(name)])
            }
            // The statistics now know these two lists as all there is.
            try admin.execute("ANALYZE")
            let fresh = Identifier("fresh")
            _ = try await store.createList(id: fresh, name: "", sections: [Self.section("fresh")])
            let before = try Self.itemCounters(admin)
            for write in 0..<Self.writes {
                let item = try #require(Identifier("fresh-\(write * 97)"))
                let model = try Model(parsing: Array("\(write)".utf8))
                _ = try await store.apply([.updateItem(id: item, model: model)], to: fresh, expectedVersion: nil)
            }
            // A session's counters reach the shared statistics when it idles:
            // the updates counted say the writer's have.
            let flushed = try await eventually(20) {
                try Self.itemCounters(admin).updated >= before.updated + Int64(Self.writes)
            }
            #expect(flushed, "the writer session's statistics never arrived")
            let read = try Self.itemCounters(admin).read - before.read
            // Each write reads its item and the rank index is built once from
            // the rows (up to 2,000 heap fetches); walking the list's items
            // on each write reads 20 × 2,000 and more.
            #expect(
                read < Int64(Self.items * 3),
                "\(Self.writes) single-item writes on a \(Self.items)-item list read \(read) item rows")
            await store.close()
        }
    }
}
