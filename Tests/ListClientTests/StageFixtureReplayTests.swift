import Foundation
import JSON
import ListClient
import Testing

/// Replays the cross-language fixture (Tests/Fixtures/stage-conformance.json,
/// written by ListAPITests/StageFixtureTests from the server's change
/// engine): the Swift client must turn every `before` into `after` with the
/// answer. The JavaScript client replays the same file (clients/js/listd.test.mjs).
@Suite struct StageFixtureReplayTests {
    static var fixtureURL: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/stage-conformance.json")
    }

    @Test func everyAnswerTurnsBeforeIntoAfter() throws {
        let text = try String(contentsOf: Self.fixtureURL, encoding: .utf8)
        let cases = try #require(
            try JSONValue(parsing: Array(text.utf8), limits: JSONLimits(maxBytes: 16 << 20))["cases"]?.arrayValue)
        #expect(cases.count >= 100)
        var staged = 0
        for (index, triple) in cases.enumerated() {
            let before = try ListState(json: try #require(triple["before"]))
            let after = try ListState(json: try #require(triple["after"]))
            let answer = try ChangeAnswer(json: try #require(triple["answer"]))
            let result: ListState
            if let snapshot = answer.snapshot {
                result = snapshot
            } else {
                let stages = try answer.applied(to: before)
                staged += 1
                result = ListState(
                    id: before.id, name: before.name, epoch: answer.epoch, version: answer.to,
                    sections: stages.last?.sections ?? before.sections)
            }
            #expect(result.sections == after.sections, "case \(index): the answer does not give the after snapshot")
            #expect(answer.to == after.version, "case \(index)")
        }
        #expect(staged >= cases.count / 2, "most cases should be stages, not resets")
    }
}
