import Foundation
import Postgres

/// The PostgreSQL server tests run against: `LISTD_TEST_POSTGRES_URL`, set by
/// `./dev test` (which starts one with `.ci/postgres` when it can) or by hand.
///
/// Unset, PostgreSQL tests are skipped with that reason, except under
/// `CI=true`, where they run and fail: CI must never pass by skipping them.
public enum TestPostgres {
    /// The server's URL (any database on it; tests create their own).
    public static var url: String? {
        guard let url = ProcessInfo.processInfo.environment["LISTD_TEST_POSTGRES_URL"], !url.isEmpty else {
            return nil
        }
        return url
    }

    /// Whether PostgreSQL tests should run: a URL is set, or this is CI (where they then fail).
    public static var enabled: Bool {
        url != nil || ProcessInfo.processInfo.environment["CI"] == "true"
    }

    /// Why PostgreSQL tests are skipped, for the test report.
    public static let skipReason =
        "LISTD_TEST_POSTGRES_URL is unset: start a server with `.ci/postgres start` and export its URL "
        + "(./dev test does this itself when PostgreSQL is installed)"

    /// The server URL, or a failure saying why there is none.
    public static func requireURL() throws -> String {
        guard let url else {
            throw TestFailure("CI=true but LISTD_TEST_POSTGRES_URL is unset: PostgreSQL tests must run in CI")
        }
        return url
    }

    /// A fresh, empty database on the test server, dropped by ``TestDatabase/drop()``.
    /// The blocking libpq work runs on a thread of its own, not Swift's pool.
    public static func createDatabase() async throws -> TestDatabase {
        try await blocking { try createDatabaseBlocking() }
    }

    /// ``createDatabase()`` for code already off the cooperative pool.
    public static func createDatabaseBlocking() throws -> TestDatabase {
        let server = try requireURL()
        let name = "listd_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let admin = try Connection(url: server)
        defer { admin.close() }
        try admin.execute("CREATE DATABASE \(name)")
        return TestDatabase(name: name, url: try url(server, database: name), serverURL: server)
    }

    /// `server` with its database replaced by `database`.
    static func url(_ server: String, database: String) throws -> String {
        guard var components = URLComponents(string: server) else {
            throw TestFailure("LISTD_TEST_POSTGRES_URL is not a URL: \(Connection.redacted(server))")
        }
        components.path = "/" + database
        guard let url = components.string else { throw TestFailure("cannot build a URL for \(database)") }
        return url
    }
}

/// A database made for one test.
public final class TestDatabase: Sendable {
    /// The database's name.
    public let name: String
    /// Its URL.
    public let url: String
    let serverURL: String

    init(name: String, url: String, serverURL: String) {
        self.name = name
        self.url = url
        self.serverURL = serverURL
    }

    /// Drops the database, ending its sessions first, on a thread of its own
    /// (so a `defer` on Swift's pool never blocks it).
    public func drop() {
        let serverURL = serverURL
        let name = name
        Thread.detachNewThread {
            guard let admin = try? Connection(url: serverURL) else { return }
            defer { admin.close() }
            _ = try? admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        }
    }
}

/// Runs blocking work (libpq, waits) on a thread of its own and awaits it, so
/// a test never holds one of the cooperative pool's few threads: on a 2-core
/// machine that would starve every other suite running beside it.
public func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        Thread.detachNewThread {
            do {
                continuation.resume(returning: try body())
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }
}
