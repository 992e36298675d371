import Foundation

/// Applies numbered SQL migrations to a database, once each, in order.
///
/// Each migration runs in its own transaction together with the row that
/// records it in `schema_migrations` (id, name, checksum, time), so a
/// migration is either wholly applied and recorded or not at all. Before
/// applying anything — and again inside each transaction, under the migration
/// lock, so two processes migrating at once cannot both apply one migration —
/// the recorded rows are checked against the known migrations: the migrator
/// refuses a database that has a migration it does not know, or whose
/// recorded checksum differs from the file. Running it again is harmless.
///
/// The rules live here; each database (SQLite, PostgreSQL) is a
/// ``MigrationTarget`` that only stores and runs. Migration SQL must not
/// contain `BEGIN`, `COMMIT` or `ROLLBACK` (the migrator owns the
/// transaction); on SQLite it cannot change `PRAGMA foreign_keys` (a no-op
/// inside a transaction).
public struct Migrator: Sendable {
    /// The known migrations, sorted by id.
    public let migrations: [Migration]

    /// The table that records applied migrations.
    public static let tableName = "schema_migrations"

    /// Loads every `NNNN_name.sql` file of `directory`.
    ///
    /// Files not ending in `.sql` and hidden files are ignored, so a README
    /// can live beside the migrations.
    ///
    /// - Throws: `.unreadable` when the folder or a file cannot be read or is
    ///   not UTF-8, `.badFileName`, `.duplicateId`, or `.missingId` when the
    ///   ids do not run 1, 2, 3… without gaps.
    public init(directory: URL) throws(MigrationError) {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw .unreadable(path: directory.path, reason: error.localizedDescription)
        }
        var loaded: [Migration] = []
        for fileName in names.sorted() where fileName.hasSuffix(".sql") && !fileName.hasPrefix(".") {
            guard let (id, name) = Migration.parse(fileName: fileName) else {
                throw .badFileName(fileName)
            }
            let file = directory.appendingPathComponent(fileName)
            let bytes: [UInt8]
            do {
                bytes = Array(try Data(contentsOf: file))
            } catch {
                throw .unreadable(path: file.path, reason: error.localizedDescription)
            }
            guard let sql = String(validating: bytes, as: UTF8.self) else {
                throw .unreadable(path: file.path, reason: "the file is not valid UTF-8")
            }
            loaded.append(Migration(id: id, name: name, sql: sql, checksum: Migration.checksum(of: bytes)))
        }
        try Migrator.validate(loaded)
        self.migrations = loaded.sorted { $0.id < $1.id }
    }

    /// Uses migrations given in code. They are validated (unique ids running
    /// 1, 2, 3…) when `pending` or `migrate` runs.
    public init(migrations: [Migration]) {
        self.migrations = migrations.sorted { $0.id < $1.id }
    }

    /// Checks that ids are unique and run 1, 2, 3… without gaps.
    public static func validate(_ migrations: [Migration]) throws(MigrationError) {
        let byId = Dictionary(grouping: migrations, by: \.id)
        for (id, group) in byId.sorted(by: { $0.key < $1.key }) where group.count > 1 {
            throw .duplicateId(id, names: group.map(\.fileName).sorted())
        }
        for expected in 1...max(1, migrations.count) where byId[expected] == nil && !migrations.isEmpty {
            throw .missingId(expected)
        }
    }

    /// The migrations recorded in `database`, by id; empty when it was never
    /// migrated. Reads only, so a read-only connection works.
    public func applied(_ database: some MigrationTarget) throws(MigrationError) -> [AppliedMigration] {
        do {
            return try database.appliedMigrations()
        } catch {
            throw .database(error)
        }
    }

    /// The migrations not yet applied to `database`, in order.
    ///
    /// - Throws: the same refusals as `migrate` (unknown migration, checksum
    ///   or name mismatch, invalid ids), without changing anything.
    public func pending(_ database: some MigrationTarget) throws(MigrationError) -> [Migration] {
        try Migrator.validate(migrations)
        let recorded = try applied(database)
        try verify(recorded)
        let done = Set(recorded.map(\.id))
        return migrations.filter { !done.contains($0.id) }
    }

    /// Applies every pending migration in order, each in its own transaction
    /// holding the migration lock, and returns those it applied (empty when up
    /// to date).
    ///
    /// - Throws: `.unknownMigration`, `.checksumMismatch` or `.nameMismatch`
    ///   before applying anything; `.failed` when a migration's SQL fails
    ///   (that migration is rolled back; earlier ones stay applied).
    @discardableResult
    public func migrate(_ database: some MigrationTarget) throws(MigrationError) -> [Migration] {
        try Migrator.validate(migrations)
        // Refuse before creating anything, so a database from a newer binary
        // is left exactly as it was.
        try verify(try applied(database))
        do {
            try database.createMigrationsTable()
        } catch {
            throw .database(error)
        }
        var appliedNow: [Migration] = []
        for migration in migrations {
            if try apply(migration, on: database) {
                appliedNow.append(migration)
            }
        }
        return appliedNow
    }

    /// Applies one migration unless it is already recorded; `true` when applied.
    private func apply(_ migration: Migration, on database: some MigrationTarget) throws(MigrationError) -> Bool {
        try database.inMigrationTransaction { () throws(MigrationError) -> Bool in
            // Under the migration lock now: another process may have migrated
            // since the check in `migrate`.
            let recorded = try applied(database)
            try verify(recorded)
            if recorded.contains(where: { $0.id == migration.id }) { return false }
            do throws(DatabaseFailure) {
                try database.runMigrationScript(migration.sql)
            } catch {
                throw .failed(migration, error)
            }
            guard database.isInMigrationTransaction else {
                throw .failed(
                    migration,
                    DatabaseFailure(
                        code: nil,
                        message: "the migration ended the migrator's transaction itself; remove "
                            + "BEGIN/COMMIT/END/ROLLBACK from it (it may be partly applied: check the schema)"))
            }
            do throws(DatabaseFailure) {
                try database.recordMigration(migration)
            } catch {
                throw .database(error)
            }
            return true
        }
    }

    /// Refuses recorded migrations this binary does not know or whose file changed.
    private func verify(_ recorded: [AppliedMigration]) throws(MigrationError) {
        let known = Dictionary(migrations.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        for row in recorded {
            guard let migration = known[row.id] else {
                throw .unknownMigration(id: row.id, name: row.name)
            }
            guard migration.name == row.name else {
                throw .nameMismatch(id: row.id, recorded: row.name, actual: migration.name)
            }
            guard migration.checksum == row.checksum else {
                throw .checksumMismatch(
                    id: row.id, name: row.name, recorded: row.checksum, actual: migration.checksum)
            }
        }
    }
}
