import Foundation
import ListdTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One listd process per SQLite file: a second `listd serve` on the same file
/// must refuse to start (it would serve stale data and never wake its followers).
@Suite struct SingleProcessEndToEndTests {
    @Test func aSecondServeOnTheSameDatabaseRefusesNamingTheFile() async throws {
        let first = try await ListdServer()
        defer { first.stop() }
        let database = first.listd.database.path
        let created = try await first.request("POST", "/lists", body: ["id": "shared", "name": "Shared"])
        #expect(created.status == 201)

        let (status, output) = try await ListdBinary.run(
            [
                "serve", "--host", "127.0.0.1", "--port", "0", "--db", database,
                "--migrations", ListdServer.migrations.path,
            ], stderr: true)
        #expect(status != 0)
        #expect(output.contains("the database \(database) is in use by process \(first.process.processIdentifier)"))
        #expect(!output.contains("serving"), "the second listd started: \(output)")

        // The first is unharmed, and after it stops the file is free again.
        #expect(try await first.get("/lists/shared").status == 200)
        #expect(first.listd.stop(removeFiles: false) == 0)
        let second = try await ListdProcess(reusing: first.listd)
        defer { second.stop() }
        let list = try await URLSession.shared.data(from: second.baseURL.appendingPathComponent("lists/shared"))
        #expect((list.1 as? HTTPURLResponse)?.statusCode == 200)
    }
}
