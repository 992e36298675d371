import JSON
import SectionDiff
import Testing

/// Replays change-stream answers onto snapshots with SectionDiff's `apply`,
/// the way a client does, so end-to-end tests can require that applying an
/// answer to the snapshot at `from` gives exactly the snapshot at `to`.
enum ChangeReplay {
    typealias Sections = [ArraySection<JSONEntry, JSONEntry>]

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// The sections of a snapshot body (`{"sections": [...]}`).
    static func sections(ofSnapshot snapshot: JSONValue) throws -> Sections {
        guard let sections = snapshot["sections"]?.arrayValue else { throw Failure(description: "no sections in \(snapshot.canonicalText.prefix(200))") }
        return try sections.map(section)
    }

    static func section(_ value: JSONValue) throws -> ArraySection<JSONEntry, JSONEntry> {
        guard let id = value["id"]?.stringValue, let model = value["model"], let items = value["items"]?.arrayValue else {
            throw Failure(description: "bad section \(value.canonicalText.prefix(200))")
        }
        return ArraySection(model: JSONEntry(id: id, model: JSONText(model.canonicalText)), items: try items.map(entry))
    }

    static func entry(_ value: JSONValue) throws -> JSONEntry {
        guard let id = value["id"]?.stringValue, let model = value["model"] else {
            throw Failure(description: "bad item \(value.canonicalText.prefix(200))")
        }
        return JSONEntry(id: id, model: JSONText(model.canonicalText))
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
            let stage = try decodeStage(stageValue, before: state)
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
            let removed = (ints("sectionDeleted") + (stage["sectionMoved"]?.arrayValue ?? []).compactMap { $0["from"]?.intValue })
            let targets = ((stage["sectionInserted"]?.arrayValue ?? []).compactMap { $0["at"]?.intValue }
                + (stage["sectionMoved"]?.arrayValue ?? []).compactMap { $0["to"]?.intValue }).sorted()
            let before = Set(sections("itemDeleted", nil) + sections("itemUpdated", "at") + sections("itemMoved", "from"))
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

    /// A wire stage as SectionDiff's value; updates take their ids from `before`.
    static func decodeStage(_ value: JSONValue, before: Sections) throws -> Stage<JSONEntry, JSONEntry> {
        func ints(_ key: String) throws -> [Int] {
            try (value[key]?.arrayValue ?? []).map { element in
                guard let int = element.intValue else { throw Failure(description: "\(key): not an index") }
                return int
            }
        }
        func path(_ value: JSONValue?) throws -> ElementPath {
            guard let pair = value?.arrayValue, pair.count == 2, let section = pair[0].intValue, let item = pair[1].intValue else {
                throw Failure(description: "bad path \(value?.canonicalText ?? "nil")")
            }
            return ElementPath(element: item, section: section)
        }
        let sectionInserted = try (value["sectionInserted"]?.arrayValue ?? []).map { insertion in
            guard let at = insertion["at"]?.intValue, let section = insertion["section"] else { throw Failure(description: "bad sectionInserted") }
            return Stage<JSONEntry, JSONEntry>.SectionInsertion(at: at, section: try self.section(section))
        }
        let sectionUpdated = try (value["sectionUpdated"]?.arrayValue ?? []).map { update in
            guard let at = update["at"]?.intValue, before.indices.contains(at), let model = update["model"] else {
                throw Failure(description: "bad sectionUpdated \(update.canonicalText)")
            }
            return Stage<JSONEntry, JSONEntry>.SectionUpdate(
                at: at, model: JSONEntry(id: before[at].model.id, model: JSONText(model.canonicalText)))
        }
        let sectionMoved = try (value["sectionMoved"]?.arrayValue ?? []).map { move in
            guard let from = move["from"]?.intValue, let to = move["to"]?.intValue else { throw Failure(description: "bad sectionMoved") }
            return SectionMove(from: from, to: to)
        }
        let itemInserted = try (value["itemInserted"]?.arrayValue ?? []).map { insertion in
            Stage<JSONEntry, JSONEntry>.ItemInsertion(at: try path(insertion["at"]), item: try entry(insertion["item"] ?? .null))
        }
        let itemUpdated = try (value["itemUpdated"]?.arrayValue ?? []).map { update in
            let at = try path(update["at"])
            guard before.indices.contains(at.section), before[at.section].items.indices.contains(at.element),
                let model = update["model"]
            else { throw Failure(description: "bad itemUpdated \(update.canonicalText)") }
            return Stage<JSONEntry, JSONEntry>.ItemUpdate(
                at: at, item: JSONEntry(id: before[at.section].items[at.element].id, model: JSONText(model.canonicalText)))
        }
        let itemMoved = try (value["itemMoved"]?.arrayValue ?? []).map { move in
            ItemMove(from: try path(move["from"]), to: try path(move["to"]))
        }
        let known: Set<String> = [
            "sectionDeleted", "sectionInserted", "sectionUpdated", "sectionMoved",
            "itemDeleted", "itemInserted", "itemUpdated", "itemMoved",
        ]
        if let unknown = value.objectValue?.keys.first(where: { !known.contains($0) }) {
            throw Failure(description: "unknown stage field \(unknown)")
        }
        return Stage(
            sectionDeleted: try ints("sectionDeleted"), sectionInserted: sectionInserted, sectionUpdated: sectionUpdated,
            sectionMoved: sectionMoved, itemDeleted: try (value["itemDeleted"]?.arrayValue ?? []).map { try path($0) },
            itemInserted: itemInserted, itemUpdated: itemUpdated, itemMoved: itemMoved)
    }
}
