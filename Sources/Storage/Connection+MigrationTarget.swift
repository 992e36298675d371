import SchemaMigration

/// SQLite as a ``MigrationTarget``: `schema_migrations` is a STRICT table,
/// each migration runs in a `BEGIN IMMEDIATE` transaction (the write lock
/// serialises migrators across processes).
extension Connection: MigrationTarget {
    public func appliedMigrations() throws(DatabaseFailure) -> [AppliedMigration] {
        do {
            let exists = try scalar(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?", Migrator.tableName)
            guard exists == .integer(1) else { return [] }
            return try query("SELECT id, name, checksum, applied_at FROM \(Migrator.tableName) ORDER BY id") { row in
                AppliedMigration(id: row.int(0), name: row.text(1), checksum: row.text(2), appliedAt: row.text(3))
            }
        } catch let error as SQLiteError {
            throw error.migrationFailure
        } catch {
            throw DatabaseFailure(code: nil, message: "\(error)")
        }
    }

    public func createMigrationsTable() throws(DatabaseFailure) {
        do {
            try execute(
                """
                CREATE TABLE IF NOT EXISTS \(Migrator.tableName) (
                    id INTEGER PRIMARY KEY,
                    name TEXT NOT NULL,
                    checksum TEXT NOT NULL,
                    applied_at TEXT NOT NULL
                ) STRICT
                """)
        } catch {
            throw error.migrationFailure
        }
    }

    public func inMigrationTransaction<T>(_ body: () throws(MigrationError) -> T) throws(MigrationError) -> T {
        do {
            try execute("BEGIN IMMEDIATE")
        } catch {
            throw .database(error.migrationFailure)
        }
        do throws(MigrationError) {
            let value = try body()
            do {
                try execute("COMMIT")
            } catch {
                throw MigrationError.database(error.migrationFailure)
            }
            return value
        } catch {
            if isInTransaction { try? execute("ROLLBACK") }
            throw error
        }
    }

    public func runMigrationScript(_ sql: String) throws(DatabaseFailure) {
        do { try execute(sql) } catch { throw error.migrationFailure }
    }

    public var isInMigrationTransaction: Bool { isInTransaction }

    public func recordMigration(_ migration: Migration) throws(DatabaseFailure) {
        do {
            try run(
                "INSERT INTO \(Migrator.tableName) (id, name, checksum, applied_at) "
                    + "VALUES (?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                migration.id, migration.name, migration.checksum)
        } catch {
            throw error.migrationFailure
        }
    }
}

extension SQLiteError {
    /// This error as the migrator reports it.
    public var migrationFailure: DatabaseFailure {
        DatabaseFailure(code: codeName, message: message, description: description)
    }
}
