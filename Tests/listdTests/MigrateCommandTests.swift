import Foundation
import ListdTestSupport
import Testing

@Suite struct MigrateCommandTests {
    /// A temporary folder with a copy of the repository's migrations.
    final class Scratch {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "listd-migrate-\(UUID().uuidString)")
        var migrations: URL { directory.appendingPathComponent("Migrations") }
        var database: String { directory.appendingPathComponent("db.sqlite").path }

        init() throws {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: ListdServer.migrations, to: migrations)
        }

        deinit { try? FileManager.default.removeItem(at: directory) }
    }

    @Test func migratingTwiceIsHarmless() async throws {
        let scratch = try Scratch()
        let first = try await ListdBinary.run([
            "migrate", "--db", scratch.database, "--migrations", scratch.migrations.path,
        ])
        #expect(first.status == 0)
        #expect(first.output.contains("applied 0001_"))
        let second = try await ListdBinary.run([
            "migrate", "--db", scratch.database, "--migrations", scratch.migrations.path,
        ])
        #expect(second.status == 0)
        #expect(second.output.contains("up to date"))
    }

    @Test func aChangedMigrationIsRefusedWithAnExplanation() async throws {
        let scratch = try Scratch()
        #expect(
            try await ListdBinary.run(["migrate", "--db", scratch.database, "--migrations", scratch.migrations.path])
                .status == 0)
        let file = try #require(
            try FileManager.default.contentsOfDirectory(at: scratch.migrations, includingPropertiesForKeys: nil)
                .first { $0.lastPathComponent.hasPrefix("0001_") })
        try (try String(contentsOf: file, encoding: .utf8) + "\n-- edited\n").write(
            to: file, atomically: true, encoding: .utf8)
        let refused = try await ListdBinary.run(
            ["migrate", "--db", scratch.database, "--migrations", scratch.migrations.path], stderr: true)
        #expect(refused.status != 0)
        #expect(refused.output.contains("checksum"))
        #expect(refused.output.contains("new migration"), "says what to do")
    }

    @Test func serveWithNoMigrateRefusesADatabaseThatNeedsMigrations() async throws {
        let scratch = try Scratch()
        let refused = try await ListdBinary.run(
            [
                "serve", "--no-migrate", "--port", "0", "--db", scratch.database, "--migrations",
                scratch.migrations.path,
            ],
            stderr: true)
        #expect(refused.status != 0)
        #expect(refused.output.contains("needs migrations"))
        #expect(refused.output.contains("listd migrate"))
    }

    @Test func badEnvironmentValuesAreNamed() throws {
        let (process, reader) = try ChildProcess.piped(
            try ListdBinary.url, ["serve", "--migrations", ListdServer.migrations.path],
            environment: ["LISTD_PORT": "eighty", "PATH": "/usr/bin:/bin"], errors: true)
        let output = String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus != 0)
        #expect(output.contains("LISTD_PORT=\"eighty\""))
    }
}
