import HTTP
import JSON
import ListModel
import ListStore
import ListWire
import ListdTestSupport
import Testing

@testable import ListAPI

/// The head cache (``CommitRouter``) and the ``SnapshotCache`` are kept by
/// the commit pipeline, not by the routes: a write that never went through a
/// route (made on the store directly, as another instance's would be) moves
/// them just the same, before the store answers it.
@Suite(.serialized) struct CacheCoherenceTests {
    static let list = Identifier("l")
    static let section = Identifier("s")

    @Test func aCreateAndAWriteThroughTheStoreAloneMoveTheHeadBeforeTheyAreAnswered() async throws {
        let app = try await InProcessService.make()
        let snapshot = try await app.store.createList(
            id: Self.list, name: "L", sections: [NewSection(id: Self.section)], indexes: [])
        #expect(app.service.router.head(of: Self.list) == snapshot.head)
        let result = try await app.store.apply(
            [.insertItem(section: Self.section, item: NewItem(id: Identifier("a")), at: nil)], to: Self.list,
            expectedVersion: nil)
        #expect(app.service.router.head(of: Self.list)?.version == result.version)
        // A long-poll from before the write is answered at once, with no head read from the store.
        let answer = try ChangeAnswer(json: try await app.json(.get, "/lists/l/changes?since=1&timeout=30"))
        #expect(answer.from == 1 && answer.to == 2)
        #expect(app.gated.calls(.head) == 0)
        #expect(app.service.parkedWaiters == 0)
        await app.close()
    }

    @Test func aCreatedListIsReadFromTheCacheAndItsDeletionThroughTheStoreAloneDropsIt() async throws {
        let app = try await InProcessService.make()
        _ = try await app.json(.post, "/lists", json: #"{"id":"l","sections":[{"id":"s"}]}"#, status: 201)
        _ = try await app.json(.get, "/lists/l")
        #expect(app.gated.calls(.snapshot) == 0, "the created list's snapshot was kept")
        let head = try #require(app.service.router.head(of: Self.list))
        try await app.store.deleteList(Self.list, expectedVersion: nil)
        #expect(app.service.router.head(of: Self.list) == nil)
        // A read that began before the deletion may note the old head after
        // it: the deleted list's snapshot must be gone from the cache all the same.
        app.service.router.note(head)
        _ = try await app.json(.get, "/lists/l", status: 404)
        #expect(app.gated.calls(.snapshot) == 1)
        await app.close()
    }

    @Test func aDeleteAnsweredByTheRouteLeavesNothingToServe() async throws {
        let app = try await InProcessService.make()
        _ = try await app.json(.post, "/lists", json: #"{"id":"l","sections":[{"id":"s"}]}"#, status: 201)
        _ = try await app.json(.get, "/lists/l")
        let deleted = try await app.send(.delete, "/lists/l").response()
        #expect(deleted.status.code == 204)
        _ = try await app.json(.get, "/lists/l", status: 404)
        _ = try await app.json(.get, "/lists/l/changes?since=1&timeout=0", status: 404)
        await app.close()
    }
}
