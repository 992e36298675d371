import HTTP
import JSON
import ListStore
import ListWire
import ListdTestSupport
import Testing

@testable import ListAPI

/// The element limit holds on every write, not only on whole-list bodies: a
/// section's items count, in a `PATCH` batch and in `POST /lists/{list}/sections`.
@Suite(.serialized) struct ElementLimitTests {
    static let createBody = #"{"id":"l","name":"L","sections":[{"id":"s","model":{},"items":[{"id":"a","model":1}]}]}"#

    /// A section of `count` items, as JSON.
    static func section(_ id: String, items count: Int) -> String {
        var text = #"{"id":"\#(id)","model":{},"items":["#
        text.reserveCapacity(count * 24 + 64)
        for index in 0..<count {
            if index > 0 { text += "," }
            text += #"{"id":"i\#(index)","model":0}"#
        }
        return text + "]}"
    }

    @Test(arguments: ["patch", "post"])
    func aSectionOverTheElementLimitIsRefusedAndNothingIsWritten(_ route: String) async throws {
        let app = try await InProcessService.make()
        _ = try await app.json(.post, "/lists", json: Self.createBody, status: 201)
        let section = Self.section("big", items: 300_000)
        let response =
            route == "patch"
            ? try await app.send(.patch, "/lists/l", json: #"{"ops":[{"op":"insertSection","section":\#(section)}]}"#)
                .response()
            : try await app.send(.post, "/lists/l/sections", json: section).response()
        let (status, type, detail) = try problem(response)
        #expect(status == 413, "\(detail)")
        #expect(type == "https://listd.dev/problems/limit-exceeded")
        #expect(detail.contains("\"big\""), "\(detail)")
        #expect(detail.contains("300000 items"), "\(detail)")
        #expect(detail.contains("250000"), "\(detail)")
        let after = try ListState(json: try await app.json(.get, "/lists/l"))
        #expect(after.version == 1)
        #expect(after.sections.map(\.model.id) == ["s"])
        #expect(after.itemCount == 1)
        await app.close()
    }

    @Test func aBatchOfSectionsOverTheElementLimitTogetherIsRefused() async throws {
        let app = try await InProcessService.make()
        _ = try await app.json(.post, "/lists", json: Self.createBody, status: 201)
        // Two sections of 130,000 items: each under the limit, together over it.
        let first = Self.section("x", items: 130_000)
        let second = Self.section("y", items: 130_000).replacingOccurrences(of: #""id":"i"#, with: #""id":"j"#)
        let body = #"{"ops":[{"op":"insertSection","section":\#(first)},{"op":"insertSection","section":\#(second)}]}"#
        let (status, _, detail) = try problem(try await app.send(.patch, "/lists/l", json: body).response())
        #expect(status == 413, "\(detail)")
        #expect(detail.contains("260002"), "\(detail)")
        #expect(try ListState(json: try await app.json(.get, "/lists/l")).version == 1)
        await app.close()
    }
}
