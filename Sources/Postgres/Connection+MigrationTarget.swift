import SchemaMigration

/// PostgreSQL as a ``MigrationTarget``. Migrators on several instances are
/// serialised by a transaction-level advisory lock, taken before reading
/// `schema_migrations` and released by the migration's commit or rollback.
extension Connection: MigrationTarget {
    /// The advisory lock key of listd's migrations (the bytes of "listd-mg").
    static let migrationLockKey: Int64 = 0x6c69_7374_642d_6d67

    public func appliedMigrations() throws(DatabaseFailure) -> [AppliedMigration] {
        do {
            let exists = try query("SELECT to_regclass($1) IS NOT NULL", .text(Migrator.tableName))
            guard try exists[0].bool(0) else { return [] }
            return try query("SELECT id, name, checksum, applied_at FROM \(Migrator.tableName) ORDER BY id").map {
                row throws(PostgresError) in
                AppliedMigration(
                    id: try row.int(0), name: try row.text(1), checksum: try row.text(2), appliedAt: try row.text(3))
            }
        } catch {
            throw error.migrationFailure
        }
    }

    public func createMigrationsTable() throws(DatabaseFailure) {
        do {
            // Under the lock: two sessions racing on CREATE TABLE IF NOT EXISTS can both try to create it.
            try transaction { () throws(PostgresError) in
                try query("SELECT pg_advisory_xact_lock($1)", .integer(Self.migrationLockKey))
                try execute(
                    """
                    CREATE TABLE IF NOT EXISTS \(Migrator.tableName) (
                        id bigint PRIMARY KEY,
                        name text NOT NULL,
                        checksum text NOT NULL,
                        applied_at text NOT NULL
                    )
                    """)
            }
        } catch {
            throw error.migrationFailure
        }
    }

    public func inMigrationTransaction<T>(_ body: () throws(MigrationError) -> T) throws(MigrationError) -> T {
        do {
            try execute("BEGIN")
            try query("SELECT pg_advisory_xact_lock($1)", .integer(Self.migrationLockKey))
        } catch {
            rollbackQuietly()
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
            rollbackQuietly()
            throw error
        }
    }

    public func runMigrationScript(_ sql: String) throws(DatabaseFailure) {
        do { try execute(sql) } catch { throw error.migrationFailure }
    }

    public var isInMigrationTransaction: Bool { transactionState == .inTransaction }

    public func recordMigration(_ migration: Migration) throws(DatabaseFailure) {
        do {
            try query(
                "INSERT INTO \(Migrator.tableName) (id, name, checksum, applied_at) VALUES ($1, $2, $3, "
                    + "to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'))",
                .integer(Int64(migration.id)), .text(migration.name), .text(migration.checksum))
        } catch {
            throw error.migrationFailure
        }
    }
}

extension PostgresError {
    /// This error as the migrator reports it.
    public var migrationFailure: DatabaseFailure {
        DatabaseFailure(code: sqlState.map { "SQLSTATE \($0)" }, message: message, description: description)
    }
}
