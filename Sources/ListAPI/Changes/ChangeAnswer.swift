import JSON
import ListStore
import SectionDiff

/// One computed answer to "what changed in `list` since `from`", serialized
/// once and shared by every waiter that asked the same question.
struct ChangeAnswer: Sendable {
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

    /// The answer for a client that is up to date: no stages, `to == from`.
    static func unchanged(_ head: ListHead, from: Int64) -> ChangeAnswer {
        var writer = JSONWriter(capacity: 128)
        writer.beginObject()
        writer.key("list")
        writer.string(head.id.rawValue)
        writer.key("epoch")
        writer.string(head.epoch)
        writer.key("from")
        writer.int64(from)
        writer.key("to")
        writer.int64(from)
        writer.key("stages")
        writer.beginArray()
        writer.endArray()
        writer.endObject()
        return ChangeAnswer(
            list: head.id, epoch: head.epoch, from: from, to: from, reset: false, stageCount: 0, json: writer.bytes)
    }

    /// A reset: the whole snapshot at `snapshot.version`, for a client whose
    /// version is outside the kept history, above the current one, or of another epoch.
    static func reset(_ snapshot: ListSnapshot, from: Int64) -> ChangeAnswer {
        var writer = JSONWriter(capacity: 256 + snapshot.itemCount * 64)
        writer.beginObject()
        writer.key("list")
        writer.string(snapshot.id.rawValue)
        writer.key("epoch")
        writer.string(snapshot.epoch)
        writer.key("from")
        writer.int64(from)
        writer.key("to")
        writer.int64(snapshot.version)
        writer.key("reset")
        writer.bool(true)
        writer.key("stages")
        writer.beginArray()
        writer.endArray()
        writer.key("snapshot")
        writer.snapshot(snapshot)
        writer.endObject()
        return ChangeAnswer(
            list: snapshot.id, epoch: snapshot.epoch, from: from, to: snapshot.version, reset: true, stageCount: 0,
            json: writer.bytes)
    }

    /// The net change from `old` to `new` as stages, or a reset when the
    /// stages would carry more than the snapshot itself.
    static func between(_ old: ListSnapshot, _ new: ListSnapshot) -> ChangeAnswer {
        let changeset = ListChangeset(from: old.diffSections, to: new.diffSections)
        if changeset.size.exceeds(snapshotSections: new.sections.count, items: new.itemCount) {
            return reset(new, from: old.version)
        }
        var writer = JSONWriter(capacity: 256)
        writer.beginObject()
        writer.key("list")
        writer.string(new.id.rawValue)
        writer.key("epoch")
        writer.string(new.epoch)
        writer.key("from")
        writer.int64(old.version)
        writer.key("to")
        writer.int64(new.version)
        writer.stages(changeset)
        writer.endObject()
        return ChangeAnswer(
            list: new.id, epoch: new.epoch, from: old.version, to: new.version, reset: false,
            stageCount: changeset.stages.count, json: writer.bytes)
    }
}
