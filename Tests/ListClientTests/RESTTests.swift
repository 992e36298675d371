import Foundation
import JSON
import ListClient
import ListdTestSupport
import Testing

/// Every REST route through ListClient against a real listd.
@Suite struct RESTTests {
    @Test func listsRoundTrip() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let client = server.client()
        let created = try await client.createList(id: "g", name: "Groceries", sections: RandomWriter.initialSections)
        #expect(created.version >= 1 && created.sections == RandomWriter.initialSections)
        let fetched = try await client.list("g")
        #expect(fetched == created)
        #expect(try await client.list("g", ifNoneMatch: fetched.etag) == nil)

        let patched = try await client.patchList(
            "g",
            [
                .insertItem(section: "b", item: NewItem(id: "new1", model: ["qty": 2]), at: 0),
                .moveSection(id: "c", to: 0),
            ],
            ifMatch: fetched.version)
        #expect(patched.from == fetched.version && patched.to == fetched.version + 1)
        let afterPatch = try await client.list("g")
        if !patched.isReset {
            let stages = try patched.applied(to: fetched)
            #expect(stages.last?.sections == afterPatch.sections)
        }
        let stale = await #expect(throws: ListClientError.self) {
            try await client.patchList("g", [.deleteItem(id: "a1")], ifMatch: fetched.version)
        }
        #expect(stale?.status == 412)

        let replaced = try await client.replaceList(
            "g", name: "G2", sections: Array(RandomWriter.initialSections.prefix(1)))
        #expect(replaced.to == afterPatch.version + 1)
        #expect(try await client.list("g").name == "G2")

        let other = try await client.createList(name: "no id")
        let page = try await client.lists(limit: 1)
        #expect(page.lists.count == 1 && page.next != nil)
        let rest = try await client.lists(after: page.next)
        #expect(Set((page.lists + rest.lists).map(\.id.rawValue)) == ["g", other.id])

        try await client.deleteList(other.id)
        let missing = await #expect(throws: ListClientError.self) { try await client.list(other.id) }
        #expect(
            missing?.status == 404 && missing?.slug == "unknown-list"
                && missing?.type?.hasPrefix("https://listd.dev/problems/") == true)
        #expect(try await client.isHealthy())
        #expect(try await client.metrics().contains("listd_parked_waiters"))
    }

    @Test func sectionAndItemRoutes() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let client = server.client()
        _ = try await client.createList(id: "s", name: "S", sections: RandomWriter.initialSections)
        _ = try await client.createSection(in: "s", ["id": "veg", "model": ["t": "V"]])
        #expect(try await client.section("veg", of: "s")["section"]?["id"]?.stringValue == "veg")
        _ = try await client.replaceSection("veg", of: "s", ["model": ["t": "Veg"]])
        _ = try await client.patchSection("veg", of: "s", ["model": ["t": "Vegetables"]])
        #expect(try await client.sections(of: "s")["sections"]?.arrayValue?.count == 4)
        _ = try await client.createItem(inSection: "veg", of: "s", ["id": "leek", "model": ["done": false]])
        #expect(try await client.items(inSection: "veg", of: "s").canonicalText.contains("leek"))
        #expect(try await client.item("leek", of: "s")["item"]?["id"]?.stringValue == "leek")
        _ = try await client.replaceItem("leek", of: "s", ["model": ["done": true]])
        _ = try await client.patchItem("leek", of: "s", ["model": ["done": false, "qty": 2]])
        let query = try await client.queryItems(of: "s", where: ["done:false"])
        #expect(query.canonicalText.contains("leek"))
        try await client.deleteItem("leek", of: "s")
        try await client.deleteSection("veg", of: "s")
        let state = try await client.list("s")
        #expect(state.sections.map(\.model.id) == ["a", "b", "c"])
        let bad = await #expect(throws: ListClientError.self) { try await client.item("nope", of: "s") }
        #expect(bad?.status == 404 && bad?.detail.isEmpty == false)
    }

    /// An answer larger than JSON's default 64 KiB limit (a list of 2,000
    /// items) is read: the client refused every list larger than 64 KiB.
    @Test func aListLargerThan64KiBIsRead() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let client = server.client()
        let items = (0..<2_000).map { index in
            JSONEntry(id: "item-\(index)", model: JSONText(#"{"n":\#(index),"title":"an item with a longer title"}"#))
        }
        let sections: ListSections = [.init(model: JSONEntry(id: "s", model: JSONText("{}")), items: items)]
        let created = try await client.createList(id: "big", name: "Big", sections: sections)
        #expect(created.sections == sections)
        let fetched = try await client.list("big")
        #expect(fetched.sections.first?.items.count == 2_000)
    }

    @Test func tokensAreSentAndRefusalsAreTyped() async throws {
        let server = try await TestServer(environment: ["LISTD_WRITE_TOKEN": "w-token-123"])
        defer { server.stop() }
        let anonymous = server.client()
        let refused = await #expect(throws: ListClientError.self) { try await anonymous.lists() }
        #expect(refused?.status == 401)
        let client = server.client(token: "w-token-123")
        _ = try await client.createList(id: "t", name: "T")
        #expect(try await client.lists().lists.map(\.id) == ["t"])
    }
}
