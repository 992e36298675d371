import JSON
import SectionDiff

/// The wire forms of API.md, each written once, for the server (which splices
/// stored canonical model text) and the clients (which send the same shapes).
///
/// Models are canonical JSON text already, so they are spliced in as they are,
/// never decoded and encoded again: a snapshot of 100,000 items is one pass of
/// byte copies. The generic writers are `@inlinable` so that the server's call
/// sites are specialized for its stored snapshot types.
extension JSONWriter {
    // MARK: - Snapshots

    /// `{"id":…,"model":…}`: an item, or a diff entry written as one.
    @inlinable
    public mutating func item(_ item: some WireEntry) {
        beginObject()
        key("id")
        string(item.wireID)
        key("model")
        raw(item.wireModelText)
        endObject()
    }

    /// `{"id":…,"model":…,"items":[…]}`
    @inlinable
    public mutating func section(_ section: some WireSection) {
        beginObject()
        key("id")
        string(section.wireID)
        key("model")
        raw(section.wireModelText)
        key("items")
        beginArray()
        for item in section.wireItems { self.item(item) }
        endArray()
        endObject()
    }

    /// The whole snapshot (`GET /lists/{list}`): `{"id","name","epoch","version","sections"}`.
    @inlinable
    public mutating func snapshot<Sections: Sequence>(
        id: String, name: String, epoch: String, version: Int64, sections: Sections
    ) where Sections.Element: WireSection {
        beginObject()
        key("id")
        string(id)
        key("name")
        string(name)
        key("epoch")
        string(epoch)
        key("version")
        int64(version)
        key("sections")
        self.sections(sections)
        endObject()
    }

    /// `[section, …]`
    @inlinable
    public mutating func sections<Sections: Sequence>(_ sections: Sections) where Sections.Element: WireSection {
        beginArray()
        for section in sections { self.section(section) }
        endArray()
    }

    /// A client's state as a snapshot.
    public mutating func snapshot(_ state: ListState) {
        snapshot(id: state.id, name: state.name, epoch: state.epoch, version: state.version, sections: state.sections)
    }

    // MARK: - Change answers

    /// The members every change answer starts with: `"list","epoch","from","to"`.
    public mutating func changeAnswerHead(list: String, epoch: String, from: Int64, to: Int64) {
        key("list")
        string(list)
        key("epoch")
        string(epoch)
        key("from")
        int64(from)
        key("to")
        int64(to)
    }

    /// The answer for a client that is up to date: `{"list","epoch","from","to","stages":[]}`, `to == from`.
    public mutating func unchangedAnswer(list: String, epoch: String, version: Int64) {
        beginObject()
        changeAnswerHead(list: list, epoch: epoch, from: version, to: version)
        key("stages")
        beginArray()
        endArray()
        endObject()
    }

    /// A staged answer: `{"list","epoch","from","to","stages":[…]}`.
    public mutating func stagedAnswer(list: String, epoch: String, from: Int64, to: Int64, stages: ListChangeset) {
        beginObject()
        changeAnswerHead(list: list, epoch: epoch, from: from, to: to)
        self.stages(stages)
        endObject()
    }

    /// A reset: `{"list","epoch","from","to","reset":true,"stages":[],"snapshot":{…}}`,
    /// the whole snapshot at `version` for a client that cannot be brought there by stages.
    @inlinable
    public mutating func resetAnswer<Sections: Sequence>(
        from: Int64, id: String, name: String, epoch: String, version: Int64, sections: Sections
    ) where Sections.Element: WireSection {
        beginObject()
        changeAnswerHead(list: id, epoch: epoch, from: from, to: version)
        key("reset")
        bool(true)
        key("stages")
        beginArray()
        endArray()
        key("snapshot")
        snapshot(id: id, name: name, epoch: epoch, version: version, sections: sections)
        endObject()
    }

    /// The answer of `POST /changes`: `{"lists":{"a":{answer},"b":{"list":"b","deleted":true}}}`,
    /// each answer's JSON (written by the functions above) spliced in as it is.
    public mutating func manyListsAnswer(
        _ answers: some Sequence<(list: String, json: [UInt8])>, deleted: some Sequence<String>
    ) {
        beginObject()
        key("lists")
        beginObject()
        for answer in answers {
            key(answer.list)
            raw(answer.json)
        }
        for list in deleted {
            key(list)
            beginObject()
            key("list")
            string(list)
            key("deleted")
            bool(true)
            endObject()
        }
        endObject()
        endObject()
    }

    // MARK: - Stages

    /// `[section, item]`
    public mutating func path(_ path: ElementPath) {
        beginArray()
        int(path.section)
        int(path.element)
        endArray()
    }

    /// `"stages":[…]`
    public mutating func stages(_ changeset: ListChangeset) {
        key("stages")
        beginArray()
        for stage in changeset.stages { self.stage(stage) }
        endArray()
    }

    /// One stage in the wire form of API.md; empty fields are left out.
    ///
    /// Updates carry a position and a model but no id: the id is the one at
    /// that position in the state the stage applies to (see ``WireDecoding/stage(_:before:)``).
    public mutating func stage(_ stage: ListStage) {
        beginObject()
        nonEmptyArray(.sectionDeleted, stage.sectionDeleted) { $0.int($1) }
        nonEmptyArray(.sectionInserted, stage.sectionInserted) { writer, insertion in
            writer.pair("at", { $0.int(insertion.at) }, "section", { $0.section(insertion.section) })
        }
        nonEmptyArray(.sectionUpdated, stage.sectionUpdated) { writer, update in
            writer.pair("at", { $0.int(update.at) }, "model", { $0.raw(update.model.model.text) })
        }
        nonEmptyArray(.sectionMoved, stage.sectionMoved) { writer, move in
            writer.pair("from", { $0.int(move.from) }, "to", { $0.int(move.to) })
        }
        nonEmptyArray(.itemDeleted, stage.itemDeleted) { $0.path($1) }
        nonEmptyArray(.itemInserted, stage.itemInserted) { writer, insertion in
            writer.pair("at", { $0.path(insertion.at) }, "item", { $0.item(insertion.item) })
        }
        nonEmptyArray(.itemUpdated, stage.itemUpdated) { writer, update in
            writer.pair("at", { $0.path(update.at) }, "model", { $0.raw(update.item.model.text) })
        }
        nonEmptyArray(.itemMoved, stage.itemMoved) { writer, move in
            writer.pair("from", { $0.path(move.from) }, "to", { $0.path(move.to) })
        }
        endObject()
    }

    /// `{"first":…,"second":…}`, each value written by its closure: the shape of every stage entry.
    mutating func pair(
        _ first: String, _ writeFirst: (inout JSONWriter) -> Void, _ second: String,
        _ writeSecond: (inout JSONWriter) -> Void
    ) {
        beginObject()
        key(first)
        writeFirst(&self)
        key(second)
        writeSecond(&self)
        endObject()
    }

    /// `"field":[…]`, each element written by `write`; nothing at all when `elements` is empty.
    mutating func nonEmptyArray<Element>(
        _ field: StageField, _ elements: [Element], _ write: (inout JSONWriter, Element) -> Void
    ) {
        if elements.isEmpty { return }
        key(field.rawValue)
        beginArray()
        for element in elements { write(&self, element) }
        endArray()
    }
}

/// The eight fields a stage may have, in the order they are written and applied.
public enum StageField: String, CaseIterable, Sendable {
    case sectionDeleted, sectionInserted, sectionUpdated, sectionMoved
    case itemDeleted, itemInserted, itemUpdated, itemMoved
}
