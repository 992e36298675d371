import Foundation
import ListdTestSupport
import Testing

/// Regression tests for what trying listd as a new user (and as a hostile client) found
/// (issue 15): errors must name what the client sent, and commands must do what they say.
@Suite struct HardeningTests {
    static func list(_ id: String) -> [String: Any] {
        [
            "id": id,
            "sections": [
                [
                    "id": "fruit", "model": ["title": "Fruit"],
                    "items": [
                        ["id": "apple", "model": [:]], ["id": "pear", "model": [:]], ["id": "plum", "model": [:]],
                    ],
                ]
            ],
        ]
    }

    static func slug(_ reply: ListdServer.Reply) throws -> String? {
        (try reply.object()["type"] as? String)?.replacingOccurrences(of: "https://listd.dev/problems/", with: "")
    }

    // MARK: - Cursors

    @Test func aCursorThisServerDidNotIssueIsAnInvalidCursor() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        #expect(try await server.request("POST", "/lists", body: Self.list("groceries")).status == 201)
        for cursor in ["zzz", "not-a-cursor", "Z3JvY2VyaWVz"] {
            let reply = try await server.get("/lists/groceries/items?after=\(cursor)")
            #expect(reply.status == 400, "\(cursor): \(reply.text)")
            #expect(try Self.slug(reply) == "invalid-cursor", "\(cursor): \(reply.text)")
            #expect(try (reply.object()["detail"] as? String)?.contains("after") == true)
        }
    }

    @Test func aCursorFromAnotherListIsRefused() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        #expect(try await server.request("POST", "/lists", body: Self.list("groceries")).status == 201)
        #expect(try await server.request("POST", "/lists", body: Self.list("todo")).status == 201)

        let first = try await server.get("/lists/groceries/items?limit=1")
        #expect(first.status == 200, "\(first.text)")
        let next = try #require(try first.object()["next"] as? String)
        // The cursor pages on through its own list...
        let second = try await server.get("/lists/groceries/items?limit=1&after=\(next)")
        #expect(second.status == 200, "\(second.text)")
        #expect(second.text.contains(#""id":"pear""#))
        // ...and is refused on another, instead of answering a page of the wrong list.
        let elsewhere = try await server.get("/lists/todo/items?limit=1&after=\(next)")
        #expect(elsewhere.status == 400, "\(elsewhere.text)")
        #expect(try Self.slug(elsewhere) == "invalid-cursor")
        let detail = try #require(try elsewhere.object()["detail"] as? String)
        #expect(detail.contains("groceries") && detail.contains("todo"), "\(detail)")
    }

    // MARK: - Errors name what the client sent

    @Test(arguments: ["8", "\"x\"", "\"a\"b\""])
    func aBadIfMatchIsNamedAsAHeader(_ value: String) async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        #expect(try await server.request("POST", "/lists", body: Self.list("groceries")).status == 201)
        let reply = try await server.request(
            "PATCH", "/lists/groceries", body: #"{"ops": []}"#, headers: ["If-Match": value])
        #expect(reply.status == 400, "\(reply.text)")
        let problem = try reply.object()
        #expect(try Self.slug(reply) == "invalid-header", "\(reply.text)")
        #expect(problem["title"] as? String == "A request header is not valid")
        #expect((problem["detail"] as? String)?.hasPrefix("If-Match") == true, "\(reply.text)")
    }

    @Test func aTooLargeModelSentToASectionRouteNamesNoOp() async throws {
        let server = try await ListdServer(["--max-model-bytes", "64"])
        defer { server.stop() }
        #expect(try await server.request("POST", "/lists", body: ["id": "groceries"]).status == 201)
        let big = String(repeating: "x", count: 100)
        let replies = [
            try await server.request(
                "POST", "/lists/groceries/sections", body: ["id": "veg", "model": ["title": big]]),
            try await server.request("PUT", "/lists/groceries/sections/veg", body: ["model": ["title": big]]),
        ]
        for reply in replies {
            #expect(reply.status == 413, "\(reply.text)")
            let detail = try #require(try reply.object()["detail"] as? String)
            #expect(!detail.contains("op 0"), "\(detail)")
            #expect(!detail.contains("insertSection"), "\(detail)")
            #expect(detail.contains("64"), "names the limit: \(detail)")
        }
        // A batch of ops still names the op at fault.
        let patch = try await server.request(
            "PATCH", "/lists/groceries",
            body: ["ops": [["op": "insertSection", "section": ["id": "veg", "model": ["title": big]]]]])
        #expect(patch.status == 413, "\(patch.text)")
        #expect(try (patch.object()["detail"] as? String)?.hasPrefix("op 0 (insertSection)") == true, "\(patch.text)")
    }

    // MARK: - A full disk

    @Test func aFullDatabaseAnswers507KeepsAcknowledgedWritesServesReadsAndRecovers() async throws {
        let server = try await ListdServer(["--testing-max-database-pages", "60"])
        defer { server.stop() }
        #expect(try await server.request("POST", "/lists", body: ["id": "big"]).status == 201)
        #expect(try await server.request("POST", "/lists", body: Self.list("groceries")).status == 201)
        let padding = String(repeating: "x", count: 8000)
        var acknowledged: [String] = []
        var full: ListdServer.Reply?
        for index in 0..<200 {
            let reply = try await server.request(
                "POST", "/lists/big/sections", body: ["id": "s\(index)", "model": ["p": padding]])
            if reply.status == 201 {
                acknowledged.append("s\(index)")
                continue
            }
            full = reply
            break
        }
        let refused = try #require(full, "the database never filled up")
        #expect(refused.status == 507, "\(refused.text)")
        #expect(try Self.slug(refused) == "insufficient-storage")
        let detail = try #require(try refused.object()["detail"] as? String)
        #expect(detail.contains("the database is full"), "\(detail)")
        #expect(!detail.contains("op 0"), "\(detail)")

        // Acknowledged data is intact and reads are served.
        let big = try await server.get("/lists/big")
        #expect(big.status == 200)
        let sections = try #require(try big.object()["sections"] as? [[String: Any]])
        #expect(sections.compactMap { $0["id"] as? String } == acknowledged)
        #expect(try await server.get("/lists/groceries/items").status == 200)

        // Space returns (the big list goes), and writes work again without a restart.
        #expect(try await server.request("DELETE", "/lists/big").status == 204)
        let written = try await server.request(
            "POST", "/lists/groceries/sections", body: ["id": "veg", "model": ["p": padding]])
        #expect(written.status == 201, "\(written.text)")
    }

    // MARK: - Commands

    @Test func healthAcceptsABaseURL() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        for url in [base, base + "/", base + "/healthz"] {
            let result = try await ListdBinary.run(["health", "--url", url], stderr: true)
            #expect(result.status == 0, "\(url): \(result.output)")
        }
        let wrong = try await ListdBinary.run(["health", "--url", base + "/nothing/here"], stderr: true)
        #expect(wrong.status == 1, "\(wrong.output)")
    }

    @Test func migrateDryRunOnANewPathCreatesNothing() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("listd-dry-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("new.sqlite").path
        let result = try await ListdBinary.run(
            ["migrate", "--dry-run", "--db", database, "--migrations", ListdServer.migrations.path], stderr: true)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("0001_"), "lists what it would apply: \(result.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == [])

        // On an existing, migrated database it changes nothing either.
        #expect(
            try await ListdBinary.run(["migrate", "--db", database, "--migrations", ListdServer.migrations.path]).status
                == 0)
        let before = try Self.files(in: directory)
        let again = try await ListdBinary.run(
            ["migrate", "--dry-run", "--db", database, "--migrations", ListdServer.migrations.path], stderr: true)
        #expect(again.status == 0)
        #expect(again.output.contains("up to date"), "\(again.output)")
        #expect(try Self.files(in: directory) == before)
    }

    static func files(in directory: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            files[name] = try Data(contentsOf: directory.appendingPathComponent(name))
        }
        return files
    }

    @Test func aStartRefusedForABusyPortLeavesNoDatabaseAndPrintsNoUsage() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("listd-busy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await ListdBinary.run(
            [
                "serve", "--port", String(server.port), "--db", directory.appendingPathComponent("listd.sqlite").path,
                "--migrations", ListdServer.migrations.path,
            ], stderr: true)
        #expect(result.status == 1, "\(result.output)")
        #expect(result.output.contains("cannot listen on 127.0.0.1:\(server.port)"), "\(result.output)")
        #expect(!result.output.contains("Usage:"), "a runtime error is no usage error: \(result.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == [])
    }

    @Test func aUsageErrorStillPrintsUsage() async throws {
        let result = try await ListdBinary.run(["serve", "--no-such-flag"], stderr: true)
        #expect(result.status == 64, "\(result.output)")
        #expect(result.output.contains("Usage:"), "\(result.output)")
    }
}
