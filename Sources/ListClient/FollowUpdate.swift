import ListWire

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
