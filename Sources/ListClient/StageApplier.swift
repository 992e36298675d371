/// What ``StageApplier`` drives: a `UITableView` or `UICollectionView` (their
/// conformances are in this module under `#if canImport(UIKit)`), an `NSTableView`
/// of the app's own, or a test's fake.
///
/// The applier decides between animating and reloading; the target only does
/// what it is told.
@MainActor
public protocol BatchUpdateTarget: AnyObject {
    /// Whether the view is in a window. A view that is not (a tab not shown, a
    /// controller not yet on screen) is reloaded instead of animated: UIKit
    /// checks a batch against the counts it cached when it last drew, so a batch
    /// update of a view off screen can throw an inconsistency exception, and
    /// animating nobody sees is wasted work (what DifferenceKit and RxDataSources do).
    var isInWindow: Bool { get }
    /// Reloads everything from the data source (`reloadData()`).
    func reloadAll()
    /// Runs one batch (`performBatchUpdates`): calls `updateData` first, which moves
    /// the data source to the stage's sections, then makes the stage's deletes,
    /// inserts, moves and updates.
    func performBatch(_ stage: ListStage, updateData: @escaping () -> Void)
}

/// Applies follow updates to a ``BatchUpdateTarget`` the way UIKit wants them:
/// a snapshot, a reset or a deletion is a reload; a change is one batch update
/// per stage, each moving the data source to that stage's sections, unless the
/// view is off screen, when it is one reload at the change's final state.
///
/// ```swift
/// for try await update in client.updates(list: "groceries") {
///     StageApplier.apply(update, to: tableView) { self.sections = $0 }
/// }
/// ```
@MainActor
public enum StageApplier {
    /// What ``apply(_:to:setSections:)`` did.
    public enum Outcome: Sendable, Equatable {
        /// The data was set and the view reloaded (a snapshot, reset, deletion, or a change off screen).
        case reloaded
        /// Each stage ran as one batch update.
        case animated(stages: Int)
        /// Nothing to show (a change with no stages).
        case unchanged
    }

    /// Applies `update` to `target`; `setSections` sets the data source to the
    /// sections it is given (`[]` after a deletion), always before the view asks.
    @discardableResult
    public static func apply(
        _ update: FollowUpdate, to target: some BatchUpdateTarget, setSections: @escaping (ListSections) -> Void
    ) -> Outcome {
        switch update {
        case .snapshot(let state), .reset(let state): return reload(state.sections, target, setSections)
        case .deleted: return reload([], target, setSections)
        case .changes(let change):
            return animate(
                change.stages.map { ($0.stage, $0.sections) }, final: change.state.sections, target, setSections)
        }
    }

    /// Applies a decoded update: `setSnapshot` gets the decoded state the view
    /// must show (for a change, the state after each stage), `nil` after a deletion.
    @discardableResult
    public static func apply<Model: Sendable>(
        _ update: DecodedUpdate<Model>, to target: some BatchUpdateTarget,
        setSnapshot: @escaping (DecodedSnapshot<Model>?) -> Void
    ) -> Outcome {
        guard case .changes(let change) = update.update, change.stages.count == update.stages.count else {
            return reload(update.snapshot, target, setSnapshot)
        }
        return animate(
            zip(change.stages, update.stages).map { ($0.stage, Optional($1)) }, final: update.snapshot, target,
            setSnapshot)
    }

    private static func reload<Data>(_ data: Data, _ target: some BatchUpdateTarget, _ set: (Data) -> Void) -> Outcome {
        set(data)
        target.reloadAll()
        return .reloaded
    }

    private static func animate<Data>(
        _ stages: [(ListStage, Data)], final: Data, _ target: some BatchUpdateTarget, _ set: @escaping (Data) -> Void
    ) -> Outcome {
        guard !stages.isEmpty else { return .unchanged }
        guard target.isInWindow else { return reload(final, target, set) }
        for (stage, data) in stages {
            target.performBatch(stage) { set(data) }
        }
        return .animated(stages: stages.count)
    }
}
