import HTTP
import JSON
import ListStore
import ListWire
import ListdTestSupport
import Testing

@testable import ListAPI

/// `.` and `..` are refused as ids: no URL path can name them.
@Suite(.serialized) struct DotSegmentIdTests {
    static let createBody = #"{"id":"l","name":"L","sections":[{"id":"s","model":{},"items":[{"id":"a","model":1}]}]}"#

    @Test(arguments: [".", ".."])
    func dotSegmentIdsAreRefusedForListsSectionsAndItems(_ id: String) async throws {
        let app = try await InProcessService.make()
        var bodies = [
            ("POST /lists", HTTPMethod.post, "/lists", #"{"id":"\#(id)"}"#),
            (
                "POST /lists section", .post, "/lists",
                #"{"id":"m","sections":[{"id":"\#(id)","model":{}}]}"#
            ),
            (
                "POST /lists item", .post, "/lists",
                #"{"id":"m","sections":[{"id":"s","model":{},"items":[{"id":"\#(id)","model":{}}]}]}"#
            ),
        ]
        _ = try await app.json(.post, "/lists", json: Self.createBody, status: 201)
        bodies += [
            ("POST section", .post, "/lists/l/sections", #"{"id":"\#(id)"}"#),
            ("POST item", .post, "/lists/l/sections/s/items", #"{"id":"\#(id)"}"#),
            (
                "PATCH insertItem", .patch, "/lists/l",
                #"{"ops":[{"op":"insertItem","section":"s","item":{"id":"\#(id)","model":{}}}]}"#
            ),
            (
                "PATCH insertSection", .patch, "/lists/l",
                #"{"ops":[{"op":"insertSection","section":{"id":"\#(id)","model":{}}}]}"#
            ),
            ("PUT list", .put, "/lists/l", #"{"sections":[{"id":"\#(id)","model":{}}]}"#),
        ]
        for (what, method, target, body) in bodies {
            let (status, type, detail) = try problem(try await app.send(method, target, json: body).response())
            #expect(status == 400, "\(what): \(detail)")
            #expect(type == "https://listd.dev/problems/invalid-id", "\(what): \(type)")
            #expect(detail.contains("\"\(id)\""), "\(what): \(detail)")
        }
        let after = try ListState(json: try await app.json(.get, "/lists/l"))
        #expect(after.version == 1)
        #expect(after.sections.map(\.model.id) == ["s"])
        await app.close()
    }
}
