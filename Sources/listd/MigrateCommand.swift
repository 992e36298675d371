import ArgumentParser
import Foundation
import Storage

/// `listd migrate`: applies pending migrations to a database and exits.
/// Running it again applies nothing and succeeds.
struct MigrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply pending schema migrations to a database, then exit.",
        discussion: """
            Each migration runs in its own immediate transaction and is recorded \
            in schema_migrations with its checksum. listd refuses a database that \
            has a migration this binary does not know, or whose recorded checksum \
            differs from the file.
            """
    )

    @Option(help: "SQLite database file, created if missing (env: LISTD_DB; default: ./listd.sqlite).")
    var db: String?

    @OptionGroup var storage: StorageOptions

    @Flag(help: "Only list the pending migrations; change nothing.")
    var dryRun = false

    func run() throws {
        let resolver = EnvironmentResolver()
        let path = try resolver.resolve(db, "LISTD_DB", default: "listd.sqlite")
        let directory = try storage.migrationsDirectory(resolver)
        do {
            let migrator = try Migrator(directory: directory)
            let connection = try Connection(path: path)
            defer { connection.close() }
            if dryRun {
                let pending = try migrator.pending(connection)
                print(pending.isEmpty ? "\(path): up to date" : "\(path): pending \(pending.map(\.identifier))")
                return
            }
            let applied = try migrator.migrate(connection)
            if applied.isEmpty {
                print("\(path): up to date (\(migrator.migrations.count) migrations)")
            } else {
                for migration in applied { print("\(path): applied \(migration.identifier)") }
            }
        } catch let error as MigrationError {
            throw CommandFailure("migration failed for \(path): \(error)")
        } catch let error as SQLiteError {
            throw CommandFailure("cannot open \(path): \(error)")
        }
    }
}

/// An error that ends a command with a message and exit status 1.
struct CommandFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
