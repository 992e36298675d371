// The example of README.md ("Following a list from Swift"), kept compiling by `swift build`.
//
//     swift run FollowList http://127.0.0.1:8080 groceries [UPDATES]
//
// Follows a list and hands every stage to a table view. Here the "table view"
// prints the batch calls UIKit would receive; an iOS app passes its real
// UITableView (see the doc) through the very same `apply` function.

import Foundation
import ListClient
import ListClientNetworking
import ReactiveCore
import SectionDiff

/// The calls of `UITableView` that the follow drives, so this example runs on Linux.
protocol BatchUpdatingTable: AnyObject {
    func reloadData()
    func performBatchUpdates(_ updates: () -> Void)
    func deleteSections(_ sections: IndexSet)
    func insertSections(_ sections: IndexSet)
    func reconfigureHeader(inSection section: Int)
    func moveSection(_ section: Int, toSection newSection: Int)
    func deleteRows(at indexPaths: [IndexPath])
    func insertRows(at indexPaths: [IndexPath])
    func reloadRows(at indexPaths: [IndexPath])
    func moveRow(at indexPath: IndexPath, to newIndexPath: IndexPath)
}

extension ElementPath {
    /// The same value as UIKit's `IndexPath(row: element, section: section)`.
    var indexPath: IndexPath { IndexPath(indexes: [section, element]) }
}

/// A data source that follows a list: the sections it shows are always those of
/// the last stage applied, exactly as the table view was told.
final class FollowingDataSource {
    private(set) var sections: ListSections = []
    let table: any BatchUpdatingTable

    init(table: any BatchUpdatingTable) { self.table = table }

    /// Hands one follow update to the table view: reload for a snapshot or a reset,
    /// one batch per stage for changes.
    func apply(_ update: FollowUpdate) {
        switch update {
        case .snapshot(let state), .reset(let state):
            sections = state.sections
            table.reloadData()
        case .changes(let change):
            for applied in change.stages {
                let stage = applied.stage
                // A section update is its own model (its header), named at its index before
                // the stage: reconfigure that header after the batch, where the section is then.
                // Not reloadSections, which reloads the rows too and clashes with row changes.
                let renamed = stage.sectionUpdated.map { sections[$0.at].model.id }
                table.performBatchUpdates {
                    // Inside the batch, the data source already holds the state after it.
                    sections = applied.sections
                    table.deleteSections(IndexSet(stage.sectionDeleted))
                    table.insertSections(IndexSet(stage.sectionInserted.map(\.at)))
                    for move in stage.sectionMoved { table.moveSection(move.from, toSection: move.to) }
                    table.deleteRows(at: stage.itemDeleted.map(\.indexPath))
                    table.insertRows(at: stage.itemInserted.map(\.at.indexPath))
                    table.reloadRows(at: stage.itemUpdated.map(\.at.indexPath))
                    for move in stage.itemMoved { table.moveRow(at: move.from.indexPath, to: move.to.indexPath) }
                }
                for id in renamed {
                    if let index = sections.firstIndex(where: { $0.model.id == id }) {
                        table.reconfigureHeader(inSection: index)
                    }
                }
            }
        case .deleted:
            sections = []
            table.reloadData()
        }
    }
}

/// Prints what a table view would be asked to do.
final class PrintingTable: BatchUpdatingTable {
    func reloadData() { print("reloadData") }
    func performBatchUpdates(_ updates: () -> Void) {
        print("performBatchUpdates {")
        updates()
        print("}")
    }
    func deleteSections(_ sections: IndexSet) { if !sections.isEmpty { print("  deleteSections \(Array(sections))") } }
    func insertSections(_ sections: IndexSet) { if !sections.isEmpty { print("  insertSections \(Array(sections))") } }
    func reconfigureHeader(inSection section: Int) { print("  reconfigureHeader \(section)") }
    func moveSection(_ section: Int, toSection newSection: Int) { print("  moveSection \(section) -> \(newSection)") }
    func deleteRows(at indexPaths: [IndexPath]) {
        if !indexPaths.isEmpty { print("  deleteRows \(indexPaths.map(Array.init))") }
    }
    func insertRows(at indexPaths: [IndexPath]) {
        if !indexPaths.isEmpty { print("  insertRows \(indexPaths.map(Array.init))") }
    }
    func reloadRows(at indexPaths: [IndexPath]) {
        if !indexPaths.isEmpty { print("  reloadRows \(indexPaths.map(Array.init))") }
    }
    func moveRow(at indexPath: IndexPath, to newIndexPath: IndexPath) {
        print("  moveRow \(Array(indexPath)) -> \(Array(newIndexPath))")
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 3, let baseURL = URL(string: arguments[1]) else {
    print("usage: FollowList http://127.0.0.1:8080 LIST [UPDATES]")
    exit(2)
}
let limit = arguments.count > 3 ? Int(arguments[3]) ?? .max : .max

let client = ListClient(baseURL: baseURL, token: ProcessInfo.processInfo.environment["LISTD_TOKEN"])
let dataSource = FollowingDataSource(table: PrintingTable())

// The latest state only, for code that does not animate (a badge, a widget).
let latest = client.followState(list: arguments[2])

var received = 0
do {
    for try await update in client.follow(list: arguments[2]).values {
        dataSource.apply(update)
        received += 1
        if received >= limit { break }  // leaving the loop disposes the follow and cancels its long-poll
    }
} catch {
    // Only what retrying cannot fix ends a follow: 400, 401, 403, or 404 before the first snapshot.
    FileHandle.standardError.write(Data("FollowList: \(error)\n".utf8))
    exit(1)
}
print("latest state: \(latest.state.value.map(\.description) ?? "none")")
latest.stop()
