import JSON
import ListModel
import ListdTestSupport
import Testing

@testable import ListView

/// `ViewMembers` against a sorted array, over random operations.
@Suite struct ViewMembersTests {
    /// A short random key from a small alphabet, so keys repeat and are prefixes of each other.
    static func randomKey(_ values: inout Values) -> ViewKey {
        ViewKey(bytes: (0..<values.int(0...6)).map { _ in values.pick([0x00, 0x01, 0x7F, 0xFE, 0xFF]) })
    }

    /// Random inserts (more at first, so blocks split) and removals, and every
    /// query checked against the model after each step.
    @Test func randomOperationsAgreeWithASortedArray() {
        let seed = SeededGenerator.seed(for: "randomOperationsAgreeWithASortedArray")
        var values = Values(seed: seed)
        for run in 0..<SeededGenerator.cases(normal: 6, long: 200) {
            var members = ViewMembers()
            var model: [ViewKey] = []
            let steps = run % 2 == 0 ? 4_000 : 300
            for step in 0..<steps {
                let key =
                    values.bool() && !model.isEmpty
                    ? model[values.int(0...(model.count - 1))] : Self.randomKey(&values)
                let inserting = values.int(0...9) < (step < steps / 2 ? 8 : 3)
                let at = model.firstIndex { !($0 < key) } ?? model.count
                let present = at < model.count && model[at] == key
                if inserting {
                    #expect(members.insert(key) == !present, "seed \(seed)")
                    if !present { model.insert(key, at: at) }
                } else {
                    #expect(members.remove(key) == present, "seed \(seed)")
                    if present { model.remove(at: at) }
                }
                #expect(members.count == model.count, "seed \(seed)")
                let probe = Self.randomKey(&values)
                #expect(members.rank(of: probe) == (model.firstIndex { !($0 < probe) } ?? model.count), "seed \(seed)")
                #expect(members.contains(probe) == model.contains(probe), "seed \(seed)")
                let rank = values.int(-1...(model.count))
                #expect(members.key(atRank: rank) == (model.indices.contains(rank) ? model[rank] : nil), "seed \(seed)")
            }
            #expect(members.sorted == model, "seed \(seed)")
            #expect(ViewMembers(sorted: model).sorted == model, "seed \(seed)")
        }
    }

    /// Longer runs with real keys: every rank and key at rank, checked at the end.
    @Test func ranksOfAViewsKeys() throws {
        let spec = try ViewSpec(parsing: "group=status&order=-due")
        let seed = SeededGenerator.seed(for: "ranksOfAViewsKeys")
        var values = Values(seed: seed)
        var members = ViewMembers()
        var model: Set<ViewKey> = []
        for index in 0..<5_000 {
            let key = spec.key(
                of: values.model(), id: Identifier("i\(index)") ?? "x", at: ListPosition(section: 0, item: 0))
            members.insert(key)
            model.insert(key)
            if values.int(0...3) == 0, let gone = model.randomElement(using: &values.generator) {
                members.remove(gone)
                model.remove(gone)
            }
        }
        let sorted = model.sorted()
        #expect(members.sorted == sorted, "seed \(seed)")
        for (rank, key) in sorted.enumerated() {
            #expect(members.rank(of: key) == rank && members.key(atRank: rank) == key, "seed \(seed)")
        }
        let lower = ViewKey.lowerBound(group: "open")
        #expect(members.rank(of: lower) == sorted.count { $0 < lower }, "seed \(seed)")
    }

    @Test func anEmptySet() {
        let members = ViewMembers()
        #expect(members.isEmpty && members.count == 0)
        #expect(members.rank(of: ViewKey(bytes: [1])) == 0)
        #expect(members.key(atRank: 0) == nil)
        #expect(!members.contains(ViewKey(bytes: [])))
    }
}
