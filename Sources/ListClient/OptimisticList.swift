import JSON
import ListModel
import ListView
import ListWire
import SectionDiff

/// What an ``OptimisticFollow`` holds pending: the writes shown before the server
/// confirmed them, and the sections and items they name (what an app marks "saving…").
public struct PendingChanges: Sendable, Equatable {
    /// The pending writes' idempotency keys, oldest first.
    public var keys: [String]
    /// The ids of the sections the pending writes insert, change, move or delete.
    public var sections: Set<String>
    /// The ids of the items the pending writes insert, change, move or delete.
    public var items: Set<String>

    /// Nothing pending.
    public static let none = PendingChanges(keys: [], sections: [], items: [])

    /// Whether no write is pending.
    public var isEmpty: Bool { keys.isEmpty }
}

/// One update of an ``OptimisticFollow``: what changed on screen, if anything,
/// why, and what is still pending.
public struct OptimisticUpdate: Sendable, Equatable {
    /// Why the update happened.
    public enum Cause: Sendable, Equatable {
        /// A local write, shown before the server saw it.
        case local(key: String)
        /// The follow heard from the server (a snapshot, a change, a reset, a deletion).
        case server
        /// The server applied the write with this key; nothing more to show for it
        /// unless it was applied differently from what showed.
        case confirmed(key: String)
        /// The server refused the write with this key (a 4xx problem, a 500), or it
        /// could not be sent (the retries gave up): it is rolled back.
        case rejected(key: String, ListClientError)
    }

    /// Why.
    public var cause: Cause
    /// What to animate or reload: the same updates a plain follow emits (one
    /// `.changes` holds all the stages of one step), or `nil` when nothing visible
    /// changed (a confirmation of a write applied as sent).
    public var update: FollowUpdate?
    /// What still shows before the server confirmed it.
    public var pending: PendingChanges
    /// What shows now, pending writes included; `nil` before the first snapshot and after a deletion.
    public var state: ListState?

    /// Creates an update.
    public init(cause: Cause, update: FollowUpdate?, pending: PendingChanges, state: ListState?) {
        self.cause = cause
        self.update = update
        self.pending = pending
        self.state = state
    }
}

/// The optimistic follow's decisions as a value with no I/O (like ``FollowMachine``):
/// the server's state, the local writes not yet confirmed, and what shows, which
/// is always the server's state with the pending writes replayed over it.
///
/// - A local write (``write(_:key:)``) shows at once as one `.changes` update, a
///   stage per operation.
/// - When the follow brings a new server state (``receive(_:)``), what shows is
///   recomputed (the server's state, then the pending writes, each all or nothing,
///   the ones that no longer apply left out) and one `.changes` update carries the
///   difference from what showed, made by SectionDiff: none at all when the server's
///   change was the pending write itself.
/// - A write leaves the pending list when the server answered it and the follow
///   holds the version its answer names (``applied(key:version:)``): the version it
///   made, so its effect is in the server's state by then and leaving shows nothing.
/// - A refused write (``failed(key:error:)``) leaves at once; the difference, its
///   undoing, is one `.changes` update.
public struct OptimisticList: Sendable {
    /// A local write not yet confirmed.
    public struct Write: Sendable, Equatable {
        /// Its `Idempotency-Key`.
        public var key: String
        /// Its operations, every insert with its id.
        public var operations: [ListOperation]
        /// The version its answer says it made, once answered.
        public var version: Int64?
    }

    /// The list followed.
    public let list: String
    /// The view of it shown: `ViewSpec.wholeList` for the whole list.
    public let view: ViewSpec
    /// The server's state of the whole list, as the follow last heard it.
    public private(set) var confirmed: ListState?
    /// What shows: ``confirmed`` with the pending writes replayed over it, seen through ``view``.
    public private(set) var shown: ListState?
    /// ``confirmed`` with the pending writes replayed over it (``shown`` for the whole list).
    private var replayed: ListState?
    /// The writes not yet confirmed, oldest first.
    public private(set) var writes: [Write] = []

    /// An optimistic state for `list` shown through `view`, empty until the follow's first snapshot.
    ///
    /// A view is computed from the whole list (``confirmed`` is the whole list's state)
    /// with ListView's evaluator, its filter, order, groups and window, so that a
    /// local write lands where the server's view will put it; updates are the
    /// difference between two views, made by SectionDiff.
    public init(list: String, view: ViewSpec = .wholeList) {
        self.list = list
        self.view = view
    }

    /// What is pending now.
    public var pending: PendingChanges {
        guard !writes.isEmpty else { return .none }
        var sections = Set<String>()
        var items = Set<String>()
        for write in writes {
            for operation in write.operations { operation.named(sections: &sections, items: &items) }
        }
        return PendingChanges(keys: writes.map(\.key), sections: sections, items: items)
    }

    /// Shows a local write at once. `operations` must carry the ids of what they
    /// insert (`ListOperation` inserts without one get one in
    /// ``OptimisticFollow/apply(_:ifMatch:)``).
    ///
    /// The write is pending whether or not it applies here: the server decides. One
    /// that would be refused here (its item is gone, its position out of range)
    /// shows nothing and stays pending until the server answers.
    /// - Throws: `.invalidRequest` before the first snapshot, or for a key already pending.
    public mutating func write(_ operations: [ListOperation], key: String) throws(ListClientError) -> OptimisticUpdate {
        guard var state = shown, let confirmed else {
            throw ListClientError(kind: .invalidRequest, detail: "an optimistic write needs the list's snapshot first")
        }
        guard !writes.contains(where: { $0.key == key }) else {
            throw ListClientError(kind: .invalidRequest, detail: "the write \(key) is already pending")
        }
        writes.append(Write(key: key, operations: operations, version: nil))
        guard view.isWholeList else {
            if var next = replayed {
                _ = try? LocalApply.apply(operations, to: &next.sections)
                replayed = next
            }
            return show(cause: .local(key: key), pendingBefore: nil)
                ?? OptimisticUpdate(cause: .local(key: key), update: nil, pending: pending, state: shown)
        }
        let before = state.sections
        let stages = (try? LocalApply.apply(operations, to: &state.sections)) ?? []
        shown = state
        replayed = state
        let update: FollowUpdate? =
            stages.isEmpty
            ? nil
            : .changes(
                ListChange(
                    from: confirmed.version, before: before, stages: stages, state: state,
                    answer: Self.answer(list: list, epoch: state.epoch, version: confirmed.version, stages, local: true)
                ))
        return OptimisticUpdate(cause: .local(key: key), update: update, pending: pending, state: shown)
    }

    /// An update of the follow (the server's state moved): returns what to emit,
    /// or `nil` when nothing shows differently and nothing pending changed.
    public mutating func receive(_ update: FollowUpdate) -> OptimisticUpdate? {
        switch update {
        case .deleted:
            confirmed = nil
            shown = nil
            replayed = nil
            return OptimisticUpdate(cause: .server, update: update, pending: pending, state: nil)
        case .snapshot(let state), .reset(let state):
            confirmed = state
            dropConfirmed()
            var next = state
            next.sections = LocalApply.replay(writes.map(\.operations), over: state.sections)
            replayed = next
            let seen = Self.seen(next, through: view)
            shown = seen
            let reload: FollowUpdate = if case .snapshot = update { .snapshot(seen) } else { .reset(seen) }
            return OptimisticUpdate(cause: .server, update: reload, pending: pending, state: seen)
        case .changes(let change):
            // Nothing pending: what showed was the server's state, and its stages are the change.
            if writes.isEmpty, view.isWholeList, let shown, shown.version == change.from {
                confirmed = change.state
                self.shown = change.state
                replayed = change.state
                return OptimisticUpdate(cause: .server, update: update, pending: .none, state: change.state)
            }
            confirmed = change.state
            let before = pending
            dropConfirmed()
            return reconcile(.server, pendingBefore: before)
        }
    }

    /// The server answered the write `key`: it made `version` (`nil` when the answer
    /// does not say, such as a replay whose answer the server no longer has: the
    /// write stops being pending at once).
    public mutating func applied(key: String, version: Int64?) -> OptimisticUpdate? {
        guard let index = writes.firstIndex(where: { $0.key == key }) else { return nil }
        guard let version, let confirmed, version > confirmed.version else {
            writes.remove(at: index)
            return reconcile(.confirmed(key: key), pendingBefore: nil)
        }
        // Pending until the follow holds that version: leaving earlier would show the
        // server's older state, without the write, until its change arrives.
        writes[index].version = version
        return nil
    }

    /// The server refused the write `key` (or it could not be sent): it is undone.
    public mutating func failed(key: String, error: ListClientError) -> OptimisticUpdate? {
        guard let index = writes.firstIndex(where: { $0.key == key }) else { return nil }
        writes.remove(at: index)
        return reconcile(.rejected(key: key, error), pendingBefore: nil)
    }

    /// Writes queued before this state existed (an outbox's, after a restart): pending,
    /// shown over the first snapshot.
    mutating func restore(_ queued: [(String, [ListOperation])]) {
        for (key, operations) in queued where !writes.contains(where: { $0.key == key }) {
            writes.append(Write(key: key, operations: operations, version: nil))
        }
    }

    /// Writes whose answer named a version the follow holds now are in the server's state.
    private mutating func dropConfirmed() {
        guard let confirmed else { return }
        writes.removeAll { write in write.version.map { $0 <= confirmed.version } ?? false }
    }

    /// Recomputes what shows from ``confirmed`` and the writes still pending, and
    /// returns the difference from what showed as one update.
    /// The update's answer is made here: its stages are the difference, not the server's.
    private mutating func reconcile(_ cause: OptimisticUpdate.Cause, pendingBefore: PendingChanges?)
        -> OptimisticUpdate?
    {
        guard let confirmed else { return nil }
        var next = confirmed
        next.sections = LocalApply.replay(writes.map(\.operations), over: confirmed.sections)
        replayed = next
        return show(cause: cause, pendingBefore: pendingBefore)
    }

    /// Shows ``replayed`` through the view and returns the difference from what
    /// showed as one update (`nil` for the server's change when nothing at all changed).
    private mutating func show(cause: OptimisticUpdate.Cause, pendingBefore: PendingChanges?) -> OptimisticUpdate? {
        guard let old = shown, let replayed else { return nil }
        let next = Self.seen(replayed, through: view)
        shown = next
        let pendingNow = pending
        let changeset = ListChangeset(from: old.sections, to: next.sections)
        guard !changeset.isEmpty else {
            if case .server = cause, pendingBefore == pendingNow { return nil }
            return OptimisticUpdate(cause: cause, update: nil, pending: pendingNow, state: next)
        }
        var stages: [AppliedStage] = []
        var sections = old.sections
        for stage in changeset.stages {
            guard let after = try? stage.apply(to: sections) else {
                // The diff's stages always apply to what they were made from; were one
                // not to, the consumer reloads rather than animate something wrong.
                return OptimisticUpdate(cause: cause, update: .reset(next), pending: pendingNow, state: next)
            }
            sections = after
            stages.append(AppliedStage(stage: stage, sections: after))
        }
        let local = if case .local = cause { true } else { false }
        let answer = Self.answer(
            list: list, epoch: next.epoch, version: old.version, stages, local: local, to: next.version)
        let change = ListChange(from: old.version, before: old.sections, stages: stages, state: next, answer: answer)
        return OptimisticUpdate(cause: cause, update: .changes(change), pending: pendingNow, state: next)
    }

    /// `state` seen through `view`: the view's sections, ids and models as the
    /// server's view has them (a group's id is its value's JSON text).
    static func seen(_ state: ListState, through view: ViewSpec) -> ListState {
        guard !view.isWholeList else { return state }
        let source = state.sections.compactMap { section -> SourceSection? in
            guard let id = Identifier(section.model.id) else { return nil }
            let items = section.items.compactMap { item in
                Identifier(item.id).map { ViewItem(id: $0, model: Model(trustedCanonicalText: item.model.text)) }
            }
            return SourceSection(id: id, model: Model(trustedCanonicalText: section.model.model.text), items: items)
        }
        // The models come from the server, which stores only JSON: evaluation cannot fail on them.
        let sections = ((try? view.evaluate(source)) ?? []).map { section in
            ArraySection(
                model: JSONEntry(id: section.id, model: JSONText(section.model.canonicalText)),
                items: section.items.map { JSONEntry(id: $0.id.rawValue, model: JSONText($0.model.canonicalText)) })
        }
        var seen = state
        seen.sections = sections
        return seen
    }

    /// A change answer for stages the client made (a local write, a rebase), in the
    /// wire form the server's have, marked `"optimistic": true` for a local write.
    static func answer(
        list: String, epoch: String, version: Int64, _ stages: [AppliedStage], local: Bool, to: Int64? = nil
    ) -> ChangeAnswer {
        var writer = JSONWriter(capacity: 256)
        writer.stagedAnswer(
            list: list, epoch: epoch, from: version, to: to ?? version,
            stages: ListChangeset(stages: stages.map(\.stage)))
        // The writer's output is a change answer by construction; the fallbacks are unreachable.
        let empty = ListState(id: list, name: "", epoch: epoch, version: version, sections: [])
        guard let value = try? JSONValue(parsing: writer.bytes, limits: ListClient.answerLimits),
            var object = value.objectValue
        else { return ChangeAnswer(resetFrom: version, to: empty) }
        if local { object["optimistic"] = true }
        return (try? ChangeAnswer(json: .object(object))) ?? ChangeAnswer(resetFrom: version, to: empty)
    }
}
