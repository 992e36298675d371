import JSON
import ListWire
import SectionDiff
import Testing

/// Replays change-stream answers onto snapshots with SectionDiff's `apply`,
/// decoding stages with ListWire as the Swift client does, so end-to-end tests can require that applying an
/// answer to the snapshot at `from` gives exactly the snapshot at `to`.
enum ChangeReplay {
    typealias Sections = [ArraySection<JSONEntry, JSONEntry>]

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// The sections of a snapshot body (`{"sections": [...]}`).
    static func sections(ofSnapshot snapshot: JSONValue) throws -> Sections {
        guard let sections = snapshot["sections"]?.arrayValue else {
            throw Failure(description: "no sections in \(snapshot.canonicalText.prefix(200))")
        }
        return try WireDecoding.sections(sections)
    }

    /// Applies one change answer to `state`: its stages in order, or its snapshot if it is a reset.
    static func apply(_ answer: JSONValue, to state: Sections) throws -> Sections {
        if answer["reset"]?.boolValue == true {
            guard let snapshot = answer["snapshot"] else { throw Failure(description: "reset without snapshot") }
            return try sections(ofSnapshot: snapshot)
        }
        guard let stages = answer["stages"]?.arrayValue else { throw Failure(description: "no stages") }
        var state = state
        for (index, stageValue) in stages.enumerated() {
            let stage = try WireDecoding.stage(stageValue, before: state)
            do {
                state = try stage.apply(to: state)
            } catch {
                throw Failure(description: "stage \(index) does not apply: \(error)")
            }
        }
        return state
    }

    /// How many of the answer's section updates share their stage with an item
    /// change in that section (which a client applying them as
    /// `reloadSections` would see UIKit reject); computed from the wire form alone.
    static func reloadConflicts(_ answer: JSONValue) -> Int {
        var conflicts = 0
        for stage in answer["stages"]?.arrayValue ?? [] {
            func ints(_ key: String) -> [Int] { (stage[key]?.arrayValue ?? []).compactMap(\.intValue) }
            func sections(_ key: String, _ field: String?) -> [Int] {
                (stage[key]?.arrayValue ?? []).compactMap { entry in
                    let path = field.map { entry[$0] } ?? entry
                    return path?[0]?.intValue
                }
            }
            let removed =
                (ints("sectionDeleted") + (stage["sectionMoved"]?.arrayValue ?? []).compactMap { $0["from"]?.intValue })
            let targets =
                ((stage["sectionInserted"]?.arrayValue ?? []).compactMap { $0["at"]?.intValue }
                + (stage["sectionMoved"]?.arrayValue ?? []).compactMap { $0["to"]?.intValue }).sorted()
            let before = Set(
                sections("itemDeleted", nil) + sections("itemUpdated", "at") + sections("itemMoved", "from"))
            let after = Set(sections("itemInserted", "at") + sections("itemMoved", "to"))
            for update in stage["sectionUpdated"]?.arrayValue ?? [] {
                guard let at = update["at"]?.intValue else { continue }
                var position = at - removed.filter { $0 < at }.count
                for target in targets where target <= position { position += 1 }
                if before.contains(at) || after.contains(position) { conflicts += 1 }
            }
        }
        return conflicts
    }
}
