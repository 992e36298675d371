import HTTP
import ListStore
import Testing

@testable import ListAPI

/// Every content write keeps its answer with the commit, in the write's
/// transaction (rendered on the writer from the write's result and, for a
/// section or an item, the rows it left): the service makes no second store
/// write to attach it, the record holds exactly the bytes sent, a retry
/// replays them, and they are what a read of the resource right after says.
@Suite struct IdempotentAnswerTests {
    struct Case: Sendable, CustomStringConvertible {
        var method: HTTPMethod
        var target: String
        var body: String?
        var status: Int
        /// The resource whose read right after must give the same body (a section or an item).
        var readBack: String? = nil
        /// Whether the write is answered with its change, which the record keeps
        /// instead of the rendered answer (``keepingChange(unchanged:_:)``).
        var keepsChange = false
        var description: String { "\(method) \(target)" }
    }

    static let keptWithTheCommit: [Case] = [
        Case(method: .post, target: "/lists", body: #"{"id":"new","sections":[{"id":"s"}]}"#, status: 201),
        Case(method: .put, target: "/lists/fresh", body: #"{"sections":[{"id":"s"}]}"#, status: 201),
        Case(
            method: .put, target: "/lists/l", body: #"{"sections":[{"id":"s","items":[{"id":"b"}]}]}"#, status: 200,
            keepsChange: true),
        Case(
            method: .patch, target: "/lists/l?pretty",
            body: #"{"ops":[{"op":"updateItem","id":"a","model":{"n":1}}]}"#, status: 200, keepsChange: true),
        Case(
            method: .patch, target: "/lists/l", body: #"{"ops":[{"op":"updateItem","id":"a","model":{}}]}"#, status: 200
        ),
        Case(
            method: .patch, target: "/lists/l",
            body:
                #"{"ops":[{"op":"moveItem","id":"b","section":"t","to":0},{"op":"insertSection","section":{"id":"w"}}]}"#,
            status: 200, keepsChange: true),
        Case(
            method: .post, target: "/lists/l/sections/s/items", body: #"{"id":"c","model":{"n":1},"at":0}"#,
            status: 201, readBack: "/lists/l/items/c"),
        Case(
            method: .put, target: "/lists/l/items/a", body: #"{"model":{"n":2}}"#, status: 200,
            readBack: "/lists/l/items/a"),
        Case(
            method: .put, target: "/lists/l/items/d", body: #"{"model":{},"section":"t"}"#, status: 201,
            readBack: "/lists/l/items/d"),
        Case(
            method: .patch, target: "/lists/l/items/a", body: #"{"section":"t","to":0}"#, status: 200,
            readBack: "/lists/l/items/a"),
        Case(
            method: .post, target: "/lists/l/sections", body: #"{"id":"u","items":[{"id":"e"}]}"#, status: 201,
            readBack: "/lists/l/sections/u"),
        Case(
            method: .put, target: "/lists/l/sections/t", body: #"{"model":{"k":1},"items":[{"id":"a"}]}"#, status: 200,
            readBack: "/lists/l/sections/t"),
        Case(
            method: .put, target: "/lists/l/sections/v", body: #"{"model":{}}"#, status: 201,
            readBack: "/lists/l/sections/v"),
        Case(
            method: .patch, target: "/lists/l/sections/t", body: #"{"to":0}"#, status: 200,
            readBack: "/lists/l/sections/t"),
        Case(method: .delete, target: "/lists/l/items/a", body: nil, status: 204),
        Case(method: .delete, target: "/lists/l/sections/s", body: nil, status: 204),
        Case(method: .delete, target: "/lists/l", body: nil, status: 204),
    ]

    @Test(arguments: keptWithTheCommit) func theAnswerIsKeptInTheWritesTransaction(_ write: Case) async throws {
        let service = try await InProcessService.make()
        defer { Task { await service.close() } }
        _ = try await service.json(
            .post, "/lists", json: #"{"id":"l","sections":[{"id":"s","items":[{"id":"a"},{"id":"b"}]},{"id":"t"}]}"#,
            status: 201)
        var headers = HTTPHeaders()
        headers.add(name: "Idempotency-Key", value: "key-1")
        let first = try await service.send(write.method, write.target, json: write.body, headers: headers).response()
        #expect(first.status.code == write.status, "\(String(decoding: first.body, as: UTF8.self))")
        #expect(service.gated.calls(.recordAnswer) == 0, "the answer was attached by a second write")

        let record = try #require(try await service.store.idempotencyRecord(caller: "open", key: "key-1"))
        let kept = try #require(record.answer, "the record has no answer")
        #expect(kept.status == first.status.code)
        if write.keepsChange {
            #expect(kept.change != nil && kept.body.isEmpty, "a write answered with its change keeps the change")
            let rendered = IdempotencyKeys.replay(kept, pretty: write.target.hasSuffix("?pretty"))
            #expect(rendered.body == first.body, "the kept change renders another answer")
            #expect(rendered.headers["ETag"] == first.headers["ETag"])
        } else {
            #expect(kept.change == nil)
            #expect(kept.body == first.body)
        }
        if let readBack = write.readBack {
            let read = try await service.send(.get, readBack).response()
            #expect(read.status.code == 200)
            #expect(
                String(decoding: read.body, as: UTF8.self) == String(decoding: first.body, as: UTF8.self),
                "the answer rendered inside the write differs from a read of the resource")
        }

        let retry = try await service.send(write.method, write.target, json: write.body, headers: headers).response()
        #expect(retry.status == first.status)
        #expect(retry.body == first.body)
        #expect(retry.headers["Idempotent-Replayed"] == "true")
        #expect(retry.headers["ETag"] == first.headers["ETag"])
    }

    /// Without a key too, a section or item write answers from the rows it
    /// left, read inside the write (O(log n) plus the answer), never by
    /// reading the whole list after the commit (O(n): on a 100,000-item list,
    /// every item write paid for the list).
    @Test(arguments: keptWithTheCommit.filter { $0.readBack != nil })
    func aSectionOrItemWriteWithoutAKeyReadsNoSnapshot(_ write: Case) async throws {
        let service = try await InProcessService.make()
        defer { Task { await service.close() } }
        _ = try await service.json(
            .post, "/lists",
            json: #"{"id":"l","sections":[{"id":"s","items":[{"id":"a"},{"id":"b"}]},{"id":"t"}]}"#, status: 201)
        let response = try await service.send(write.method, write.target, json: write.body).response()
        #expect(response.status.code == write.status, "\(String(decoding: response.body, as: UTF8.self))")
        #expect(service.gated.calls(.snapshotsAtVersions) == 0, "the answer read the list after the write")
        #expect(try await service.store.idempotencyRecord(caller: "open", key: "") == nil)
        if let readBack = write.readBack {
            let read = try await service.send(.get, readBack).response()
            #expect(String(decoding: read.body, as: UTF8.self) == String(decoding: response.body, as: UTF8.self))
        }
    }

    /// A write that changes nothing commits nothing to keep its answer
    /// with: the answer is attached by a second store write, and replayed the same.
    @Test func aNoOpsAnswerIsAttachedAfterwards() async throws {
        let service = try await InProcessService.make()
        defer { Task { await service.close() } }
        _ = try await service.json(
            .post, "/lists", json: #"{"id":"l","sections":[{"id":"s","items":[{"id":"x","model":{"n":1}}]}]}"#,
            status: 201)
        var headers = HTTPHeaders()
        headers.add(name: "Idempotency-Key", value: "noop-1")
        let body = #"{"model":{"n":1}}"#
        let first = try await service.send(.put, "/lists/l/items/x", json: body, headers: headers).response()
        #expect(first.status.code == 200)
        #expect(service.gated.calls(.recordAnswer) == 1)
        let retry = try await service.send(.put, "/lists/l/items/x", json: body, headers: headers).response()
        #expect(retry.body == first.body)
        #expect(retry.headers["Idempotent-Replayed"] == "true")
    }

    /// The fingerprint is the hex SHA-256 of "method LF target LF body":
    /// records kept by an earlier build must match a retry's after an
    /// upgrade, so its bytes are pinned (values from `printf … | sha256sum`).
    @Test(arguments: [
        (
            HTTPMethod.patch, "/lists/l?pretty", #"{"ops":[]}"#,
            "a6579416195a4469c77a5d3d4831efed69834466a1338fe103442299ce25d96a"
        ),
        (HTTPMethod.post, "/lists", "", "05010ca16ccd603bcb0a483e0663b338ffb8b41505e3a7c5c36b023eb792ed35"),
    ])
    func theFingerprintIsTheRequestsSHA256(method: HTTPMethod, target: String, body: String, digest: String) {
        let request = Request(
            head: RequestHead(method: method, target: target, headers: HTTPHeaders()), body: Array(body.utf8),
            remoteAddress: "test")
        #expect(IdempotencyKeys.fingerprint(of: request) == digest)
    }
}
