import ArgumentParser
import Foundation
import Postgres
import SchemaMigration
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
            differs from the file. SQLite (--db, the default) and PostgreSQL \
            (--store postgres://…) each have their own migrations.
            """
    )

    @Option(help: "SQLite database file, created if missing (env: LISTD_DB; default: ./listd.sqlite).")
    var db: String?

    @Option(
        help:
            "A PostgreSQL database URL, postgres://user@host:port/db, instead of --db; its migrations are those in the migrations folder's postgres/ (env: LISTD_STORE)."
    )
    var store: String?

    @OptionGroup var storage: StorageOptions

    @Flag(help: "Only list the pending migrations; change nothing.")
    var dryRun = false

    func run() throws {
        let resolver = EnvironmentResolver()
        let location = try StoreLocation.resolve(store: store, db: db, resolver)
        let name = location.displayName
        let directory = location.migrations(in: try storage.migrationsDirectory(resolver))
        do {
            let migrator = try Migrator(directory: directory)
            switch location {
            case .sqlite(let path):
                if dryRun {
                    // Read only, and not at all when the file is missing: a dry run changes nothing.
                    guard FileManager.default.fileExists(atPath: path) else {
                        print(
                            "\(path): does not exist; migrate would create it and apply \(migrator.migrations.map(\.identifier))"
                        )
                        return
                    }
                    // With no log beside it the file is checkpointed and closed: read it as it is,
                    // creating no -wal or -shm. With one, read through it (the files exist already).
                    var options = ConnectionOptions(readOnly: true, create: false, journalModeWAL: false)
                    options.immutable = !FileManager.default.fileExists(atPath: path + "-wal")
                    let connection = try Storage.Connection(path: path, options: options)
                    defer { connection.close() }
                    try migrate(connection, migrator, name)
                    return
                }
                let connection = try Storage.Connection(path: path)
                defer { connection.close() }
                try migrate(connection, migrator, name)
            case .postgres(let url):
                let connection = try Postgres.Connection(url: url)
                defer { connection.close() }
                try migrate(connection, migrator, name)
            }
        } catch let error as MigrationError {
            throw CommandFailure("migration failed for \(name): \(error)")
        } catch let error as SQLiteError {
            throw CommandFailure("cannot open \(name): \(error)")
        } catch let error as PostgresError {
            throw CommandFailure("cannot open \(name): \(error)")
        }
    }

    private func migrate(_ database: some MigrationTarget, _ migrator: Migrator, _ name: String) throws(MigrationError)
    {
        if dryRun {
            let pending = try migrator.pending(database)
            print(pending.isEmpty ? "\(name): up to date" : "\(name): pending \(pending.map(\.identifier))")
            return
        }
        let applied = try migrator.migrate(database)
        if applied.isEmpty {
            print("\(name): up to date (\(migrator.migrations.count) migrations)")
        } else {
            for migration in applied { print("\(name): applied \(migration.identifier)") }
        }
    }
}

/// An error that ends a command with a message and exit status 1.
struct CommandFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
