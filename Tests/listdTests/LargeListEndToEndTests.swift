import Foundation
import JSON
import ListdTestSupport
import SectionDiff
import Testing

/// Writes and change answers on a 100,000-item list through the real binary:
/// the list is created in one body (the default limits allow it), every write's
/// answer and a net answer over all of them replay to the served snapshot, and
/// an answer's size follows its change, not the list.
@Suite(.serialized) struct LargeListEndToEndTests {
    static let itemCount = 100_000
    static let unlimited = JSONLimits(maxDepth: 64, maxBytes: .max)

    @Test func writesAndAnswersOnA100kItemList() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        let items: [[String: Any]] = (0..<Self.itemCount).map { ["id": "i\($0)", "model": ["n": $0]] }
        let created = try await server.request(
            "POST", "/lists",
            body: ["id": "big", "sections": [["id": "s", "items": items], ["id": "t", "items": []]]],
            timeout: 120)
        #expect(created.status == 201, "\(created.text.prefix(600))")
        let initial = try await snapshotSections(server, "big")
        #expect(initial.sections.first?.items.count == Self.itemCount)

        let writes: [[[String: Any]]] = [
            [["op": "updateItem", "id": "i50000", "model": ["n": -1]]],
            [["op": "insertItem", "section": "s", "item": ["id": "new"], "at": 70_000]],
            [["op": "moveItem", "id": "i10", "to": 99_000]],
            [["op": "deleteItem", "id": "i99999"]],
            [["op": "moveItem", "id": "i20", "section": "t", "to": 0]],
            // A section update beside an item change in it: two stages.
            [
                ["op": "updateSection", "id": "s", "model": ["title": "S"]],
                ["op": "updateItem", "id": "i30", "model": [:]],
            ],
            (0..<50).map { ["op": "moveItem", "id": "i\(1000 + $0)", "to": 90_000 + $0] },
        ]
        var state = initial.sections
        for (number, ops) in writes.enumerated() {
            let reply = try await server.request("PATCH", "/lists/big", body: ["ops": ops])
            #expect(reply.status == 200, "write \(number): \(reply.text.prefix(300))")
            let answer = try JSONValue(parsing: Array(reply.body))
            #expect(answer["reset"] == nil, "write \(number)")
            #expect(ChangeReplay.reloadConflicts(answer) == 0, "write \(number)")
            #expect(reply.body.count < 300 * ops.count + 300, "write \(number): a \(reply.body.count)-byte answer")
            state = try ChangeReplay.apply(answer, to: state)
        }
        let current = try await snapshotSections(server, "big")
        #expect(state == current.sections, "the write answers replay to the served snapshot")
        #expect(current.version == 1 + writes.count)

        let net = try await server.get("/lists/big/changes?since=1")
        let answer = try JSONValue(parsing: Array(net.body))
        #expect(answer["reset"] == nil && answer["to"]?.intValue == current.version)
        #expect(try ChangeReplay.apply(answer, to: initial.sections) == current.sections, "the net answer replays")
        #expect(ChangeReplay.reloadConflicts(answer) == 0)
        #expect(net.body.count < 20_000, "a \(net.body.count)-byte net answer for 57 touched items")

        // Opting into a reset for large changes.
        let capped = try JSONValue(
            parsing: Array(try await server.get("/lists/big/changes?since=1&maxChanges=3").body), limits: Self.unlimited
        )
        #expect(capped["reset"]?.boolValue == true)
        #expect(try ChangeReplay.apply(capped, to: []) == current.sections)
        let small = try JSONValue(
            parsing: Array(
                try await server.get("/lists/big/changes?since=\(current.version - 2)&maxChanges=1000").body))
        #expect(small["reset"] == nil)
        #expect(try await server.get("/lists/big/changes?since=1&maxChanges=-1").status == 400)
    }
}
