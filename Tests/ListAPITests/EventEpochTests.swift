import HTTP
import JSON
import ListStore
import ListWire
import ListdTestSupport
import Testing

@testable import ListAPI

/// An epoch a client sends back is validated before it can reach an event
/// id: a line break in it would inject lines into the client's own stream.
@Suite(.serialized) struct EventEpochTests {
    @Test(arguments: [
        "/events?lists=a:0,b:X%0Aevent%0A:0",
        "/events?lists=a:0,b:X%0D:0",
        "/events?lists=a:e%20v:0",
        "/lists/a/events?since=0&epoch=X%0Aevent:%20reset%0A",
        "/lists/a/changes?since=1&timeout=0&epoch=X%0AY",
    ])
    func anEpochWithLineBreaksOrOddCharactersIsRefused(_ target: String) async throws {
        let app = try await InProcessService.make()
        _ = try await app.json(.post, "/lists", json: #"{"id":"a"}"#, status: 201)
        _ = try await app.json(.post, "/lists", json: #"{"id":"b"}"#, status: 201)
        let exchange = app.send(.get, target)
        try await waitUntil("\(target) is answered or streams") {
            exchange.answered != nil || exchange.streamHead != nil
        }
        guard exchange.streamHead == nil else {
            Issue.record("\(target) opened a stream")
            app.service.shutdown()
            await app.close()
            return
        }
        let response = try await exchange.response()
        let (status, type, detail) = try problem(response)
        #expect(status == 400, "\(target): \(detail)")
        #expect(type == "https://listd.dev/problems/invalid-parameter")
        #expect(detail.contains("epoch"), "\(detail)")
        #expect(!detail.contains("\n") && !detail.contains("\r"), "\(detail)")
        app.service.shutdown()
        await app.close()
    }

    @Test func anEventIDWithABadEpochIsRefused() async throws {
        let app = try await InProcessService.make()
        _ = try await app.json(.post, "/lists", json: #"{"id":"a"}"#, status: 201)
        var headers = HTTPHeaders()
        headers.add(name: "Last-Event-ID", value: "a:e\u{1}x:0")
        let exchange = app.send(.get, "/lists/a/events", headers: headers)
        try await waitUntil("answered or streams") { exchange.answered != nil || exchange.streamHead != nil }
        guard exchange.streamHead == nil else {
            Issue.record("a Last-Event-ID with a control character opened a stream")
            app.service.shutdown()
            await app.close()
            return
        }
        let (status, _, detail) = try problem(try await exchange.response())
        #expect(status == 400, "\(detail)")
        app.service.shutdown()
        await app.close()
    }

    @Test func aPostChangesEpochWithALineBreakIsRefused() async throws {
        let app = try await InProcessService.make()
        _ = try await app.json(.post, "/lists", json: #"{"id":"a"}"#, status: 201)
        let response = try await app.send(
            .post, "/changes", json: #"{"lists":{"a":1},"epochs":{"a":"x\ny"},"timeout":0}"#
        ).response()
        let (status, _, detail) = try problem(response)
        #expect(status == 400, "\(detail)")
        #expect(detail.contains("epoch"), "\(detail)")
        await app.close()
    }
}
