import Foundation
import ListdTestSupport
import Testing

/// Item queries on a 100,000-item list through the real binary: paging by
/// cursor, a `where` scanned then served by a declared index (built with
/// progress in the log), `q` by a bounded scan, and the index routes' errors.
@Suite(.serialized) struct QueryEndToEndTests {
    static let sections = 10
    static let perSection = 10_000

    @Test func aHundredThousandItemList() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        let sections: [[String: Any]] = (0..<Self.sections).map { section in
            let items: [[String: Any]] = (0..<Self.perSection).map { index in
                let n = section * Self.perSection + index
                return ["id": "i\(n)", "model": ["k": n % 100, "name": "Item \(n)"]]
            }
            return ["id": "s\(section)", "items": items]
        }
        let created = try await server.request(
            "POST", "/lists", body: ["id": "big", "sections": sections], timeout: 120)
        #expect(created.status == 201, "\(created.text.prefix(300))")
        let total = Self.sections * Self.perSection

        func page(_ path: String) async throws -> (ids: [String], next: String?, plan: String?) {
            let reply = try await server.get(path)
            #expect(reply.status == 200, "\(path): \(reply.text.prefix(300))")
            let object = try reply.object()
            let ids = (object["items"] as? [[String: Any]])?.compactMap { $0["id"] as? String } ?? []
            return (ids, object["next"] as? String, reply.header("listd-query-plan"))
        }

        // Every item once, in order, a page of 1,000 at a time.
        var seen: [String] = []
        var cursor: String?
        repeat {
            let next = try await page("/lists/big/items?limit=1000" + (cursor.map { "&after=\($0)" } ?? ""))
            #expect(next.plan == "list-order")
            seen += next.ids
            cursor = next.next
        } while cursor != nil && seen.count <= total
        #expect(seen == (0..<total).map { "i\($0)" })

        // Unindexed: a bounded scan, and the answer says so.
        let scanned = try await page("/lists/big/items?where=k:7&limit=10")
        #expect(scanned.plan == "scan; no index matches")
        #expect(scanned.ids == (0..<10).map { "i\(7 + 100 * $0)" })

        // Declared on the existing items, with progress in the log.
        let declared = try await server.request("PUT", "/lists/big/indexes/k", timeout: 120)
        #expect(declared.status == 201, "\(declared.text)")
        #expect(try await server.request("PUT", "/lists/big/indexes/k").status == 200)
        #expect(server.logText.contains("indexing items"), "\(server.logText.suffix(2000))")
        #expect(server.logText.contains("100000"))
        let listed = try await server.get("/lists/big/indexes").object()
        #expect((listed["indexes"] as? [[String: Any]])?.compactMap { $0["path"] as? String } == ["k"])

        var matches: [String] = []
        cursor = nil
        repeat {
            let next = try await page("/lists/big/items?where=k:7.0&limit=100" + (cursor.map { "&after=\($0)" } ?? ""))
            #expect(next.plan == "index; path=k")
            matches += next.ids
            cursor = next.next
        } while cursor != nil && matches.count <= total
        #expect(matches == (0..<total / 100).map { "i\(7 + 100 * $0)" })

        // Maintained on write: an update moves an item into and out of the index.
        let patched = try await server.request(
            "PATCH", "/lists/big",
            body: [
                "ops": [
                    ["op": "updateItem", "id": "i8", "model": ["k": 7, "name": "now seven"]],
                    ["op": "updateItem", "id": "i7", "model": ["k": 70]],
                ]
            ])
        #expect(patched.status == 200)
        #expect(try await page("/lists/big/items?where=k:7&limit=2").ids == ["i8", "i107"])

        // q: a bounded scan; pages may be empty but the walk finds the item at the end.
        var found: [String] = []
        var pages = 0
        cursor = nil
        repeat {
            let next = try await page("/lists/big/items?q=ITEM%2099999" + (cursor.map { "&after=\($0)" } ?? ""))
            #expect(next.plan == "scan; no index matches")
            found += next.ids
            cursor = next.next
            pages += 1
        } while cursor != nil && pages < 100
        #expect(found == ["i99999"])

        // With the text index, the same q is one page, read through FTS5.
        let text = try await server.request("PUT", "/lists/big/text-index", timeout: 120)
        #expect(text.status == 201, "\(text.text)")
        let indexed = try await page("/lists/big/items?q=ITEM%2099999")
        #expect(indexed.plan == "text-index")
        #expect(indexed.ids == ["i99999"] && indexed.next == nil)
        let many = try await page("/lists/big/items?q=tem%2012&limit=5")
        #expect(many.plan == "text-index")
        #expect(many.ids == ["i12", "i120", "i121", "i122", "i123"])
        // Two characters have no trigram: the bounded scan answers.
        #expect(try await page("/lists/big/items?q=99&limit=1").plan == "scan; no index matches")

        // The routes' errors are problems that name what was sent.
        let bad = try await server.request("PUT", "/lists/big/indexes/a..b")
        #expect(bad.status == 400 && bad.header("Content-Type") == "application/problem+json")
        #expect(bad.text.contains("a..b"))
        #expect(try await server.request("PUT", "/lists/nope/indexes/k").status == 404)
        #expect(try await server.request("DELETE", "/lists/big/indexes/other").status == 404)
        #expect(try await server.request("DELETE", "/lists/big/indexes/k").status == 204)
        let after = try await server.get("/lists/big/indexes").object()
        #expect((after["indexes"] as? [[String: Any]])?.isEmpty == true)
        #expect(try await page("/lists/big/items?where=k:7&limit=1").plan == "scan; no index matches")
    }
}
