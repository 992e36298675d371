import Foundation
import JSON
import ListModel
import ListStore
import ListdTestSupport
import PostgresStore
import Testing

/// A temporary folder removed when the test ends.
struct TemporaryDirectory: ~Copyable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("liststore-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    var databasePath: String { url.appendingPathComponent("store.sqlite").path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// The repository's real `Migrations/` folder.
let migrationsDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Migrations", isDirectory: true)

/// The stores the conformance tests run against: SQLite always, PostgreSQL
/// when a test server is configured (see ``TestPostgres``; under CI=true it
/// must be, and a missing one fails the PostgreSQL cases).
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    static var tested: [StoreKind] { TestPostgres.enabled ? [.sqlite, .postgres] : [.sqlite] }

    var testDescription: String { rawValue }
}

/// What the tests need of either store beyond ``Store``.
protocol TestedStore: Store {
    var counters: (writes: Int, commits: Int) { get }
    func close() async
}

extension SQLiteStore: TestedStore {}
extension PostgresStore: TestedStore {}

/// Opens a store of `kind` on a fresh temporary database (a SQLite file, or a
/// new PostgreSQL database), runs `body`, closes the store and removes the
/// database.
func withStore<T>(
    _ kind: StoreKind = .sqlite,
    _ configuration: StoreConfiguration = StoreConfiguration(fullSync: false),
    _ body: (any TestedStore) async throws -> T
) async throws -> T {
    var configuration = configuration
    configuration.migrationsDirectory = migrationsDirectory
    let directory = try TemporaryDirectory()
    var database: TestDatabase?
    let store: any TestedStore
    switch kind {
    case .sqlite:
        store = try await SQLiteStore(path: directory.databasePath, configuration: configuration)
    case .postgres:
        let created = try await TestPostgres.createDatabase()
        database = created
        store = try await PostgresStore(url: created.url, configuration: configuration)
    }
    defer { database?.drop() }
    do {
        let result = try await body(store)
        await store.close()
        return result
    } catch {
        await store.close()
        throw error
    }
}

func id(_ text: String) -> Identifier {
    Identifier(text)!
}

func model(_ json: String) -> Model {
    try! Model(parsing: Array(json.utf8))
}

/// Runs `body` and returns the store error it throws, or `nil` when it succeeds.
func storeError(_ body: () async throws(StoreError) -> Void) async -> StoreError? {
    do {
        try await body()
        return nil
    } catch {
        return error
    }
}

extension ListSnapshot {
    /// The list as "section[item,item] section[]" for readable expectations.
    var outline: String {
        sections.map { section in "\(section.id)[\(section.items.map(\.id.rawValue).joined(separator: ","))]" }
            .joined(separator: " ")
    }
}

let longTests = ProcessInfo.processInfo.environment["LISTD_LONG_TESTS"] == "1"
