import ArgumentParser
import Foundation
import ListStore
import Logging
import Postgres
import PostgresStore

/// Which database a command works on: the SQLite file (`--db`, the default)
/// or a PostgreSQL database (`--store postgres://…`).
enum StoreLocation: Equatable {
    case sqlite(path: String)
    case postgres(url: String)

    /// Resolves `--store`/`LISTD_STORE` and `--db`/`LISTD_DB`; giving both is refused.
    static func resolve(store: String?, db: String?, _ env: EnvironmentResolver) throws -> StoreLocation {
        let storeURL = try env.resolve(store, "LISTD_STORE")
        let path = try env.resolve(db, "LISTD_DB")
        guard let storeURL, !storeURL.isEmpty else { return .sqlite(path: path ?? "listd.sqlite") }
        guard storeURL.hasPrefix("postgres://") || storeURL.hasPrefix("postgresql://") else {
            throw ValidationError(
                "--store takes a postgres:// or postgresql:// URL, got \(Connection.redacted(storeURL)); "
                    + "for a SQLite file use --db PATH")
        }
        if let path {
            throw ValidationError(
                "give either --store (PostgreSQL) or --db (SQLite), not both (--db/LISTD_DB is \(path))")
        }
        return .postgres(url: storeURL)
    }

    /// The file, or the URL without its password: safe for logs and messages.
    var displayName: String {
        switch self {
        case .sqlite(let path): path
        case .postgres(let url): Connection.redacted(url)
        }
    }

    /// The migrations of this kind of store inside the migrations folder:
    /// SQLite's at its top, PostgreSQL's in `postgres/`.
    func migrations(in folder: URL) -> URL {
        switch self {
        case .sqlite: folder
        case .postgres: folder.appendingPathComponent("postgres", isDirectory: true)
        }
    }
}

/// The store `serve` opened, with what the command needs of it beyond ``Store``.
struct OpenedStore: Sendable {
    let store: any Store
    let counters: @Sendable () -> (writes: Int, commits: Int)
    let close: @Sendable () async -> Void

    static func open(_ location: StoreLocation, configuration: StoreConfiguration, logger: Logger)
        async throws(StoreError) -> OpenedStore
    {
        switch location {
        case .sqlite(let path):
            let store = try await SQLiteStore(path: path, configuration: configuration)
            return OpenedStore(store: store, counters: { store.counters }, close: { await store.close() })
        case .postgres(let url):
            let store = try await PostgresStore(url: url, configuration: configuration, logger: logger)
            return OpenedStore(store: store, counters: { store.counters }, close: { await store.close() })
        }
    }
}
