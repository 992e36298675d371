import JSON
import ListModel
import ListStore
import ListWire
import SectionDiff

/// One computed answer to "what changed in `list` since `from`", serialized
/// once (in ListWire's change-answer form) and shared by every waiter that
/// asked the same question. Clients decode it as ListWire's `ChangeAnswer`.
struct EncodedChangeAnswer: Sendable {
    /// The list answered for.
    var list: Identifier
    /// The list's epoch at `to`.
    var epoch: String
    /// The version the client held.
    var from: Int64
    /// The version the answer brings the client to.
    var to: Int64
    /// Whether the answer is a reset (the whole snapshot) rather than stages.
    var reset: Bool
    /// How many stages the answer holds.
    var stageCount: Int
    /// The compact JSON object, without a trailing newline.
    var json: [UInt8]
    /// How many sections and items the stages name: one per entry of every
    /// stage, plus the items inside inserted sections (what `maxChanges` weighs).
    var changeCount = 0
    /// Whether the answer is a view's (docs/API.md, "Views"), whose stream
    /// skips an answer without stages: a write that leaves a view alone wakes none of its followers.
    var ofView = false

    /// The answer for a client that is up to date: no stages, `to == from`.
    static func unchanged(_ head: ListHead, from: Int64) -> EncodedChangeAnswer {
        var writer = JSONWriter(capacity: 128)
        writer.unchangedAnswer(list: head.id.rawValue, epoch: head.epoch, version: from)
        return EncodedChangeAnswer(
            list: head.id, epoch: head.epoch, from: from, to: from, reset: false, stageCount: 0, json: writer.bytes)
    }

    /// No stages from `from` to `head.version`: a view the commits between left alone.
    static func unchanged(_ head: ListHead, from: Int64, to: Int64) -> EncodedChangeAnswer {
        guard from != to else { return unchanged(head, from: from) }
        return stages(ListChangeset(stages: []), list: head.id, epoch: head.epoch, from: from, to: to)
    }

    /// A reset: the whole snapshot at `snapshot.version`, for a client whose
    /// version is outside the kept history, above the current one, or of another epoch.
    static func reset(_ snapshot: ListSnapshot, from: Int64) -> EncodedChangeAnswer {
        var writer = JSONWriter(capacity: 256 + snapshot.itemCount * 64)
        writer.resetAnswer(
            from: from, id: snapshot.id.rawValue, name: snapshot.name, epoch: snapshot.epoch, version: snapshot.version,
            sections: snapshot.sections)
        return EncodedChangeAnswer(
            list: snapshot.id, epoch: snapshot.epoch, from: from, to: snapshot.version, reset: true, stageCount: 0,
            json: writer.bytes)
    }

    /// The net change from `old` to `new` as stages (a whole-snapshot diff, O(n)).
    static func between(_ old: ListSnapshot, _ new: ListSnapshot) -> EncodedChangeAnswer {
        let changeset = ListChangeset(from: old.diffSections, to: new.diffSections)
        return stages(changeset, list: new.id, epoch: new.epoch, from: old.version, to: new.version)
    }

    /// The net change a store described by what it touched; costs what the change holds.
    static func change(_ change: NetChange) -> EncodedChangeAnswer {
        let changeset = ListChangeset(condensedFrom: change.old, to: change.new)
        return stages(changeset, list: change.list, epoch: change.epoch, from: change.from, to: change.to)
    }

    static func stages(_ changeset: ListChangeset, list: Identifier, epoch: String, from: Int64, to: Int64)
        -> EncodedChangeAnswer
    {
        var writer = JSONWriter(capacity: 256)
        writer.stagedAnswer(list: list.rawValue, epoch: epoch, from: from, to: to, stages: changeset)
        var count = 0
        for stage in changeset.stages {
            count += stage.operationCount
            for insertion in stage.sectionInserted { count += insertion.section.items.count }
        }
        return EncodedChangeAnswer(
            list: list, epoch: epoch, from: from, to: to, reset: false, stageCount: changeset.stages.count,
            json: writer.bytes, changeCount: count)
    }
}
