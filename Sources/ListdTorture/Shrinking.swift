import Foundation
import ListWire
import SectionDiff
import TortureCore

extension Run {
    /// After a run in which the oracle disagreed with a view state: the smallest list
    /// (one PUT) whose view a live instance still gets wrong, found by removing items
    /// one at a time, printed as the shortest history that shows it; or why there is none.
    func shrinkViewMismatch() -> [String] {
        guard let mismatch = ledger.firstViewMismatch else { return [] }
        let all = mismatch.list.sections.enumerated().flatMap { section in
            section.element.items.map { (section: section.offset, item: $0) }
        }
        var serial = 0
        var last: (body: String, server: String, oracle: String)?
        func body(_ items: [(section: Int, item: JSONEntry)]) -> String {
            let sections = mismatch.list.sections.enumerated().map { index, section in
                let kept = items.filter { $0.section == index }.map {
                    #"{"id":"\#($0.item.id)","model":\#($0.item.model.text)}"#
                }
                return
                    #"{"id":"\#(section.model.id)","model":\#(section.model.model.text),"items":[\#(kept.joined(separator: ","))]}"#
            }
            return #"{"sections":[\#(sections.joined(separator: ","))]}"#
        }
        func fails(_ items: [(section: Int, item: JSONEntry)]) -> Bool {
            serial += 1
            let list = "shrink-\(serial)"
            let endpoint = cluster.liveEndpoint(0)
            let text = body(items)
            defer { _ = net.send(.delete, at: endpoint, "/lists/\(list)") }
            guard case .success(let put) = net.send(.put, at: endpoint, "/lists/\(list)", body: text),
                (200..<300).contains(put.status),
                case .success(let whole) = net.send(.get, at: endpoint, "/lists/\(list)"),
                let full = whole.json.flatMap({ try? ListState(json: $0) }),
                case .success(let viewed) = net.send(.get, at: endpoint, "/lists/\(list)?\(mismatch.view.query)"),
                let view = viewed.json.flatMap({ try? ListState(json: $0) })
            else { return false }
            let expected = mismatch.view.evaluate(full)
            guard Ledger.digest(expected) != Ledger.digest(view) else { return false }
            last = (text, Ledger.describe(view), Ledger.describe(expected))
            return true
        }
        let place = "\(mismatch.list.id)@\(mismatch.list.version) ?\(mismatch.view.query)"
        guard fails(all) else {
            return [
                "shrinking the view mismatch at \(place): one PUT of that state gives a right view, so the "
                    + "fault is in the change stream, not in evaluating a snapshot; the state was "
                    + Ledger.describe(mismatch.list) + ", the follower held " + Ledger.describe(mismatch.seen)
            ]
        }
        let minimal = Shrink.minimal(all, fails: fails)
        _ = fails(minimal)
        guard let last else { return [] }
        return [
            "shortest history that shows the view mismatch at \(place) (\(minimal.count) of \(all.count) items):",
            "  PUT /lists/L \(last.body)",
            "  GET /lists/L?\(mismatch.view.query) answers \(last.server)",
            "  the oracle's view: \(last.oracle)",
        ]
    }
}
