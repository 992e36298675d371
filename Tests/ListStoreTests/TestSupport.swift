import Foundation
import JSON
import ListStore

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

/// Opens a store on a fresh temporary database, runs `body`, closes the store
/// and removes the files.
func withStore<T>(
    _ configuration: StoreConfiguration = StoreConfiguration(fullSync: false),
    _ body: (SQLiteStore) async throws -> T
) async throws -> T {
    let directory = try TemporaryDirectory()
    var configuration = configuration
    configuration.migrationsDirectory = migrationsDirectory
    let store = try await SQLiteStore(path: directory.databasePath, configuration: configuration)
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
