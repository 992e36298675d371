/// Why the `Migrator` refused to load or apply migrations.
///
/// Each description names the migration and says what an operator should do,
/// because these errors stop `listd serve` at start-up.
public enum MigrationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The database has a migration applied that this binary does not know:
    /// a newer listd migrated it, or `--migrations` points at the wrong folder.
    case unknownMigration(id: Int, name: String)
    /// An applied migration's file has changed since it was applied.
    case checksumMismatch(id: Int, name: String, recorded: String, actual: String)
    /// An applied migration's file was renamed since it was applied.
    case nameMismatch(id: Int, recorded: String, actual: String)
    /// A `.sql` file in the migrations folder is not named `NNNN_name.sql`.
    case badFileName(String)
    /// Two migrations share an id.
    case duplicateId(Int, names: [String])
    /// Ids must run 1, 2, 3… without gaps; this one is missing.
    case missingId(Int)
    /// The folder or a file in it could not be read, or is not UTF-8.
    case unreadable(path: String, reason: String)
    /// A migration's SQL failed; its transaction was rolled back.
    case failed(Migration, DatabaseFailure)
    /// Reading or writing `schema_migrations` failed.
    case database(DatabaseFailure)

    /// A sentence an operator can act on.
    public var description: String {
        switch self {
        case .unknownMigration(let id, let name):
            let migration = Migration.identifier(id: id, name: name)
            return "The database has migration \(migration) applied, but this listd does not know it: "
                + "the database was migrated by a newer listd or from another migrations folder. "
                + "Run the listd that has \(migration).sql (or point --migrations at its folder); "
                + "do not edit schema_migrations by hand."
        case .checksumMismatch(let id, let name, let recorded, let actual):
            let file = Migration.identifier(id: id, name: name) + ".sql"
            return "Migration \(file) was applied with checksum \(recorded), but the file now has \(actual): "
                + "an applied migration must never change. Restore the original \(file) "
                + "and put the change in a new migration."
        case .nameMismatch(let id, let recorded, let actual):
            return "Migration \(Migration.identifier(id: id, name: recorded)) was applied under that name, "
                + "but the file is now \(Migration.identifier(id: id, name: actual)).sql: rename it back."
        case .badFileName(let file):
            return "Migration file \(file) is not named NNNN_name.sql (at least four digits from 0001, "
                + "an underscore, then letters, digits, '_' or '-'): rename it."
        case .duplicateId(let id, let names):
            return "Migration id \(id) is used by \(names.joined(separator: " and ")): "
                + "give the newer one the next free number."
        case .missingId(let id):
            return "Migration ids must run 1, 2, 3… without gaps, but id \(id) is missing: "
                + "restore its file, or renumber the migrations after it if no database has applied them."
        case .unreadable(let path, let reason):
            return "Cannot read migrations at \(path): \(reason)."
        case .failed(let migration, let error):
            return "Migration \(migration.fileName) failed and was rolled back (nothing of it was applied): "
                + "\(error). Fix the file (it was not recorded, so editing it is safe) and migrate again."
        case .database(let error):
            return "Cannot read or write schema_migrations: \(error)."
        }
    }
}
