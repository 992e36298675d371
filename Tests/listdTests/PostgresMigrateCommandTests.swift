import Foundation
import ListdTestSupport
import Testing

/// `listd migrate --store postgres://…` applies Migrations/postgres with the same rules as SQLite's.
@Suite(.enabled(if: TestPostgres.enabled, Comment(rawValue: TestPostgres.skipReason)))
struct PostgresMigrateCommandTests {
    @Test func migratingAPostgresDatabaseTwiceIsHarmlessAndTheVariableWorksToo() async throws {
        let database = try await TestPostgres.createDatabase()
        defer { database.drop() }
        let migrations = ListdServer.migrations.path
        let dry = try await ListdBinary.run([
            "migrate", "--store", database.url, "--migrations", migrations, "--dry-run",
        ])
        #expect(dry.status == 0)
        #expect(
            dry.output.contains(
                "pending [\"0001_initial\", \"0002_item_indexes\", \"0003_renumberings\", \"0004_lists_to_prune\", \"0005_history_after_images\", \"0006_idempotency\", \"0007_idempotency_kept_changes\", \"0008_lists_to_prune_flagged\"]"
            ),
            "\(dry.output)")
        let first = try await ListdBinary.run(["migrate", "--store", database.url, "--migrations", migrations])
        #expect(first.status == 0)
        #expect(first.output.contains("applied 0001_initial"), "\(first.output)")
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LISTD_") }
        environment["LISTD_STORE"] = database.url
        let second = try await ListdBinary.run(["migrate", "--migrations", migrations], environment: environment)
        #expect(second.status == 0)
        #expect(second.output.contains("up to date"), "\(second.output)")
    }

    @Test func aStoreThatIsNotAPostgresURLOrBesideADatabaseFileIsRefused() async throws {
        let notPostgres = try await ListdBinary.run(["migrate", "--store", "mysql://x:secret@h/db"], stderr: true)
        #expect(notPostgres.status != 0)
        #expect(notPostgres.output.contains("postgres://"))
        #expect(!notPostgres.output.contains("secret"), "the password is never printed")
        let both = try await ListdBinary.run(
            ["migrate", "--store", "postgres://127.0.0.1/x", "--db", "a.sqlite"], stderr: true)
        #expect(both.status != 0)
        #expect(both.output.contains("not both"))
    }

    @Test func anUnreachableServerIsNamedWithoutItsPassword() async throws {
        let refused = try await ListdBinary.run(
            [
                "migrate", "--store", "postgres://listd:hunter2@127.0.0.1:1/listd?connect_timeout=2",
                "--migrations", ListdServer.migrations.path,
            ], stderr: true)
        #expect(refused.status != 0)
        #expect(refused.output.contains("postgres://listd:***@127.0.0.1:1/listd"), "\(refused.output)")
        #expect(!refused.output.contains("hunter2"))
    }
}
