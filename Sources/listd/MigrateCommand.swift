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
            if dryRun {
                // Read only, and not at all when the file is missing: a dry run changes nothing.
                guard FileManager.default.fileExists(atPath: path) else {
                    print("\(path): does not exist; migrate would create it and apply \(migrator.migrations.map(\.identifier))")
                    return
                }
                // With no log beside it the file is checkpointed and closed: read it as it is,
                // creating no -wal or -shm. With one, read through it (the files exist already).
                var options = ConnectionOptions(readOnly: true, create: false, journalModeWAL: false)
                options.immutable = !FileManager.default.fileExists(atPath: path + "-wal")
                let connection = try Connection(path: path, options: options)
                defer { connection.close() }
                let pending = try migrator.pending(connection)
                print(pending.isEmpty ? "\(path): up to date" : "\(path): pending \(pending.map(\.identifier))")
                return
            }
            let connection = try Connection(path: path)
            defer { connection.close() }
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
