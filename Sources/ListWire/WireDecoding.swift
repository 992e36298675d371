import JSON
import SectionDiff

/// Reading the wire forms of API.md back into SectionDiff values, the inverse
/// of the writers in `WireWriter.swift`.
///
/// Every failure is a ``WireError`` naming the field and the start of what came.
public enum WireDecoding {
    /// `{"id","model"}` as an entry.
    public static func entry(_ value: JSONValue) throws(WireError) -> JSONEntry {
        guard let id = value["id"]?.stringValue, let model = value["model"] else {
            throw WireError("an item needs id and model: \(value.canonicalText.prefix(200))")
        }
        return JSONEntry(id: id, model: JSONText(model.canonicalText))
    }

    /// `{"id","model","items"?}` as a section (no `items`: none).
    public static func section(_ value: JSONValue) throws(WireError) -> ArraySection<JSONEntry, JSONEntry> {
        guard let id = value["id"]?.stringValue, let model = value["model"] else {
            throw WireError("a section needs id and model: \(value.canonicalText.prefix(200))")
        }
        var items: [JSONEntry] = []
        if let array = value["items"]?.arrayValue {
            items.reserveCapacity(array.count)
            for item in array { items.append(try entry(item)) }
        }
        return ArraySection(model: JSONEntry(id: id, model: JSONText(model.canonicalText)), items: items)
    }

    /// An array of sections.
    public static func sections(_ values: [JSONValue]) throws(WireError) -> ListSections {
        var sections: ListSections = []
        sections.reserveCapacity(values.count)
        for value in values { sections.append(try section(value)) }
        return sections
    }

    /// `[section, item]`
    public static func path(_ value: JSONValue?, _ field: StageField) throws(WireError) -> ElementPath {
        guard let pair = value?.arrayValue, pair.count == 2, let section = pair[0].intValue, let item = pair[1].intValue
        else {
            throw WireError(
                "\(field.rawValue): \(value?.canonicalText.prefix(40) ?? "nothing") is not a [section, item] pair")
        }
        return ElementPath(element: item, section: section)
    }

    static func index(_ value: JSONValue?, _ field: StageField, _ name: String) throws(WireError) -> Int {
        guard let int = value?.intValue else {
            throw WireError(
                "\(field.rawValue) needs \(name), an index: \(value?.canonicalText.prefix(40) ?? "nothing")")
        }
        return int
    }

    static func required(_ value: JSONValue, _ key: String, _ field: StageField) throws(WireError) -> JSONValue {
        guard let member = value[key] else { throw WireError("\(field.rawValue) needs \(key)") }
        return member
    }

    /// A wire stage as SectionDiff's value. Updates name only a position and a
    /// model, so their ids come from `before`, the state the stage applies to.
    ///
    /// - Complexity: O(entries in the stage).
    public static func stage(_ value: JSONValue, before: ListSections) throws(WireError) -> ListStage {
        guard let object = value.objectValue else { throw WireError("a stage must be an object") }
        var stage = ListStage()
        for (key, fieldValue) in object {
            guard let field = StageField(rawValue: key) else {
                throw WireError("a stage has an unknown field \"\(key.prefix(40))\"")
            }
            guard let elements = fieldValue.arrayValue else { throw WireError("\(key) must be an array") }
            for element in elements {
                switch field {
                case .sectionDeleted:
                    stage.sectionDeleted.append(try index(element, field, "a section index"))
                case .sectionInserted:
                    stage.sectionInserted.append(
                        .init(
                            at: try index(element["at"], field, "at"),
                            section: try section(try required(element, "section", field))))
                case .sectionUpdated:
                    let at = try index(element["at"], field, "at")
                    let model = try required(element, "model", field)
                    guard before.indices.contains(at) else {
                        throw WireError("sectionUpdated names section \(at), but the state has \(before.count)")
                    }
                    stage.sectionUpdated.append(
                        .init(at: at, model: JSONEntry(id: before[at].model.id, model: JSONText(model.canonicalText))))
                case .sectionMoved:
                    stage.sectionMoved.append(
                        SectionMove(
                            from: try index(element["from"], field, "from"), to: try index(element["to"], field, "to")))
                case .itemDeleted:
                    stage.itemDeleted.append(try path(element, field))
                case .itemInserted:
                    stage.itemInserted.append(
                        .init(at: try path(element["at"], field), item: try entry(try required(element, "item", field)))
                    )
                case .itemUpdated:
                    let at = try path(element["at"], field)
                    let model = try required(element, "model", field)
                    guard before.indices.contains(at.section), before[at.section].items.indices.contains(at.element)
                    else {
                        throw WireError("itemUpdated names \(at), which the state does not hold")
                    }
                    let id = before[at.section].items[at.element].id
                    stage.itemUpdated.append(
                        .init(at: at, item: JSONEntry(id: id, model: JSONText(model.canonicalText))))
                case .itemMoved:
                    stage.itemMoved.append(
                        ItemMove(from: try path(element["from"], field), to: try path(element["to"], field)))
                }
            }
        }
        return stage
    }
}
