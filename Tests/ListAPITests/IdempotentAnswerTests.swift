import HTTP
import ListStore
import Testing

@testable import ListAPI

/// Writes whose answer is a function of the store call's result (the list
/// routes, and deleting a section or an item) keep that answer with the
/// commit, in the write's transaction: the service makes no second store
/// write to attach it, the record holds exactly the bytes sent, and a retry
/// replays them.
@Suite struct IdempotentAnswerTests {
    struct Case: Sendable, CustomStringConvertible {
        var method: HTTPMethod
        var target: String
        var body: String?
        var status: Int
        var description: String { "\(method) \(target)" }
    }

    static let keptWithTheCommit: [Case] = [
        Case(method: .post, target: "/lists", body: #"{"id":"new","sections":[{"id":"s"}]}"#, status: 201),
        Case(method: .put, target: "/lists/fresh", body: #"{"sections":[{"id":"s"}]}"#, status: 201),
        Case(
            method: .put, target: "/lists/l", body: #"{"sections":[{"id":"s","items":[{"id":"b"}]}]}"#, status: 200),
        Case(
            method: .patch, target: "/lists/l?pretty",
            body: #"{"ops":[{"op":"updateItem","id":"a","model":{"n":1}}]}"#, status: 200),
        Case(
            method: .patch, target: "/lists/l", body: #"{"ops":[{"op":"updateItem","id":"a","model":{}}]}"#, status: 200
        ),
        Case(method: .delete, target: "/lists/l/items/a", body: nil, status: 204),
        Case(method: .delete, target: "/lists/l/sections/s", body: nil, status: 204),
        Case(method: .delete, target: "/lists/l", body: nil, status: 204),
    ]

    @Test(arguments: keptWithTheCommit) func theAnswerIsKeptInTheWritesTransaction(_ write: Case) async throws {
        let service = try await InProcessService.make()
        defer { Task { await service.close() } }
        _ = try await service.json(
            .post, "/lists", json: #"{"id":"l","sections":[{"id":"s","items":[{"id":"a"}]}]}"#, status: 201)
        var headers = HTTPHeaders()
        headers.add(name: "Idempotency-Key", value: "key-1")
        let first = try await service.send(write.method, write.target, json: write.body, headers: headers).response()
        #expect(first.status.code == write.status, "\(String(decoding: first.body, as: UTF8.self))")
        #expect(service.gated.calls(.recordAnswer) == 0, "the answer was attached by a second write")

        let record = try #require(try await service.store.idempotencyRecord(caller: "open", key: "key-1"))
        let kept = try #require(record.answer, "the record has no answer")
        #expect(kept.status == first.status.code)
        #expect(kept.body == first.body)

        let retry = try await service.send(write.method, write.target, json: write.body, headers: headers).response()
        #expect(retry.status == first.status)
        #expect(retry.body == first.body)
        #expect(retry.headers["Idempotent-Replayed"] == "true")
        #expect(retry.headers["ETag"] == first.headers["ETag"])
        #expect(service.gated.calls(.recordAnswer) == 0)
    }

    /// An item write's answer reads the list after the commit: it is attached
    /// right after, by a second store write, and replayed the same.
    @Test func anItemWritesAnswerIsAttachedAfterTheCommit() async throws {
        let service = try await InProcessService.make()
        defer { Task { await service.close() } }
        _ = try await service.json(.post, "/lists", json: #"{"id":"l","sections":[{"id":"s"}]}"#, status: 201)
        var headers = HTTPHeaders()
        headers.add(name: "Idempotency-Key", value: "item-1")
        let body = #"{"id":"x","model":{"n":1}}"#
        let first = try await service.send(.post, "/lists/l/sections/s/items", json: body, headers: headers).response()
        #expect(first.status.code == 201)
        #expect(service.gated.calls(.recordAnswer) == 1)
        let retry = try await service.send(.post, "/lists/l/sections/s/items", json: body, headers: headers).response()
        #expect(retry.body == first.body)
        #expect(retry.headers["Idempotent-Replayed"] == "true")
    }
}
