// UIKit bindings: a table or collection view as a ``BatchUpdateTarget``, so
// ``StageApplier`` animates each stage as one `performBatchUpdates`, or calls
// `reloadData()` when the view has no window.
//
// Not compiled on Linux (no UIKit); the decisions live in StageApplier, which
// the tests drive with a fake target. Each stage already follows UIKit's rules
// (API.md, "A Stage is one table-view batch update"): deletes and updates at
// positions before the stage, inserts after it, moves from before to after, and
// `sectionUpdated` never in a section whose items change in the same stage, so
// it is safe as `reloadSections`.
#if canImport(UIKit)
    import UIKit

    extension IndexPath {
        /// The index path of a stage's `[section, item]` position.
        init(_ path: ElementPath) { self.init(item: path.element, section: path.section) }
    }

    extension UITableView: BatchUpdateTarget {
        /// Whether the table is in a window; ``StageApplier`` reloads it when it is not.
        public var isInWindow: Bool { window != nil }

        /// `reloadData()`.
        public func reloadAll() { reloadData() }

        /// One `performBatchUpdates` for `stage`, with the data source moved on inside it.
        public func performBatch(_ stage: ListStage, updateData: @escaping () -> Void) {
            performBatchUpdates {
                updateData()
                deleteSections(IndexSet(stage.sectionDeleted), with: .fade)
                insertSections(IndexSet(stage.sectionInserted.map(\.at)), with: .fade)
                reloadSections(IndexSet(stage.sectionUpdated.map(\.at)), with: .none)
                for move in stage.sectionMoved { moveSection(move.from, toSection: move.to) }
                deleteRows(at: stage.itemDeleted.map(IndexPath.init), with: .fade)
                insertRows(at: stage.itemInserted.map { IndexPath($0.at) }, with: .fade)
                reloadRows(at: stage.itemUpdated.map { IndexPath($0.at) }, with: .none)
                for move in stage.itemMoved { moveRow(at: IndexPath(move.from), to: IndexPath(move.to)) }
            }
        }
    }

    extension UICollectionView: BatchUpdateTarget {
        /// Whether the collection view is in a window; ``StageApplier`` reloads it when it is not.
        public var isInWindow: Bool { window != nil }

        /// `reloadData()`.
        public func reloadAll() { reloadData() }

        /// One `performBatchUpdates` for `stage`, with the data source moved on inside it.
        public func performBatch(_ stage: ListStage, updateData: @escaping () -> Void) {
            performBatchUpdates {
                updateData()
                deleteSections(IndexSet(stage.sectionDeleted))
                insertSections(IndexSet(stage.sectionInserted.map(\.at)))
                reloadSections(IndexSet(stage.sectionUpdated.map(\.at)))
                for move in stage.sectionMoved { moveSection(move.from, toSection: move.to) }
                deleteItems(at: stage.itemDeleted.map(IndexPath.init))
                insertItems(at: stage.itemInserted.map { IndexPath($0.at) })
                reloadItems(at: stage.itemUpdated.map { IndexPath($0.at) })
                for move in stage.itemMoved { moveItem(at: IndexPath(move.from), to: IndexPath(move.to)) }
            }
        }
    }
#endif
