import CSQLite
import Foundation

/// Applies numbered SQL migrations to a database, once each, in order.
///
/// Each migration runs in its own `IMMEDIATE` transaction together with the
/// row that records it in `schema_migrations` (id, name, checksum, time), so a
/// migration is either wholly applied and recorded or not at all. Before
/// applying anything — and again inside each transaction, under the write
/// lock, so two processes migrating at once cannot both apply one migration —
/// the recorded rows are checked against the known migrations: the migrator
/// refuses a database that has a migration it does not know, or whose
/// recorded checksum differs from the file. Running it again is harmless.
///
/// Migration SQL must not contain `BEGIN`, `COMMIT` or `ROLLBACK` (the
/// migrator owns the transaction) and cannot change `PRAGMA foreign_keys`
/// (a no-op inside a transaction).
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
            loaded.append(Migration(id: id, name: name, sql: sql, checksum: SHA256.hexDigest(bytes)))
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

    /// The migrations recorded in `connection`'s database, by id; empty when
    /// it was never migrated. Reads only, so a read-only connection works.
    public func applied(_ connection: Connection) throws(MigrationError) -> [AppliedMigration] {
        do {
            let exists = try connection.scalar(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?", Migrator.tableName)
            guard exists == .integer(1) else { return [] }
            return try connection.query(
                "SELECT id, name, checksum, applied_at FROM \(Migrator.tableName) ORDER BY id"
            ) { row in
                AppliedMigration(id: row.int(0), name: row.text(1), checksum: row.text(2), appliedAt: row.text(3))
            }
        } catch let error as SQLiteError {
            throw .database(error)
        } catch {
            throw .database(SQLiteError(extendedCode: SQLITE_ERROR, message: "\(error)"))
        }
    }

    /// The migrations not yet applied to `connection`'s database, in order.
    ///
    /// - Throws: the same refusals as `migrate` (unknown migration, checksum
    ///   or name mismatch, invalid ids), without changing anything.
    public func pending(_ connection: Connection) throws(MigrationError) -> [Migration] {
        try Migrator.validate(migrations)
        let recorded = try applied(connection)
        try verify(recorded)
        let done = Set(recorded.map(\.id))
        return migrations.filter { !done.contains($0.id) }
    }

    /// Applies every pending migration in order, each in its own `IMMEDIATE`
    /// transaction, and returns those it applied (empty when up to date).
    ///
    /// - Throws: `.unknownMigration`, `.checksumMismatch` or `.nameMismatch`
    ///   before applying anything; `.failed` when a migration's SQL fails
    ///   (that migration is rolled back; earlier ones stay applied).
    @discardableResult
    public func migrate(_ connection: Connection) throws(MigrationError) -> [Migration] {
        try Migrator.validate(migrations)
        // Refuse before creating anything, so a database from a newer binary
        // is left exactly as it was.
        try verify(try applied(connection))
        do {
            try connection.execute(
                """
                CREATE TABLE IF NOT EXISTS \(Migrator.tableName) (
                    id INTEGER PRIMARY KEY,
                    name TEXT NOT NULL,
                    checksum TEXT NOT NULL,
                    applied_at TEXT NOT NULL
                ) STRICT
                """)
        } catch {
            throw .database(error)
        }
        var appliedNow: [Migration] = []
        for migration in migrations {
            if try apply(migration, on: connection) {
                appliedNow.append(migration)
            }
        }
        return appliedNow
    }

    /// Applies one migration unless it is already recorded; `true` when applied.
    private func apply(_ migration: Migration, on connection: Connection) throws(MigrationError) -> Bool {
        try database { () throws(SQLiteError) in try connection.execute("BEGIN IMMEDIATE") }
        do throws(MigrationError) {
            // Under the write lock now: another process may have migrated
            // since the check in `migrate`.
            try verify(try applied(connection))
            let recorded = try database { () throws(SQLiteError) in
                try connection.scalar("SELECT count(*) FROM \(Migrator.tableName) WHERE id = ?", migration.id)
            }
            if recorded == .integer(1) {
                try database { () throws(SQLiteError) in try connection.execute("COMMIT") }
                return false
            }
            do {
                try connection.execute(migration.sql)
            } catch {
                throw .failed(migration, error)
            }
            guard connection.isInTransaction else {
                throw .failed(
                    migration,
                    SQLiteError(
                        extendedCode: SQLITE_ERROR,
                        message: "the migration ended the migrator's transaction itself; remove "
                            + "BEGIN/COMMIT/END/ROLLBACK from it (it may be partly applied: check the schema)",
                        sql: migration.sql))
            }
            try database { () throws(SQLiteError) in
                try connection.run(
                    "INSERT INTO \(Migrator.tableName) (id, name, checksum, applied_at) "
                        + "VALUES (?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                    migration.id, migration.name, migration.checksum)
                try connection.execute("COMMIT")
            }
            return true
        } catch {
            if connection.isInTransaction {
                try? connection.execute("ROLLBACK")
            }
            throw error
        }
    }

    /// Runs SQLite work, reporting its failure as `.database`.
    private func database<T>(_ body: () throws(SQLiteError) -> T) throws(MigrationError) -> T {
        do {
            return try body()
        } catch {
            throw .database(error)
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
