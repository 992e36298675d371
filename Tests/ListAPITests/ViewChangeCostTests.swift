import JSON
import ListModel
import ListStore
import ListView
import ListWire
import ListdTestSupport
import SectionDiff
import Testing

@testable import ListAPI

/// A view's answer costs what changed, not the view's size: on a 10,000-member
/// view (whole, windowed, grouped), one touched item gives condensed states with
/// a handful of real elements, every untouched stretch folded into a run, and the
/// stages they give turn the view as it was into the view as it is.
@Suite struct ViewChangeCostTests {
    static let count = 10_000

    static func row(_ index: Int, n: Int, section: Identifier) throws -> ItemRow {
        ItemRow(
            id: Identifier("i\(index)")!, section: section, key: Int64(index),
            model: try Model(parsing: Array(#"{"n":\#(n),"g":"\#(index % 7)"}"#.utf8)))
    }

    static func state(_ query: String) throws -> ViewState {
        let model = try Model(parsing: Array("{}".utf8))
        let sections = [SectionRow(id: "a", key: 0, model: model), SectionRow(id: "b", key: 1, model: model)]
        let items = try (0..<count).map { try row($0, n: $0, section: $0 < count / 2 ? "a" : "b") }
        return try ViewState(
            view: try ViewSpec(parsing: query),
            rows: ViewRows(
                head: ListHead(id: "l", epoch: "e", version: 1), name: "", sections: sections, items: items,
                indexed: false))
    }

    static func reals(_ states: CondensedListSections) -> Int {
        states.reduce(0) { sum, section in
            sum + (section.model.element == nil ? 0 : 1) + section.items.filter { $0.element != nil }.count
        }
    }

    @Test(arguments: ["", "order=-n", "order=n&limit=50", "order=-n&limit=50", "group=g&order=n", "group=g&limit=3000"])
    func oneTouchedItemGivesAHandfulOfRealElements(_ query: String) throws {
        for (moved, to) in [(5, 7_777), (9_990, -1), (4_000, 4_000)] {
            var state = try Self.state(query)
            let before = try Self.row(moved, n: moved, section: moved < Self.count / 2 ? "a" : "b")
            let after = try Self.row(moved, n: to, section: "b")
            let span = TouchedSpan(
                head: ListHead(id: "l", epoch: "e", version: 2), name: "", from: 1, sections: [:],
                items: [before.id: RowChange(before: before, after: after)])
            try state.advance(by: span)
            let change = try #require(try state.condensedChange(since: span))
            // The touched item at both ends, at most one member across the window's
            // edge, and the sections holding them.
            #expect(Self.reals(change.old) + Self.reals(change.new) <= 8, "\(query): \(change)")
            let old = try state.sections(before: span)
            let new = state.viewSections
            let staged = ListChangeset(condensedFrom: change.old, to: change.new)
            #expect(try staged.apply(to: old) == new, "\(query): item \(moved) to n = \(to)")
        }
    }
}
