/// A database the ``Migrator`` can migrate: the few things it needs, which
/// each backend (SQLite's `Storage.Connection`, PostgreSQL's
/// `Postgres.Connection`) provides in its own SQL.
///
/// The migrator owns the rules (order, checksums, refusing unknown or changed
/// migrations, one transaction per migration); a target only stores and runs.
public protocol MigrationTarget {
    /// The rows of `schema_migrations` in id order; empty when the table does
    /// not exist. Only reads, so a read-only session can answer.
    func appliedMigrations() throws(DatabaseFailure) -> [AppliedMigration]

    /// Creates `schema_migrations` when missing. Safe to race with another
    /// process doing the same.
    func createMigrationsTable() throws(DatabaseFailure)

    /// Runs `body` in one transaction that holds the lock serialising
    /// migrators (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: a transaction-level
    /// advisory lock), commits when it returns, rolls back when it throws.
    func inMigrationTransaction<T>(_ body: () throws(MigrationError) -> T) throws(MigrationError) -> T

    /// Runs a migration's script inside that transaction.
    func runMigrationScript(_ sql: String) throws(DatabaseFailure)

    /// Whether the transaction is still open (a script must not end it).
    var isInMigrationTransaction: Bool { get }

    /// Records `migration` as applied, with the current time, inside the transaction.
    func recordMigration(_ migration: Migration) throws(DatabaseFailure)
}

/// A database's failure as the migrator reports it: the backend's code
/// (`SQLITE_ERROR`, `SQLSTATE 42601`…) and message, and its full description.
public struct DatabaseFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The backend's code, such as `SQLSTATE 42601`; nil when it has none.
    public var code: String?
    /// The backend's primary message.
    public var message: String
    /// Everything the backend said (message, code, statement), for operators.
    public var description: String

    /// Creates a failure.
    public init(code: String?, message: String, description: String? = nil) {
        self.code = code
        self.message = message
        self.description = description ?? message
    }
}
