import ListModel
import ListStore
import ListView
import Synchronization

/// Computes "what changed in a list since V" once per question, however many
/// clients ask it at the same time, and remembers recent answers while they
/// are still current.
///
/// The net change comes from the store as what changed since V
/// (``Store/changes(of:since:)``: the touched sections and items with their
/// places then and now, untouched stretches folded into runs), and SectionDiff
/// stages it (``StagedChangeset/init(condensedFrom:to:)``), so an answer costs
/// what it carries, whatever the list's size; an item updated a thousand times
/// since V appears once and one inserted and deleted since V not at all.
final class ChangeComputer: Sendable {
    /// What identifies a question.
    struct Question: Hashable, Sendable {
        var list: Identifier
        var from: Int64
        /// The epoch the client holds, if it sent one.
        var epoch: String?
        /// `maxChanges`: the client prefers the snapshot to a change naming
        /// more sections and items than this.
        var maxChanges: Int? = nil
        /// The view asked about (docs/API.md, "Views"); `nil`: the whole list.
        var view: ViewSpec? = nil
        /// A view's follower holding an earlier version than `from` whose view
        /// is the same (the writes between left it alone): the answer is
        /// computed from `from` and says it starts here.
        var reportFrom: Int64? = nil
        /// A version from which the view is known to be the same through
        /// `from`: a kept view at or after it may be taken as at `from`.
        var sameSince: Int64? = nil
    }

    private enum Outcome: Sendable {
        case answer(EncodedChangeAnswer)
        case failure(StoreError)
        /// The computation ended before this asker could join it: ask again.
        case retry
    }

    private struct State {
        var inFlight: [Question: [CheckedContinuation<Outcome, Never>]] = [:]
        var recent: [Question: EncodedChangeAnswer] = [:]
        var recentOrder: [Question] = []
    }

    private let store: any Store
    private let router: CommitRouter
    /// Where computed answers are staged and serialized (never on the cooperative pool).
    private let stager: CatchUpStager
    /// The views followed lately, kept current (docs/API.md, "Views").
    let views: LiveViews
    private let state = Mutex(State())
    private let recentCapacity: Int
    private let computations = Atomic<Int>(0)

    /// How many answers were computed (not shared); for tests and metrics.
    var computationCount: Int { computations.load(ordering: .relaxed) }

    /// How many askers wait for the computation of `question` in flight
    /// (not counting the one computing it); for tests.
    func waiting(for question: Question) -> Int {
        state.withLock { $0.inFlight[question]?.count ?? 0 }
    }

    /// - Parameter viewMemory: roughly the most bytes the kept views hold (``LiveViews``).
    /// - Parameter spans: the recent commits' touched rows, fed by the router's
    ///   `onCommit` (a new, unfed one: kept views read history for every span).
    init(
        store: any Store, router: CommitRouter, recentCapacity: Int = 4096, viewMemory: Int = 256 << 20,
        spans: RecentSpans = RecentSpans()
    ) {
        self.store = store
        self.router = router
        self.recentCapacity = recentCapacity
        let stager = CatchUpStager()
        self.stager = stager
        self.views = LiveViews(
            store: store, stager: stager, budget: viewMemory, spans: spans,
            head: { [router] list in router.head(of: list) })
    }

    /// The answer to `question`; shared with every concurrent asker of the same question.
    func answer(_ question: Question) async throws(StoreError) -> EncodedChangeAnswer {
        if let limit = question.maxChanges {
            var plain = question
            plain.maxChanges = nil
            let answer = try await answer(plain)
            guard !answer.reset, answer.changeCount > limit else { return answer }
            return try await sharedAnswer(question)
        }
        return try await sharedAnswer(question)
    }

    /// The answer a store recorded with a commit, staged once and remembered
    /// for everyone asking "changes since the version before it".
    func recorded(_ change: NetChange) -> EncodedChangeAnswer {
        let question = Question(list: change.list, from: change.from, epoch: nil)
        if let known = state.withLock({ $0.recent[question] }), known.to == change.to, known.epoch == change.epoch {
            return known
        }
        let answer = EncodedChangeAnswer.change(change)
        state.withLock { state in remember(answer, for: question, in: &state) }
        return answer
    }

    private func sharedAnswer(_ question: Question) async throws(StoreError) -> EncodedChangeAnswer {
        enum Role { case reuse(EncodedChangeAnswer), join, compute }
        let head = router.head(of: question.list)
        let role: Role = state.withLock { state in
            if let known = state.recent[question], let head, known.epoch == head.epoch, known.to == head.version {
                return .reuse(known)
            }
            // A question naming the epoch it holds has the answer of the same
            // question without one, when that answer is of that epoch: a
            // commit's recorded change serves followers whatever their cursors say.
            if question.maxChanges == nil, let epoch = question.epoch, let head, head.epoch == epoch,
                let known = state.recent[
                    Question(
                        list: question.list, from: question.from, epoch: nil, view: question.view,
                        reportFrom: question.reportFrom)],
                known.epoch == epoch, known.to == head.version
            {
                return .reuse(known)
            }
            if state.inFlight[question] != nil { return .join }
            state.inFlight[question] = []
            return .compute
        }
        switch role {
        case .reuse(let answer):
            return answer
        case .join:
            let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let joined = state.withLock { state -> Bool in
                    guard state.inFlight[question] != nil else { return false }
                    state.inFlight[question]?.append(continuation)
                    return true
                }
                // The computation finished between the check and here: ask again.
                if !joined { continuation.resume(returning: .retry) }
            }
            switch outcome {
            case .answer(let answer): return answer
            case .failure(let error): throw error
            case .retry: return try await sharedAnswer(question)
            }
        case .compute:
            let outcome: Outcome
            do {
                outcome = .answer(try await compute(question))
            } catch {
                outcome = .failure(error)
            }
            let waiting = state.withLock { state -> [CheckedContinuation<Outcome, Never>] in
                let waiting = state.inFlight.removeValue(forKey: question) ?? []
                if case .answer(let answer) = outcome { remember(answer, for: question, in: &state) }
                return waiting
            }
            // The computing asker's client left and the store skipped its
            // call: that is no answer for the others, who ask again (one of
            // them computes). Any other failure is the question's, shared.
            let shared: Outcome
            if case .failure(let error) = outcome, error.kind == .cancelled {
                shared = .retry
            } else {
                shared = outcome
            }
            for continuation in waiting { continuation.resume(returning: shared) }
            switch outcome {
            case .answer(let answer): return answer
            case .failure(let error): throw error
            case .retry: return try await sharedAnswer(question)
            }
        }
    }

    private func compute(_ question: Question) async throws(StoreError) -> EncodedChangeAnswer {
        computations.add(1, ordering: .relaxed)
        if let view = question.view { return try await compute(question, view: view) }
        if question.maxChanges != nil {
            // Asked only once the change is known to be larger than the client wants.
            let current = try await store.snapshot(of: question.list)
            router.note(current.head)
            return await stager.run { .reset(current, from: question.from) }
        }
        if let epoch = question.epoch, let head = router.head(of: question.list), head.epoch != epoch {
            let current = try await store.snapshot(of: question.list)
            router.note(current.head)
            if current.epoch != epoch { return await stager.run { .reset(current, from: question.from) } }
        }
        switch try await store.changes(of: question.list, since: question.from) {
        case .reset(let current):
            router.note(current.head)
            return await stager.run { .reset(current, from: question.from) }
        case .change(let change):
            router.note(change.head)
            if let epoch = question.epoch, epoch != change.epoch {
                let current = try await store.snapshot(of: question.list)
                return await stager.run { .reset(current, from: question.from) }
            }
            if change.from == change.to { return .unchanged(change.head, from: question.from) }
            return await stager.run { .change(change) }
        }
    }

    /// A view's answer: from the kept view (``LiveViews``), costing what
    /// changed since `from` and the view's size; else (writes kept landing
    /// between its reads) from the list's snapshots now and at `from` in one
    /// read, each viewed, diffed. A reset (the view's whole snapshot) where the
    /// list's answer would reset, or for `maxChanges`.
    private func compute(_ question: Question, view: ViewSpec) async throws(StoreError) -> EncodedChangeAnswer {
        if let answer = try await views.answer(
            LiveViews.Key(list: question.list, view: view), from: question.from, reportFrom: question.reportFrom,
            sameSince: question.sameSince, epoch: question.epoch, maxChanges: question.maxChanges)
        {
            router.note(ListHead(id: question.list, epoch: answer.epoch, version: answer.to))
            return answer
        }
        let snapshots = try await store.snapshots(of: question.list, at: [question.from])
        let current = snapshots.current
        router.note(current.head)
        let epochMatches = question.epoch.map { $0 == current.epoch } ?? true
        let old = question.maxChanges == nil && epochMatches ? snapshots.atVersion[question.from] : nil
        let from = question.from
        let result = await stager.run { () -> Result<EncodedChangeAnswer, StoreError> in
            do throws(StoreError) {
                let new = try ViewSnapshots.sections(of: current, view)
                guard let old, old.version <= current.version else {
                    return .success(.reset(current, view: new, from: from))
                }
                if old.version == current.version { return .success(.unchanged(current.head, from: from)) }
                return .success(.view(from: try ViewSnapshots.sections(of: old, view), at: from, to: new, current.head))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private func remember(_ answer: EncodedChangeAnswer, for question: Question, in state: inout State) {
        if state.recent.updateValue(answer, forKey: question) == nil { state.recentOrder.append(question) }
        if state.recentOrder.count > recentCapacity {
            let dropped = state.recentOrder.prefix(state.recentOrder.count - recentCapacity / 2)
            for old in dropped { state.recent[old] = nil }
            state.recentOrder.removeFirst(dropped.count)
        }
    }
}
