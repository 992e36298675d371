import Foundation
import JSON
import ListdTestSupport
import SectionDiff
import Testing

/// The real listd binary over HTTP: every route of the contract and its errors.
@Suite(.serialized) struct ServiceEndToEndTests {
    static var groceries: [String: Any] {
        [
            "id": "groceries", "name": "Groceries",
            "sections": [
                [
                    "id": "fruit", "model": ["title": "Fruit"],
                    "items": [["id": "apple", "model": ["qty": 3, "done": false]]],
                ]
            ],
        ]
    }

    @Test func aListsWholeLifecycle() async throws {
        let server = try await ListdServer()
        defer { server.stop() }

        let created = try await server.request("POST", "/lists", body: Self.groceries)
        #expect(created.status == 201)
        #expect(created.header("Location") == "/lists/groceries")
        let etag = try #require(created.header("ETag"))
        let epoch = try #require(try created.object()["epoch"] as? String)
        #expect(etag == "\"\(epoch)-1\"")

        let read = try await server.get("/lists/groceries")
        #expect(read.status == 200)
        #expect(read.header("ETag") == etag)
        #expect(read.text.hasSuffix("}\n"))
        #expect(read.text.contains(#""model":{"done":false,"qty":3}"#), "models are stored canonically")

        let notModified = try await server.get("/lists/groceries", headers: ["If-None-Match": etag])
        #expect(notModified.status == 304)
        #expect(notModified.body.isEmpty)

        let head = try await server.request("HEAD", "/lists/groceries")
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(head.header("ETag") == etag)

        let patched = try await server.request(
            "PATCH", "/lists/groceries",
            body: [
                "ops": [
                    ["op": "insertSection", "section": ["id": "veg", "model": [:]], "at": 0],
                    ["op": "insertItem", "section": "veg", "item": ["id": "leek", "model": ["qty": 1]]],
                    ["op": "updateItem", "id": "apple", "model": ["qty": 4, "done": false]],
                    ["op": "moveItem", "id": "apple", "section": "veg", "to": 0],
                ]
            ])
        #expect(patched.status == 200)
        let answer = try JSONValue(parsing: Array(patched.body))
        #expect(answer["from"]?.intValue == 1)
        #expect(answer["to"]?.intValue == 2)
        #expect(patched.header("ETag") == "\"\(epoch)-2\"")

        let before = try ChangeReplay.sections(ofSnapshot: JSONValue(parsing: Array(read.body)))
        let after = try await snapshotSections(server, "groceries")
        #expect(try ChangeReplay.apply(answer, to: before) == after.sections)
        #expect(after.version == 2)

        let stale = try await server.request(
            "PATCH", "/lists/groceries", body: ["ops": [["op": "deleteItem", "id": "leek"]]],
            headers: ["If-Match": etag])
        #expect(stale.status == 412)
        #expect(try stale.object()["type"] as? String == "https://listd.dev/problems/version-mismatch")

        let deleted = try await server.request("DELETE", "/lists/groceries")
        #expect(deleted.status == 204)
        let gone = try await server.get("/lists/groceries")
        #expect(gone.status == 404)
        #expect(gone.header("Content-Type") == "application/problem+json")
        #expect(try gone.object()["detail"] as? String == "list \"groceries\" not found")
    }

    @Test func listsArePaginatedById() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        for name in ["c", "a", "b", "d"] {
            #expect(try await server.request("POST", "/lists", body: ["id": name]).status == 201)
        }
        let first = try await server.get("/lists?limit=3").object()
        let ids = (first["lists"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
        #expect(ids == ["a", "b", "c"])
        #expect(first["next"] as? String == "c")
        let second = try await server.get("/lists?limit=3&after=c").object()
        #expect((second["lists"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["d"])
        #expect(second["next"] == nil)
    }

    @Test func sectionAndItemResources() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        _ = try await server.request("POST", "/lists", body: Self.groceries)

        let section = try await server.request(
            "POST", "/lists/groceries/sections", body: ["id": "veg", "model": ["title": "Veg"], "at": 0])
        #expect(section.status == 201)
        #expect(section.header("Location") == "/lists/groceries/sections/veg")
        #expect(try section.object()["index"] as? Int == 0)

        let item = try await server.request("POST", "/lists/groceries/sections/veg/items", body: ["model": ["qty": 2]])
        #expect(item.status == 201)
        let itemID = try #require((try item.object()["item"] as? [String: Any])?["id"] as? String)
        #expect(item.header("Location") == "/lists/groceries/items/\(itemID)")

        let moved = try await server.request(
            "PATCH", "/lists/groceries/items/apple", body: ["section": "veg", "to": 0])
        #expect(moved.status == 200)
        #expect(try moved.object()["section"] as? String == "veg")
        #expect(try moved.object()["at"] as? [Int] == [0, 0])

        let fetched = try await server.get("/lists/groceries/items/apple")
        #expect(try fetched.object()["at"] as? [Int] == [0, 0])
        #expect(fetched.text.contains(#""item":{"id":"apple","model":{"done":false,"qty":3}}"#))

        let renamed = try await server.request(
            "PATCH", "/lists/groceries/sections/veg", body: ["model": ["title": "Vegetables"], "to": 1])
        #expect(renamed.status == 200)
        #expect(try renamed.object()["index"] as? Int == 1)

        let created = try await server.request(
            "PUT", "/lists/groceries/items/pear", body: ["model": ["qty": 1], "section": "fruit"])
        #expect(created.status == 201)
        let replaced = try await server.request("PUT", "/lists/groceries/items/pear", body: ["model": ["qty": 5]])
        #expect(replaced.status == 200)

        let sectionItems = try await server.get("/lists/groceries/sections/veg/items").object()
        #expect((sectionItems["items"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["apple", itemID])

        let replacedSection = try await server.request(
            "PUT", "/lists/groceries/sections/fruit",
            body: ["model": ["title": "F"], "items": [["id": "apple"], ["id": "kiwi", "model": [:]]]])
        #expect(replacedSection.status == 200)
        let fruit = try replacedSection.object()["section"] as? [String: Any]
        #expect((fruit?["items"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["apple", "kiwi"])

        #expect(try await server.request("DELETE", "/lists/groceries/items/kiwi").status == 204)
        #expect(try await server.request("DELETE", "/lists/groceries/sections/veg").status == 204)
        #expect(try await server.get("/lists/groceries/items/\(itemID)").status == 404)
        let sections = try await server.get("/lists/groceries/sections").object()
        #expect((sections["sections"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["fruit"])
    }

    @Test func itemQueries() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        let items: [[String: Any]] = (0..<25).map { index in
            [
                "id": "i\(index)",
                "model": [
                    "done": index % 2 == 0, "name": index % 5 == 0 ? "Red apple \(index)" : "pear",
                    "tags": [index % 3 == 0 ? "red" : "blue"],
                ],
            ]
        }
        _ = try await server.request(
            "POST", "/lists",
            body: [
                "id": "q",
                "sections": [["id": "a", "items": Array(items[..<10])], ["id": "b", "items": Array(items[10...])]],
            ])

        func ids(_ path: String) async throws -> (ids: [String], next: String?) {
            let reply = try await server.get(path)
            #expect(reply.status == 200, "\(path): \(reply.text)")
            let object = try reply.object()
            return (
                (object["items"] as? [[String: Any]])?.compactMap { $0["id"] as? String } ?? [],
                object["next"] as? String
            )
        }
        #expect(try await ids("/lists/q/items?where=done:false&section=a").ids == ["i1", "i3", "i5", "i7", "i9"])
        #expect(
            try await ids("/lists/q/items?where=tags.0:red&where=done:true").ids == ["i0", "i6", "i12", "i18", "i24"])
        #expect(try await ids("/lists/q/items?q=APPLE").ids == ["i0", "i5", "i10", "i15", "i20"])

        var seen: [String] = []
        var cursor: String?
        repeat {
            let page = try await ids("/lists/q/items?limit=7" + (cursor.map { "&after=\($0)" } ?? ""))
            seen += page.ids
            cursor = page.next
            if seen.count == 7 {
                // Writes between pages do not invalidate the cursor: a later
                // item deleted now is simply not listed, nothing repeats.
                _ = try await server.request("PATCH", "/lists/q", body: ["ops": [["op": "deleteItem", "id": "i10"]]])
            }
        } while cursor != nil
        #expect(seen == (0..<25).filter { $0 != 10 }.map { "i\($0)" })

        #expect(try await server.get("/lists/q/items?after=%21%21").status == 400)
        #expect(try await server.get("/lists/q/items?where=nocolon").status == 400)
        #expect(try await server.get("/lists/q/items?limit=0").status == 400)
    }

    @Test func badInputGetsAProblemThatSaysWhatWasWrong() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        _ = try await server.request("POST", "/lists", body: Self.groceries)

        func problem(_ method: String, _ path: String, _ body: Any?, headers: [String: String] = [:]) async throws -> (
            Int, String, String
        ) {
            let reply = try await server.request(method, path, body: body, headers: headers)
            #expect(reply.header("Content-Type") == "application/problem+json", "\(method) \(path)")
            let object = try reply.object()
            return (reply.status, object["type"] as? String ?? "", object["detail"] as? String ?? "")
        }
        var (status, type, detail) = try await problem("POST", "/lists", "{\"id\": ")
        #expect(status == 400 && type.hasSuffix("/invalid-json") && detail.contains("line 1"))
        (status, type, detail) = try await problem(
            "PATCH", "/lists/groceries", ["ops": [["op": "moveItem", "id": "apple", "index": 0]]])
        #expect(status == 400 && detail.contains("op 0 (moveItem)") && detail.contains("\"index\""))
        (status, type, detail) = try await problem(
            "PATCH", "/lists/groceries", ["ops": [["op": "flyItem", "id": "apple"]]])
        #expect(status == 400 && detail.contains("unknown op \"flyItem\""))
        (status, type, detail) = try await problem(
            "PATCH", "/lists/groceries",
            ["ops": [["op": "insertItem", "section": "fruit", "item": ["id": "x"], "at": 7]]])
        #expect(status == 400 && type.hasSuffix("/position-out-of-range") && detail.contains("7"))
        (status, type, detail) = try await problem(
            "PATCH", "/lists/groceries", ["ops": [["op": "insertItem", "section": "fruit", "item": ["id": "apple"]]]])
        #expect(status == 409 && type.hasSuffix("/duplicate-id") && detail.contains("apple"))
        (status, type, detail) = try await problem(
            "PATCH", "/lists/groceries", ["ops": [["op": "insertItem", "section": "fruit", "item": ["id": "bad id"]]]])
        #expect(status == 400 && type.hasSuffix("/invalid-id"))
        (status, type, detail) = try await problem(
            "POST", "/lists",
            ["id": "big", "sections": [["id": "s", "model": ["x": String(repeating: "a", count: 70_000)]]]])
        #expect(status == 413 && type.hasSuffix("/model-too-large"))
        (status, type, detail) = try await problem("GET", "/nowhere", nil)
        #expect(status == 404)
        let wrongMethod = try await server.request("DELETE", "/changes")
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.header("Allow") == "POST")
        (status, type, detail) = try await problem(
            "POST", "/lists", "<xml/>", headers: ["Content-Type": "application/xml"])
        #expect(status == 415)
        (status, type, detail) = try await problem("GET", "/lists/groceries/changes?since=abc", nil)
        #expect(status == 400 && detail.contains("since"))
        (status, type, detail) = try await problem("GET", "/lists/groceries/changes?since=1&timeout=301", nil)
        #expect(status == 400 && detail.contains("timeout"))

        // Nothing above changed the list.
        #expect(try await snapshotSections(server, "groceries").version == 1)
    }

    @Test func tokensGuardReadsAndWrites() async throws {
        let server = try await ListdServer(environment: ["LISTD_WRITE_TOKEN": "w-token", "LISTD_READ_TOKEN": "r-token"])
        defer { server.stop() }
        #expect(try await server.get("/healthz").status == 200)
        let anonymous = try await server.get("/lists")
        #expect(anonymous.status == 401)
        #expect(anonymous.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        #expect(try await server.get("/lists", headers: ["Authorization": "Bearer wrong"]).status == 401)
        #expect(try await server.get("/lists", headers: ["Authorization": "Bearer r-token"]).status == 200)
        #expect(
            try await server.request("POST", "/lists", body: ["id": "x"], headers: ["Authorization": "Bearer r-token"])
                .status == 403)
        #expect(
            try await server.request("POST", "/lists", body: ["id": "x"], headers: ["Authorization": "Bearer w-token"])
                .status == 201)
        #expect(!server.logText.contains("w-token") && !server.logText.contains("r-token"))
    }

    @Test func refusesToListenBeyondLoopbackWithoutAToken() async throws {
        let result = try await ListdBinary.run(
            [
                "serve", "--host", "0.0.0.0", "--port", "0", "--db", "/nonexistent/never-created.sqlite",
                "--migrations", ListdServer.migrations.path,
            ], stderr: true)
        #expect(result.status != 0)
        #expect(result.output.contains("without a token"))
    }

    @Test func metricsAreInPrometheusTextFormat() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        _ = try await server.request("POST", "/lists", body: Self.groceries)
        _ = try await server.get("/lists/groceries")
        let metrics = try await server.get("/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.header("Content-Type")?.hasPrefix("text/plain") == true)
        #expect(metrics.text.contains(#"listd_http_requests_total{route="/lists",method="POST",status="201"} 1"#))
        #expect(metrics.text.contains("# TYPE listd_http_request_duration_seconds histogram"))
        #expect(metrics.text.contains("listd_open_connections "))
        #expect(metrics.text.contains("listd_parked_waiters 0"))
        #expect(metrics.text.contains("listd_store_commits_total "))
        #expect(metrics.text.contains("# TYPE listd_store_group_commit_writes histogram"))
        #expect(metrics.text.contains("listd_store_group_commit_writes_count "))
    }
}

/// The current snapshot of a list as diff sections, with its version.
func snapshotSections(_ server: ListdServer, _ list: String) async throws -> (
    sections: ChangeReplay.Sections, version: Int
) {
    let reply = try await server.get("/lists/\(list)")
    guard reply.status == 200 else {
        throw ServerFailure(description: "GET /lists/\(list): \(reply.status) \(reply.text)")
    }
    let value = try JSONValue(parsing: Array(reply.body), limits: JSONLimits(maxDepth: 64, maxBytes: .max))
    return (try ChangeReplay.sections(ofSnapshot: value), value["version"]?.intValue ?? -1)
}
