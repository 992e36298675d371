import JSON
import SectionDiff

/// One answer of the change stream (`GET /lists/{list}/changes`, a list's
/// entry in `POST /changes`, or a whole-list write), decoded but not applied.
///
/// The stages stay in wire form until they are applied, because an update's
/// id comes from the state the stage applies to.
public struct ChangeAnswer: Sendable, Equatable {
    /// The list answered for.
    public var list: String
    /// The list's epoch at `to`.
    public var epoch: String
    /// The version the stages start from.
    public var from: Int64
    /// The version the answer brings the client to.
    public var to: Int64
    /// The whole snapshot at `to` when the answer is a reset, else `nil`.
    public var snapshot: ListState?
    /// The stages in wire form (API.md's Stage objects).
    public var stages: [JSONValue]
    /// The answer as it came, for tools that print it (`listd watch --format json`).
    public var raw: JSONValue

    /// A reset to `state` from version `from`, made by the client itself (a `PUT`
    /// that created its list answers with the snapshot, which is this).
    public init(resetFrom from: Int64, to state: ListState) {
        list = state.id
        epoch = state.epoch
        self.from = from
        to = state.version
        snapshot = state
        stages = []
        raw = .object([
            "list": .string(state.id), "epoch": .string(state.epoch), "from": .number(JSONNumber(from)),
            "to": .number(JSONNumber(state.version)), "reset": true, "stages": [], "snapshot": state.json,
        ])
    }

    /// Whether the answer replaces the client's data with `snapshot`.
    public var isReset: Bool { snapshot != nil }

    /// Decodes a change answer body, the inverse of ``JSON/JSONWriter/stagedAnswer(list:epoch:from:to:stages:)``,
    /// ``JSON/JSONWriter/unchangedAnswer(list:epoch:version:)`` and ``JSON/JSONWriter/resetAnswer(from:id:name:epoch:version:sections:)``.
    public init(json: JSONValue) throws(WireError) {
        guard let list = json["list"]?.stringValue, let epoch = json["epoch"]?.stringValue,
            let from = json["from"]?.int64Value, let to = json["to"]?.int64Value
        else {
            throw WireError("a change answer needs list, epoch, from and to: \(json.canonicalText.prefix(200))")
        }
        self.list = list
        self.epoch = epoch
        self.from = from
        self.to = to
        raw = json
        if json["reset"]?.boolValue == true {
            guard let snapshot = json["snapshot"] else { throw WireError("a reset answer needs a snapshot") }
            self.snapshot = try ListState(json: snapshot)
            stages = []
        } else {
            snapshot = nil
            guard let stages = json["stages"]?.arrayValue else { throw WireError("a change answer needs stages") }
            self.stages = stages
        }
    }

    /// Applies the stages one by one to `state`, checking each with SectionDiff.
    ///
    /// Returns each stage with the sections after it; the last one is the state at `to`.
    /// Throws when `state` is not at `from` or a stage does not apply; the caller refetches.
    ///
    /// - Complexity: O(stages × (sections + items)).
    public func applied(to state: ListState) throws(WireError) -> [AppliedStage] {
        guard state.version == from, state.id == list else {
            throw WireError("the answer goes from \(list)@\(from), the state is \(state.id)@\(state.version)")
        }
        var sections = state.sections
        var result: [AppliedStage] = []
        result.reserveCapacity(stages.count)
        for (index, wire) in stages.enumerated() {
            let stage = try WireDecoding.stage(wire, before: sections)
            do {
                sections = try stage.apply(to: sections)
            } catch {
                throw WireError("stage \(index) of \(list) \(from)→\(to) does not apply: \(error)")
            }
            result.append(AppliedStage(stage: stage, sections: sections))
        }
        return result
    }
}

extension ChangeAnswer {
    /// Decodes the answer of `POST /changes` (``JSON/JSONWriter/manyListsAnswer(_:deleted:)``):
    /// each list that moved on with its answer, `nil` for a list that was deleted.
    public static func manyLists(json: JSONValue) throws(WireError) -> [String: ChangeAnswer?] {
        guard let object = json["lists"]?.objectValue else { throw WireError("POST /changes: no lists object") }
        var result: [String: ChangeAnswer?] = [:]
        for (list, value) in object {
            result[list] = value["deleted"]?.boolValue == true ? .some(nil) : try ChangeAnswer(json: value)
        }
        return result
    }
}

/// A stage together with the sections after it: what a table view needs to
/// run one `performBatchUpdates` (the stage) and set its data source (the sections).
public struct AppliedStage: Sendable, Equatable {
    /// The batch of deletes, inserts, moves and updates.
    public var stage: ListStage
    /// The sections once the stage is applied.
    public var sections: ListSections

    /// Creates an applied stage.
    public init(stage: ListStage, sections: ListSections) {
        self.stage = stage
        self.sections = sections
    }
}
