import Foundation
import ListdTestSupport
import Testing

/// `"indexes"` on `POST /lists` and `PUT /lists/{list}` through the binary, on
/// both stores: declared in the write's transaction, listed at once, serving
/// `where` (the plan header says so), and refused paths named as the index
/// route names them.
@Suite struct CreateWithIndexesTests {
    static var stores: [String] { TestPostgres.enabled ? ["sqlite", "postgres"] : ["sqlite"] }

    func withServer(_ store: String, _ body: (ListdServer) async throws -> Void) async throws {
        let database = store == "postgres" ? try await TestPostgres.createDatabase() : nil
        defer { database?.drop() }
        let server = try await ListdServer(store: database?.url)
        defer { server.stop() }
        try await body(server)
    }

    static func items(_ count: Int) -> [[String: Any]] {
        (0..<count).map { ["id": "i\($0)", "model": ["done": $0 % 4 == 0, "tags": $0 % 2 == 0 ? ["red"] : ["blue"]]] }
    }

    static func paths(_ reply: ListdServer.Reply) throws -> [String]? {
        (try reply.object()["indexes"] as? [[String: Any]])?.compactMap { $0["path"] as? String }
    }

    static func ids(_ reply: ListdServer.Reply) throws -> [String] {
        (try reply.object()["items"] as? [[String: Any]])?.compactMap { $0["id"] as? String } ?? []
    }

    @Test(arguments: stores)
    func aListCreatedWithIndexesListsThemAndServesWhereFromThem(_ store: String) async throws {
        try await withServer(store) { server in
            let created = try await server.request(
                "POST", "/lists",
                body: [
                    "id": "todo", "indexes": ["done", "tags.0", "done"],
                    "sections": [["id": "s", "items": Self.items(40)]],
                ])
            #expect(created.status == 201, "\(created.text.prefix(300))")
            let listed = try await server.get("/lists/todo/indexes")
            #expect(listed.status == 200)
            #expect(try Self.paths(listed) == ["done", "tags.0"])
            // Declaring is not content: the list is at version 1.
            #expect(try created.object()["version"] as? Int == 1)

            let done = try await server.get("/lists/todo/items?where=done:true&limit=3")
            #expect(done.status == 200, "\(done.text.prefix(300))")
            #expect(done.header("listd-query-plan") == "index; path=done")
            #expect(try Self.ids(done) == ["i0", "i4", "i8"])
            let red = try await server.get("/lists/todo/items?where=tags.0:red&limit=2")
            #expect(red.header("listd-query-plan") == "index; path=tags.0")
            #expect(try Self.ids(red) == ["i0", "i2"])
            // Items written after the create are indexed on write, as ever.
            let patched = try await server.request(
                "PATCH", "/lists/todo",
                body: [
                    "ops": [
                        ["op": "insertItem", "section": "s", "at": 0, "item": ["id": "new", "model": ["done": true]]]
                    ]
                ])
            #expect(patched.status == 200)
            #expect(try Self.ids(try await server.get("/lists/todo/items?where=done:true&limit=2")) == ["new", "i0"])
        }
    }

    @Test(arguments: stores)
    func aPutDeclaresIndexesOnExistingItemsAndCreatesWithThem(_ store: String) async throws {
        try await withServer(store) { server in
            let created = try await server.request(
                "POST", "/lists", body: ["id": "l", "sections": [["id": "s", "items": Self.items(8)]]])
            #expect(created.status == 201)
            let scanned = try await server.get("/lists/l/items?where=done:true")
            #expect(scanned.header("listd-query-plan") == "scan; no index matches")
            // The same content plus an index: indexed, and still version 1.
            let put = try await server.request(
                "PUT", "/lists/l", body: ["indexes": ["done"], "sections": [["id": "s", "items": Self.items(8)]]])
            #expect(put.status == 200, "\(put.text.prefix(300))")
            #expect(try put.object()["to"] as? Int == 1)
            #expect(try Self.paths(try await server.get("/lists/l/indexes")) == ["done"])
            let indexed = try await server.get("/lists/l/items?where=done:true")
            #expect(indexed.header("listd-query-plan") == "index; path=done")
            #expect(try Self.ids(indexed) == ["i0", "i4"])
            // A PUT that creates the list declares them too.
            let fresh = try await server.request(
                "PUT", "/lists/fresh",
                body: ["indexes": ["tags.0"], "sections": [["id": "s", "items": Self.items(4)]]])
            #expect(fresh.status == 201, "\(fresh.text.prefix(300))")
            #expect(try Self.paths(try await server.get("/lists/fresh/indexes")) == ["tags.0"])
        }
    }

    @Test(arguments: stores)
    func aRefusedIndexPathIsAProblemNamingItAndNothingIsWritten(_ store: String) async throws {
        try await withServer(store) { server in
            let bad = try await server.request(
                "POST", "/lists", body: ["id": "bad", "indexes": ["done", "a..b"], "sections": [["id": "s"]]])
            #expect(bad.status == 400)
            #expect(bad.header("Content-Type") == "application/problem+json")
            let problem = try bad.object()
            #expect(problem["type"] as? String == "https://listd.dev/problems/invalid-index-path")
            let detail = problem["detail"] as? String ?? ""
            #expect(detail.contains("indexes[1]") && detail.contains("\"a..b\""), "\(detail)")
            #expect(try await server.get("/lists/bad").status == 404)

            let notString = try await server.request("POST", "/lists", body: ["id": "bad", "indexes": [3]])
            #expect(notString.status == 400)
            #expect((try notString.object()["detail"] as? String)?.contains("indexes[0]") == true, "\(notString.text)")

            let tooMany = try await server.request(
                "POST", "/lists", body: ["id": "bad", "indexes": (0..<17).map { "p\($0)" }])
            #expect(tooMany.status == 413, "\(tooMany.text)")
            #expect(try await server.get("/lists/bad").status == 404)

            #expect(try await server.request("POST", "/lists", body: ["id": "ok"]).status == 201)
            let badPut = try await server.request("PUT", "/lists/ok", body: ["indexes": ["x\"y"], "sections": []])
            #expect(badPut.status == 400)
            #expect(badPut.text.contains("x\\\"y"), "\(badPut.text)")
            #expect(try Self.paths(try await server.get("/lists/ok/indexes")) == [])
        }
    }
}
