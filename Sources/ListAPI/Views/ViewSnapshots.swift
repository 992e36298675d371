import JSON
import ListModel
import ListStore
import ListView
import ListWire
import SectionDiff

/// A view of a list snapshot, in the diff engine's and the wire's shapes.
///
/// For now every view is computed from whole snapshots: the view's sections
/// from the list's (``ListView``'s `evaluate`, O(n log n)), and a view's
/// change between two versions as the whole-snapshot diff of its two views
/// (O(n)), with the list's snapshot at the earlier version read in the same
/// transaction as the current one (``Store/snapshots(of:at:)``). Correct by
/// construction and shared per question by ``ChangeComputer``; incremental
/// maintenance (a cost that grows with the change, not the list) is the
/// next step (issue 22).
enum ViewSnapshots {
    /// The view's sections of `snapshot`: with `group`, one section per group
    /// value (its id the value's canonical JSON text); else the list's sections.
    static func sections(of snapshot: ListSnapshot, _ view: ViewSpec) throws(StoreError) -> ListSections {
        let source = snapshot.sections.map { section in
            SourceSection(
                id: section.id, model: section.model,
                items: section.items.map { ViewItem(id: $0.id, model: $0.model) })
        }
        let evaluated: [ViewSection]
        do {
            evaluated = try view.evaluate(source)
        } catch {
            throw StoreError(.invalidModel, "list \"\(snapshot.id)\": a stored model does not parse: \(error.detail)")
        }
        return evaluated.map { section in
            ArraySection(
                model: JSONEntry(id: section.id, model: JSONText(section.model.canonicalText)),
                items: section.items.map { JSONEntry(id: $0.id.rawValue, model: JSONText($0.model.canonicalText)) })
        }
    }

    /// The view's snapshot body of a live view's state.
    static func body(of state: ViewState) -> [UInt8] {
        let sections = state.viewSections
        var writer = JSONWriter(capacity: 256 + sections.reduce(0) { $0 + $1.items.count } * 64)
        writer.snapshot(
            id: state.head.id.rawValue, name: state.name, epoch: state.head.epoch, version: state.head.version,
            sections: sections)
        var bytes = writer.bytes
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// The view's snapshot body: the list's shape (`id`, `name`, `epoch`,
    /// `version`, `sections`) with the view's sections, compact, with a trailing newline.
    static func body(of snapshot: ListSnapshot, _ sections: ListSections) -> [UInt8] {
        var writer = JSONWriter(capacity: 256 + sections.reduce(0) { $0 + $1.items.count } * 64)
        writer.snapshot(
            id: snapshot.id.rawValue, name: snapshot.name, epoch: snapshot.epoch, version: snapshot.version,
            sections: sections)
        var bytes = writer.bytes
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}

extension EncodedChangeAnswer {
    /// A view's reset: its whole snapshot at its state's version.
    static func reset(_ state: ViewState, from: Int64) -> EncodedChangeAnswer {
        let sections = state.viewSections
        var writer = JSONWriter(capacity: 256 + sections.reduce(0) { $0 + $1.items.count } * 64)
        writer.resetAnswer(
            from: from, id: state.head.id.rawValue, name: state.name, epoch: state.head.epoch,
            version: state.head.version, sections: sections)
        return EncodedChangeAnswer(
            list: state.head.id, epoch: state.head.epoch, from: from, to: state.head.version, reset: true,
            stageCount: 0, json: writer.bytes, ofView: true)
    }

    /// A view's reset: its whole snapshot at `snapshot.version`.
    static func reset(_ snapshot: ListSnapshot, view sections: ListSections, from: Int64) -> EncodedChangeAnswer {
        var writer = JSONWriter(capacity: 256 + sections.reduce(0) { $0 + $1.items.count } * 64)
        writer.resetAnswer(
            from: from, id: snapshot.id.rawValue, name: snapshot.name, epoch: snapshot.epoch,
            version: snapshot.version, sections: sections)
        return EncodedChangeAnswer(
            list: snapshot.id, epoch: snapshot.epoch, from: from, to: snapshot.version, reset: true, stageCount: 0,
            json: writer.bytes, ofView: true)
    }

    /// A view's net change from its sections `old` (at `from`) to `new` (at
    /// `head.version`): the whole-view diff, staged.
    static func view(from old: ListSections, at from: Int64, to new: ListSections, _ head: ListHead)
        -> EncodedChangeAnswer
    {
        var answer = stages(
            ListChangeset(from: old, to: new), list: head.id, epoch: head.epoch, from: from, to: head.version)
        answer.ofView = true
        return answer
    }

    /// A view's net change given as two condensed states (``ViewState/condensedChange(since:)``):
    /// costs what changed, not the view's size.
    static func view(
        condensedFrom old: CondensedListSections, at from: Int64, to new: CondensedListSections, _ head: ListHead
    ) -> EncodedChangeAnswer {
        var answer = stages(
            ListChangeset(condensedFrom: old, to: new), list: head.id, epoch: head.epoch, from: from,
            to: head.version)
        answer.ofView = true
        return answer
    }
}
