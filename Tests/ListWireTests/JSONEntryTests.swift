import ListWire
import SectionDiff
import Testing

/// listd's diff element: ids hashed once, models compared by digest then bytes.
@Suite struct JSONEntryTests {
    @Test func modelsCompareByBytesNotCanonicalEquivalence() {
        let composed = JSONText("{\"name\":\"caf\u{E9}\"}")
        let decomposed = JSONText("{\"name\":\"cafe\u{301}\"}")
        #expect(composed.text == decomposed.text)  // Swift's String equality says equal...
        #expect(composed != decomposed)  // ...but the canonical texts differ in bytes.
        #expect(JSONText("{\"a\":1}") == JSONText("{\"a\":1}"))
        #expect(JSONText("{\"a\":1}").digest == JSONText("{\"a\":1}").digest)
    }

    @Test func diffsListdEntries() throws {
        func entry(_ id: String, _ model: String) -> JSONEntry { JSONEntry(id: id, model: JSONText(model)) }
        let old = [
            ArraySection(model: entry("fruit", "{}"), items: [entry("apple", "{\"qty\":1}"), entry("pear", "{}")])
        ]
        let new = [
            ArraySection(
                model: entry("fruit", "{\"title\":\"Fruit\"}"),
                items: [entry("pear", "{}"), entry("apple", "{\"qty\":2}")])
        ]
        let changeset = StagedChangeset(from: old, to: new)
        #expect(try changeset.apply(to: old) == new)
        // Either item could move; the subsequence kept here is apple's, so its
        // update fits in the same stage as pear's move. The section update may be
        // applied as reloadSections, so it waits for the next stage.
        let stage = try #require(changeset.stages.first)
        #expect(changeset.stages.count == 2)
        #expect(stage.sectionUpdated.isEmpty)
        #expect(changeset.stages.last?.sectionUpdated.map(\.model) == [entry("fruit", "{\"title\":\"Fruit\"}")])
        #expect(
            stage.itemMoved == [
                ItemMove(from: ElementPath(element: 1, section: 0), to: ElementPath(element: 0, section: 0))
            ])
        #expect(stage.itemUpdated.map(\.at) == [ElementPath(element: 0, section: 0)])
        #expect(stage.itemUpdated.map(\.item.model.text) == ["{\"qty\":2}"])
    }
}
