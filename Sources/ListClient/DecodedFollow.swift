import Foundation
import ReactiveCore
import Synchronization

/// Which model did not decode into the app's type, and why (``ListClientError/modelFailure``).
public struct ModelDecodingFailure: Sendable, Equatable, CustomStringConvertible {
    /// The list followed.
    public var list: String
    /// The section that holds the item.
    public var section: String
    /// The item whose model did not decode.
    public var item: String
    /// The coding path inside the model where it failed (`"due"`, `"tags.0"`), empty for the model itself.
    public var path: String
    /// What failed, in words (`key not found`, `expected Int, found a string`).
    public var reason: String

    /// Creates a report.
    public init(list: String, section: String, item: String, path: String, reason: String) {
        self.list = list
        self.section = section
        self.item = item
        self.path = path
        self.reason = reason
    }

    /// `item "milk" in section "dairy" of list "groceries", at "qty": …`.
    public var description: String {
        "item \"\(item)\" in section \"\(section)\" of list \"\(list)\""
            + (path.isEmpty ? "" : ", at \"\(path)\"") + ": \(reason)"
    }
}

/// An item with its model decoded into the app's type.
public struct DecodedItem<Model: Sendable>: Sendable, Identifiable {
    /// The item's id, unique in its list.
    public var id: String
    /// The item's model.
    public var model: Model

    /// Creates an item.
    public init(id: String, model: Model) {
        self.id = id
        self.model = model
    }
}

extension DecodedItem: Equatable where Model: Equatable {}
extension DecodedItem: Hashable where Model: Hashable {}

/// A section of a ``DecodedSnapshot``: its own model stays JSON (``/ListWire/JSONEntry/model``),
/// its items are decoded.
public struct DecodedSection<Model: Sendable>: Sendable, Identifiable {
    /// The section's id.
    public var id: String
    /// The section's model, as canonical JSON text.
    public var model: JSONText
    /// The section's items, decoded, in order.
    public var items: [DecodedItem<Model>]

    /// Creates a section.
    public init(id: String, model: JSONText, items: [DecodedItem<Model>]) {
        self.id = id
        self.model = model
        self.items = items
    }

    /// The section's model decoded as `type` (a header's title, say).
    public func decodeModel<Header: Decodable>(as type: Header.Type, using decoder: JSONDecoder = JSONDecoder())
        throws -> Header
    {
        try decoder.decode(type, from: Data(model.text.utf8))
    }
}

extension DecodedSection: Equatable where Model: Equatable {}

/// A list's (or a view's) state with every item decoded into the app's type.
public struct DecodedSnapshot<Model: Sendable>: Sendable {
    /// The list's id.
    public var list: String
    /// The list's epoch.
    public var epoch: String
    /// The version this state is at.
    public var version: Int64
    /// The sections, in order, each with its decoded items.
    public var sections: [DecodedSection<Model>]

    /// Creates a snapshot.
    public init(list: String, epoch: String, version: Int64, sections: [DecodedSection<Model>]) {
        self.list = list
        self.epoch = epoch
        self.version = version
        self.sections = sections
    }

    /// Every item, section after section.
    public var items: [DecodedItem<Model>] { sections.flatMap(\.items) }

    /// The item at `section`, `item` (an `IndexPath`'s section and row), if there is one.
    public subscript(section section: Int, item item: Int) -> DecodedItem<Model>? {
        guard sections.indices.contains(section), sections[section].items.indices.contains(item) else { return nil }
        return sections[section].items[item]
    }
}

extension DecodedSnapshot: Equatable where Model: Equatable {}

/// An update of a decoded follow: the update as it came (its stages drive the
/// animation), and the state after it with every item decoded.
public struct DecodedUpdate<Model: Sendable>: Sendable {
    /// The update, with its stages and raw sections.
    public var update: FollowUpdate
    /// The state after the update, decoded; `nil` after `.deleted`.
    public var snapshot: DecodedSnapshot<Model>?
    /// For `.changes`: the state after each stage, decoded (the last one is
    /// ``snapshot``), what a table view shows between its batch updates
    /// (``StageApplier/apply(_:to:setSnapshot:)``). Each has the answer's version. Empty otherwise.
    public var stages: [DecodedSnapshot<Model>]

    /// Creates an update.
    public init(update: FollowUpdate, snapshot: DecodedSnapshot<Model>?, stages: [DecodedSnapshot<Model>] = []) {
        self.update = update
        self.snapshot = snapshot
        self.stages = stages
    }
}

/// Decodes states item by item, keeping each item's decoded model while its
/// JSON stays the same: an update decodes only the items it inserted or changed.
public struct SnapshotDecoder<Model: Decodable & Sendable>: Sendable {
    private var cache: [String: (json: JSONText, model: Model)] = [:]
    private let makeDecoder: @Sendable () -> JSONDecoder

    /// A decoder whose models are read by the `JSONDecoder` that `makeDecoder` makes
    /// (called once per item decoded; configure date and key strategies there).
    public init(decoder makeDecoder: @escaping @Sendable () -> JSONDecoder = { JSONDecoder() }) {
        self.makeDecoder = makeDecoder
    }

    /// `state` with every item decoded; throws a ``ListClientError`` of kind
    /// `.decoding` naming the first item that does not decode.
    public mutating func decode(_ state: ListState) throws(ListClientError) -> DecodedSnapshot<Model> {
        var next: [String: (json: JSONText, model: Model)] = [:]
        next.reserveCapacity(state.itemCount)
        var sections: [DecodedSection<Model>] = []
        sections.reserveCapacity(state.sections.count)
        for section in state.sections {
            var items: [DecodedItem<Model>] = []
            items.reserveCapacity(section.items.count)
            for item in section.items {
                let model: Model
                if let cached = cache[item.id], cached.json == item.model {
                    model = cached.model
                } else {
                    model = try decodeModel(item, section: section.model.id, list: state.id)
                }
                next[item.id] = (item.model, model)
                items.append(DecodedItem(id: item.id, model: model))
            }
            sections.append(DecodedSection(id: section.model.id, model: section.model.model, items: items))
        }
        cache = next
        return DecodedSnapshot(list: state.id, epoch: state.epoch, version: state.version, sections: sections)
    }

    /// `update` with its state, and for a change the state after each stage, decoded.
    public mutating func decode(_ update: FollowUpdate) throws(ListClientError) -> DecodedUpdate<Model> {
        guard case .changes(let change) = update else {
            guard let state = update.state else { return DecodedUpdate(update: update, snapshot: nil) }
            return DecodedUpdate(update: update, snapshot: try decode(state))
        }
        var stages: [DecodedSnapshot<Model>] = []
        stages.reserveCapacity(change.stages.count)
        var state = change.state
        for applied in change.stages {
            state.sections = applied.sections
            stages.append(try decode(state))
        }
        guard let last = stages.last else { return DecodedUpdate(update: update, snapshot: try decode(change.state)) }
        return DecodedUpdate(update: update, snapshot: last, stages: stages)
    }

    private func decodeModel(_ item: JSONEntry, section: String, list: String) throws(ListClientError) -> Model {
        do {
            return try makeDecoder().decode(Model.self, from: Data(item.model.text.utf8))
        } catch {
            let (path, reason) = Self.explain(error)
            let failure = ModelDecodingFailure(list: list, section: section, item: item.id, path: path, reason: reason)
            var error = ListClientError(kind: .decoding, detail: failure.description)
            error.modelFailure = failure
            throw error
        }
    }

    /// The coding path and a short reason for a `DecodingError`.
    static func explain(_ error: any Error) -> (path: String, reason: String) {
        func join(_ path: [any CodingKey]) -> String {
            path.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        guard let error = error as? DecodingError else { return ("", "\(error)") }
        switch error {
        case .keyNotFound(let key, let context):
            return (join(context.codingPath + [key]), "key not found")
        case .typeMismatch(let type, let context):
            return (join(context.codingPath), "expected \(type): \(context.debugDescription)")
        case .valueNotFound(let type, let context):
            return (join(context.codingPath), "expected \(type), found null")
        case .dataCorrupted(let context):
            return (join(context.codingPath), context.debugDescription)
        @unknown default:
            return ("", "\(error)")
        }
    }
}

extension ListClient {
    /// Follows `list` (or a view of it) with every item's model decoded into
    /// `Model`: the same updates as ``follow(list:view:options:)``, each with the
    /// decoded state after it. Only items an update inserted or changed are decoded
    /// again. A model that does not decode ends the follow with a
    /// ``ListClientError`` of kind `.decoding` whose ``ListClientError/modelFailure``
    /// names the item, its section, the coding path and what failed.
    ///
    /// ```swift
    /// struct Todo: Decodable, Sendable { var title: String; var done: Bool }
    /// client.follow(list: "tasks", as: Todo.self).subscribe(onNext: { update in
    ///     rows = update.snapshot?.items ?? []
    /// })
    /// ```
    public func follow<Model: Decodable & Sendable>(
        list: String, view: ViewSpec = .wholeList, as type: Model.Type, options: FollowOptions = FollowOptions(),
        decoder: @escaping @Sendable () -> JSONDecoder = { JSONDecoder() }
    ) -> Observable<DecodedUpdate<Model>> {
        let source = follow(list: list, view: view, options: options)
        return Observable.create { observer in
            let decoding = Mutex(SnapshotDecoder<Model>(decoder: decoder))
            let subscription = SingleAssignmentDisposable()
            subscription.setDisposable(
                source.subscribe { event in
                    switch event {
                    case .next(let update):
                        let decoded = decoding.withLock { decoder -> Result<DecodedUpdate<Model>, ListClientError> in
                            do throws(ListClientError) {
                                return .success(try decoder.decode(update))
                            } catch {
                                return .failure(error)
                            }
                        }
                        switch decoded {
                        case .success(let value): observer.onNext(value)
                        case .failure(let error):
                            observer.onError(error)
                            subscription.dispose()
                        }
                    case .error(let error): observer.onError(error)
                    case .completed: observer.onCompleted()
                    }
                })
            return subscription
        }
    }

    /// ``follow(list:view:as:options:decoder:)`` as an `AsyncSequence` with typed errors.
    ///
    /// ```swift
    /// for try await update in client.updates(list: "tasks", as: Todo.self) {
    ///     todos = update.snapshot?.items.map(\.model) ?? []
    /// }
    /// ```
    public func updates<Model: Decodable & Sendable>(
        list: String, view: ViewSpec = .wholeList, as type: Model.Type, options: FollowOptions = FollowOptions(),
        decoder: @escaping @Sendable () -> JSONDecoder = { JSONDecoder() }
    ) -> FollowSequence<DecodedUpdate<Model>> {
        FollowSequence(follow(list: list, view: view, as: type, options: options, decoder: decoder))
    }

    /// `GET /lists/{list}` (or a view's snapshot) with every item decoded into `Model`.
    public func list<Model: Decodable & Sendable>(
        _ id: String, view: ViewSpec = .wholeList, as type: Model.Type,
        decoder: @escaping @Sendable () -> JSONDecoder = { JSONDecoder() }
    ) async throws(ListClientError) -> DecodedSnapshot<Model> {
        var decoding = SnapshotDecoder<Model>(decoder: decoder)
        return try decoding.decode(try await list(id, view: view))
    }
}
