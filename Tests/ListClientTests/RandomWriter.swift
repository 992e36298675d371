import JSON
import ListClient
import ListdTestSupport
import SectionDiff
import Testing

/// Writes seeded random batches to a list and keeps the snapshot the server
/// holds after each one, so a follower's states can be checked version by version.
struct RandomWriter {
    var rng: SeededGenerator
    var counter = 0
    /// The server's sections at every version this writer saw.
    var snapshots: [Int64: ListSections] = [:]

    init(seed: UInt64) { rng = SeededGenerator(seed: seed) }

    /// A list to start from: three sections with items enough that a batch's
    /// changes stay smaller than the snapshot (else the server answers a reset).
    static let initialSections: ListSections = {
        func entry(_ id: String, _ model: String) -> JSONEntry { JSONEntry(id: id, model: JSONText(model)) }
        return [
            .init(model: entry("a", #"{"t":"A"}"#), items: (1...12).map { entry("a\($0)", "\($0)") }),
            .init(model: entry("b", "{}"), items: (1...12).map { entry("b\($0)", "\($0)") }),
            .init(model: entry("c", "{}"), items: []),
        ]
    }()

    /// One random batch that is valid against `state`.
    mutating func batch(for state: ListState) -> [ListOperation] {
        var ops: [ListOperation] = []
        var touched = Set<String>()
        var liveSections = state.sections.map(\.model.id)
        let items = state.sections.flatMap { section in section.items.map(\.id) }
        if liveSections.count > 2, Int.random(in: 0..<8, using: &rng) == 0 {
            let index = Int.random(in: 0..<liveSections.count, using: &rng)
            ops.append(.deleteSection(id: Identifier(liveSections[index])!))
            for item in state.sections[index].items { touched.insert(item.id) }
            liveSections.remove(at: index)
        }
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            counter += 1
            let model = JSONValue.number(JSONNumber(Int64(Int.random(in: 0..<1000, using: &rng))))
            let untouched = items.filter { !touched.contains($0) }
            switch Int.random(in: 0..<12, using: &rng) {
            case 0..<3:
                let section = liveSections[Int.random(in: 0..<liveSections.count, using: &rng)]
                ops.append(
                    .insertItem(
                        section: Identifier(section)!,
                        item: NewItem(id: Identifier("i\(counter)")!, model: Model(model)),
                        at: Bool.random(using: &rng) ? 0 : nil))
            case 3..<6 where !untouched.isEmpty:
                let id = untouched[Int.random(in: 0..<untouched.count, using: &rng)]
                touched.insert(id)
                ops.append(.updateItem(id: Identifier(id)!, model: Model(model)))
            case 6..<8 where !untouched.isEmpty:
                let id = untouched[Int.random(in: 0..<untouched.count, using: &rng)]
                touched.insert(id)
                ops.append(.deleteItem(id: Identifier(id)!))
            case 8..<10 where !untouched.isEmpty:
                let id = untouched[Int.random(in: 0..<untouched.count, using: &rng)]
                touched.insert(id)
                let section = liveSections[Int.random(in: 0..<liveSections.count, using: &rng)]
                ops.append(.moveItem(id: Identifier(id)!, section: Identifier(section)!, to: 0))
            case 10:
                ops.append(
                    .moveSection(
                        id: Identifier(liveSections[Int.random(in: 0..<liveSections.count, using: &rng)])!, to: 0))
            default:
                let id = "s\(counter)"
                ops.append(
                    .insertSection(
                        NewSection(
                            id: Identifier(id)!, model: ["n": model],
                            items: [NewItem(id: Identifier("si\(counter)")!, model: Model(model))]),
                        at: nil))
                liveSections.append(id)
            }
        }
        return ops
    }

    /// Writes one random batch with `client` and records the snapshot after it.
    mutating func write(_ client: ListClient, list: String, state: inout ListState) async throws {
        let answer = try await client.patchList(list, batch(for: state))
        let snapshot = try await client.list(list)
        #expect(snapshot.version == answer.to, "a single writer sees its own version")
        snapshots[snapshot.version] = snapshot.sections
        state = snapshot
    }
}

/// Checks a follower's updates: contiguous versions (no loss, no duplicate),
/// and every state equal to the server's snapshot at its version.
func checkFollow(
    _ updates: [FollowUpdate], against snapshots: [Int64: ListSections],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    var version: Int64?
    for update in updates {
        switch update {
        case .snapshot(let state), .reset(let state):
            if let version { #expect(state.version >= version, sourceLocation: sourceLocation) }
            version = state.version
        case .changes(let change):
            // Stages start where the last update ended, or (a view's follower, which takes a
            // later version silently when the writes between left its view alone) at a version
            // whose sections are the same.
            let sameView =
                version.flatMap { snapshots[$0] } != nil && snapshots[change.from] == version.flatMap { snapshots[$0] }
            #expect(
                change.from == version || (change.from > (version ?? .max) && sameView),
                "stages start where the last update ended (\(change.from), \(String(describing: version)))",
                sourceLocation: sourceLocation)
            #expect(change.state.version > change.from, sourceLocation: sourceLocation)
            version = change.state.version
        case .deleted:
            Issue.record("unexpected delete", sourceLocation: sourceLocation)
        }
        if let state = update.state, let expected = snapshots[state.version] {
            #expect(state.sections == expected, "state at \(state.version)", sourceLocation: sourceLocation)
        }
    }
}
