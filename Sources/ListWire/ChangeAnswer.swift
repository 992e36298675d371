import JSON

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

    /// Whether the answer replaces the client's data with `snapshot`.
    public var isReset: Bool { snapshot != nil }

    /// Decodes a change answer body.
    public init(json: JSONValue) throws(ListClientError) {
        guard let list = json["list"]?.stringValue, let epoch = json["epoch"]?.stringValue,
            let from = json["from"]?.int64Value, let to = json["to"]?.int64Value
        else {
            throw .invalid("a change answer needs list, epoch, from and to: \(json.canonicalText.prefix(200))")
        }
        self.list = list
        self.epoch = epoch
        self.from = from
        self.to = to
        raw = json
        if json["reset"]?.boolValue == true {
            guard let snapshot = json["snapshot"] else { throw .invalid("a reset answer needs a snapshot") }
            self.snapshot = try ListState(json: snapshot)
            stages = []
        } else {
            snapshot = nil
            guard let stages = json["stages"]?.arrayValue else { throw .invalid("a change answer needs stages") }
            self.stages = stages
        }
    }

    /// Applies the stages one by one to `state`, checking each with SectionDiff.
    ///
    /// Returns each stage with the sections after it; the last one is the state at `to`.
    /// Throws when `state` is not at `from` or a stage does not apply; the caller refetches.
    ///
    /// - Complexity: O(stages × (sections + items)).
    public func applied(to state: ListState) throws(ListClientError) -> [AppliedStage] {
        guard state.version == from, state.id == list else {
            throw .invalid("the answer goes from \(list)@\(from), the state is \(state.id)@\(state.version)")
        }
        var sections = state.sections
        var result: [AppliedStage] = []
        result.reserveCapacity(stages.count)
        for (index, wire) in stages.enumerated() {
            let stage = try WireStage.stage(wire, before: sections)
            do {
                sections = try stage.apply(to: sections)
            } catch {
                throw .invalid("stage \(index) of \(list) \(from)→\(to) does not apply: \(error)")
            }
            result.append(AppliedStage(stage: stage, sections: sections))
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

/// What `follow(list:)` emits.
public enum FollowUpdate: Sendable, Equatable {
    /// The first snapshot: set the data source and reload.
    case snapshot(ListState)
    /// A change answer applied: animate each stage in order, then `state` is current.
    case changes(ListChange)
    /// The data was replaced (history too old, another epoch, or a stage that did
    /// not apply and was refetched): set the data source and reload without animation.
    case reset(ListState)
    /// The list was deleted on the server; the follow completes after this.
    case deleted(list: String)

    /// The state after this update (`nil` for `.deleted`).
    public var state: ListState? {
        switch self {
        case .snapshot(let state), .reset(let state): return state
        case .changes(let change): return change.state
        case .deleted: return nil
        }
    }
}

/// A change answer applied to the followed state.
public struct ListChange: Sendable, Equatable {
    /// The version the stages start from.
    public var from: Int64
    /// The sections at `from`, before the first stage (ids of deletes and move sources are found here).
    public var before: ListSections
    /// The stages, each with the sections after it.
    public var stages: [AppliedStage]
    /// The state at the answer's `to` version (the sections of the last stage).
    public var state: ListState
    /// The answer as it came from the server.
    public var answer: ChangeAnswer

    /// Creates a change.
    public init(from: Int64, before: ListSections, stages: [AppliedStage], state: ListState, answer: ChangeAnswer) {
        self.from = from
        self.before = before
        self.stages = stages
        self.state = state
        self.answer = answer
    }
}
