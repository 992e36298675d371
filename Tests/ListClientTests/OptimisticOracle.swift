import JSON
import ListClient
import ListdTestSupport
import SectionDiff

/// An independent model of a listd list for the optimistic-apply tests: plain
/// arrays of ids and model texts, operations applied as API.md says (a batch all
/// or nothing, `If-Match`, a write that changes nothing keeps the version), every
/// version's state kept so that any change answer can be made. Written apart from
/// ListClient's `LocalApply`.
struct OracleList {
    typealias Section = UIKitBatchModel.State.Section
    typealias Item = UIKitBatchModel.State.Item

    enum Refusal: Error, Equatable {
        case notFound, conflict, badPosition, preconditionFailed

        var status: Int {
            switch self {
            case .notFound: 404
            case .conflict: 409
            case .badPosition: 400
            case .preconditionFailed: 412
            }
        }
    }

    var sections: [Section]
    var version: Int64 = 1
    let epoch = "e1"
    let id = "l"
    /// The sections at each version.
    var history: [Int64: [Section]] = [:]

    init(sections: [Section]) {
        self.sections = sections
        history[version] = sections
    }

    /// Applies one write: the version it left, or why it was refused (nothing applied).
    mutating func apply(_ operations: [ListOperation], ifMatch: Int64? = nil) -> Result<Int64, Refusal> {
        if let ifMatch, ifMatch != version { return .failure(.preconditionFailed) }
        var working = sections
        for operation in operations {
            if let refusal = Self.apply(operation, to: &working) { return .failure(refusal) }
        }
        if working != sections {
            sections = working
            version += 1
            history[version] = sections
        }
        return .success(version)
    }

    /// The pending writes replayed over `base`, each all or nothing, refused ones left out.
    static func replay(_ writes: [[ListOperation]], over base: [Section]) -> [Section] {
        var state = base
        for operations in writes {
            var working = state
            var refused = false
            for operation in operations where !refused {
                refused = apply(operation, to: &working) != nil
            }
            if !refused { state = working }
        }
        return state
    }

    static func apply(_ operation: ListOperation, to sections: inout [Section]) -> Refusal? {
        func sectionIndex(_ id: Identifier) -> Int? { sections.firstIndex { $0.id == id.rawValue } }
        func itemPath(_ id: Identifier) -> (Int, Int)? {
            for (s, section) in sections.enumerated() {
                if let i = section.items.firstIndex(where: { $0.id == id.rawValue }) { return (s, i) }
            }
            return nil
        }
        switch operation {
        case .insertSection(let new, let at):
            guard let id = new.id, sectionIndex(id) == nil else { return .conflict }
            var ids = Set<String>()
            for item in new.items {
                guard let itemID = item.id, itemPath(itemID) == nil, ids.insert(itemID.rawValue).inserted else {
                    return .conflict
                }
            }
            let index = at ?? sections.count
            guard index >= 0 && index <= sections.count else { return .badPosition }
            sections.insert(
                Section(
                    id: id.rawValue, model: new.model.canonicalText,
                    items: new.items.map { Item(id: $0.id?.rawValue ?? "", model: $0.model.canonicalText) }),
                at: index)
        case .updateSection(let id, let model):
            guard let index = sectionIndex(id) else { return .notFound }
            sections[index].model = model.canonicalText
        case .moveSection(let id, let to):
            guard let index = sectionIndex(id) else { return .notFound }
            guard to >= 0 && to < sections.count else { return .badPosition }
            let section = sections.remove(at: index)
            sections.insert(section, at: to)
        case .deleteSection(let id):
            guard let index = sectionIndex(id) else { return .notFound }
            sections.remove(at: index)
        case .insertItem(let sectionID, let new, let at):
            guard let s = sectionIndex(sectionID) else { return .notFound }
            guard let id = new.id, itemPath(id) == nil else { return .conflict }
            let index = at ?? sections[s].items.count
            guard index >= 0 && index <= sections[s].items.count else { return .badPosition }
            sections[s].items.insert(Item(id: id.rawValue, model: new.model.canonicalText), at: index)
        case .updateItem(let id, let model):
            guard let (s, i) = itemPath(id) else { return .notFound }
            sections[s].items[i].model = model.canonicalText
        case .moveItem(let id, let sectionID, let to):
            guard let (s, i) = itemPath(id) else { return .notFound }
            var target = s
            if let sectionID {
                guard let found = sectionIndex(sectionID) else { return .notFound }
                target = found
            }
            let item = sections[s].items.remove(at: i)
            guard to >= 0 && to <= sections[target].items.count else { return .badPosition }
            sections[target].items.insert(item, at: to)
        case .deleteItem(let id):
            guard let (s, i) = itemPath(id) else { return .notFound }
            sections[s].items.remove(at: i)
        }
        return nil
    }

    static func wire(_ sections: [Section]) -> ListSections {
        sections.map { section in
            ArraySection(
                model: JSONEntry(id: section.id, model: JSONText(section.model)),
                items: section.items.map { JSONEntry(id: $0.id, model: JSONText($0.model)) })
        }
    }

    /// `sections` seen through `view`, by ListView's evaluator (the server's views' own oracle).
    static func seen(_ sections: [Section], through view: ViewSpec) -> UIKitBatchModel.State {
        guard !view.isWholeList else { return UIKitBatchModel.State(sections: sections) }
        let source = sections.map { section in
            SourceSection(
                id: Identifier(section.id) ?? "x", model: Model(trustedCanonicalText: section.model),
                items: section.items.map {
                    ViewItem(id: Identifier($0.id) ?? "x", model: Model(trustedCanonicalText: $0.model))
                })
        }
        let evaluated = (try? view.evaluate(source)) ?? []
        return UIKitBatchModel.State(
            sections: evaluated.map { section in
                Section(
                    id: section.id, model: section.model.canonicalText,
                    items: section.items.map { Item(id: $0.id.rawValue, model: $0.model.canonicalText) })
            })
    }

    var snapshot: ListState {
        ListState(id: id, name: "", epoch: epoch, version: version, sections: Self.wire(sections))
    }

    /// The change answer from `since` to now, as the server makes it (SectionDiff's stages on the wire).
    /// When the net change is nothing (writes that undid each other), a reset.
    func answer(since: Int64) -> ChangeAnswer? {
        guard let old = history[since] else { return nil }
        let changeset = ListChangeset(from: Self.wire(old), to: Self.wire(sections))
        guard !changeset.isEmpty else { return ChangeAnswer(resetFrom: since, to: snapshot) }
        var writer = JSONWriter(capacity: 256)
        writer.stagedAnswer(list: id, epoch: epoch, from: since, to: version, stages: changeset)
        guard let value = try? JSONValue(parsing: writer.bytes) else { return nil }
        return try? ChangeAnswer(json: value)
    }
}

/// What a consumer bound to a table view shows: it applies each update's stages
/// through ``UIKitBatchModel`` and checks every step against the update.
struct TableConsumer {
    var shown: UIKitBatchModel.State?
    var problems: [String] = []
    /// Stages taken in, over all updates.
    var stageCount = 0

    /// Takes in `update`; returns the number of stages it animated.
    @discardableResult
    mutating func take(_ update: FollowUpdate?, context: @autoclosure () -> String) -> Int {
        switch update {
        case nil: return 0
        case .snapshot(let state), .reset(let state):
            shown = UIKitBatchModel.State(state.sections)
            return 0
        case .deleted:
            shown = nil
            return 0
        case .changes(let change):
            guard var state = shown else {
                problems.append("\(context()): changes before any snapshot")
                return 0
            }
            if state != UIKitBatchModel.State(change.before) {
                problems.append(
                    "\(context()): the change starts from \(UIKitBatchModel.State(change.before)), the table shows \(state)"
                )
            }
            for (number, applied) in change.stages.enumerated() {
                if applied.stage.isEmpty { problems.append("\(context()): empty stage \(number)") }
                do {
                    state = try UIKitBatchModel.apply(applied.stage, to: state)
                } catch {
                    problems.append("\(context()): UIKit rejects stage \(number) \(applied.stage): \(error)")
                    return change.stages.count
                }
                if state != UIKitBatchModel.State(applied.sections) {
                    problems.append("\(context()): stage \(number) does not end at its sections")
                }
            }
            if state != UIKitBatchModel.State(change.state.sections) {
                problems.append("\(context()): the stages do not end at the change's state")
            }
            shown = state
            stageCount += change.stages.count
            return change.stages.count
        }
    }
}
