import HTTP
import JSON
import ListStore
import ListWire
import ListdTestSupport
import Testing

@testable import ListAPI

/// Every route that answers with a change answer builds its response with
/// ``ChangeAnswerResponse``: the same status, fields and body form.
@Suite(.serialized) struct ChangeAnswerResponseTests {
    static let createBody = #"{"id":"l","name":"L","sections":[{"id":"s","model":{},"items":[{"id":"a","model":1}]}]}"#

    static func insert(_ item: String) -> String {
        #"{"ops":[{"op":"insertItem","section":"s","item":{"id":"\#(item)","model":0}}]}"#
    }

    /// The fields every change answer has; `etag` only a write's.
    static func expectChangeAnswer(_ response: Response, etag: String?, _ what: String) throws {
        #expect(response.status.code == 200, "\(what)")
        #expect(response.headers["Content-Type"] == "application/json", "\(what)")
        #expect(response.headers["Cache-Control"] == "no-store", "\(what)")
        #expect(response.headers["ETag"] == etag, "\(what)")
        #expect(response.body.last == UInt8(ascii: "\n"), "\(what)")
        _ = try JSONValue(parsing: response.body)
    }

    @Test func everyChangeAnswerHasOneForm() async throws {
        let app = try await InProcessService.make()
        let created = try ListState(json: try await app.json(.post, "/lists", json: Self.createBody, status: 201))
        let epoch = created.epoch

        let patched = try await app.send(.patch, "/lists/l", json: Self.insert("b")).response()
        try Self.expectChangeAnswer(patched, etag: "\"\(epoch)-2\"", "PATCH")
        let unchanged = try await app.send(.patch, "/lists/l", json: #"{"ops":[]}"#).response()
        try Self.expectChangeAnswer(unchanged, etag: "\"\(epoch)-2\"", "PATCH that changes nothing")
        let replaced = try await app.send(
            .put, "/lists/l", json: #"{"sections":[{"id":"s","model":{},"items":[{"id":"a","model":2}]}]}"#
        ).response()
        try Self.expectChangeAnswer(replaced, etag: "\"\(epoch)-3\"", "PUT")

        let atOnce = try await app.send(.get, "/lists/l/changes?since=1&timeout=30").response()
        try Self.expectChangeAnswer(atOnce, etag: nil, "long-poll answered at once")
        let empty = try await app.send(.get, "/lists/l/changes?since=3&timeout=0").response()
        try Self.expectChangeAnswer(empty, etag: nil, "long-poll with timeout 0")

        let parked = app.send(.get, "/lists/l/changes?since=3&timeout=30")
        let parkedPretty = app.send(.get, "/lists/l/changes?since=3&timeout=30&pretty")
        let many = app.send(.post, "/changes", json: #"{"lists":{"l":3},"timeout":30}"#)
        try await waitUntil("the polls are parked") { app.service.parkedWaiters == 3 }
        _ = try await app.json(.patch, "/lists/l", json: Self.insert("c"))
        let woken = try await parked.response()
        try Self.expectChangeAnswer(woken, etag: nil, "parked long-poll")
        let wokenPretty = try await parkedPretty.response()
        try Self.expectChangeAnswer(wokenPretty, etag: nil, "parked long-poll, pretty")
        #expect(wokenPretty.body != woken.body)
        #expect(try JSONValue(parsing: wokenPretty.body) == JSONValue(parsing: woken.body))
        try Self.expectChangeAnswer(try await many.response(), etag: nil, "POST /changes, parked")

        let manyAtOnce = try await app.send(.post, "/changes", json: #"{"lists":{"l":1}}"#).response()
        try Self.expectChangeAnswer(manyAtOnce, etag: nil, "POST /changes answered at once")
        await app.close()
    }
}
