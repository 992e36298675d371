import JSON
import ListModel
import ListStore
import ListWire
import ListdTestSupport
import PostgresStore
import SectionDiff
import Synchronization
import Testing

/// The incremental change engine against the old way as the oracle: random op
/// batches and PUTs on random lists (some large, some renumbering all the
/// time); for random earlier versions V, the store's net change since V, staged
/// by SectionDiff, applied stage by stage by an independent UIKit batch-update
/// model (a section update is a `reloadSections`) to the snapshot kept at V,
/// gives exactly the current snapshot, and reports no more moves than the
/// writes since V really made. Every write's own recorded change is checked the
/// same way.
///
/// Default: 16 seeds × 150 writes, about 2,400 writes and 9,000 answers
/// checked; `LISTD_LONG_TESTS=1`: 400 seeds × 1,500 writes. On PostgreSQL the
/// same on one store (two writer sessions, each with rank indexes of its own)
/// and on two stores over one database (two instances: every write, read and
/// question goes to a random one), 4 seeds each by default (seeds 1–4: renumbering,
/// evicting and large-list cases).
@Suite struct ChangeEnginePropertyTests {
    static let seeds: [UInt64] = longTests ? Array(1...400) : Array(1...16)
    static let writesPerSeed = longTests ? 1_500 : 150

    /// Where the writes go: one SQLite store, one PostgreSQL store, or two
    /// PostgreSQL stores (instances) on one database.
    enum Deployment: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case sqlite, postgres, postgresPair

        var testDescription: String { rawValue }
    }

    static var cases: [(Deployment, UInt64)] {
        var cases = seeds.map { (Deployment.sqlite, $0) }
        if TestPostgres.enabled {
            let postgresSeeds = longTests ? Array(seeds.prefix(100)) : Array(seeds.prefix(4))
            cases += postgresSeeds.map { (.postgres, $0) } + postgresSeeds.map { (.postgresPair, $0) }
        }
        return cases
    }

    /// Runs `body` with the deployment's stores (one, or two on one database).
    func withStores(
        _ deployment: Deployment, _ configuration: StoreConfiguration, _ body: ([any TestedStore]) async throws -> Void
    ) async throws {
        switch deployment {
        case .sqlite: try await withStore(.sqlite, configuration) { try await body([$0]) }
        case .postgres: try await withStore(.postgres, configuration) { try await body([$0]) }
        case .postgresPair:
            var configuration = configuration
            configuration.migrationsDirectory = migrationsDirectory
            let database = try await TestPostgres.createDatabase()
            defer { database.drop() }
            let first = try await PostgresStore(url: database.url, configuration: configuration)
            let second: PostgresStore
            do {
                second = try await PostgresStore(url: database.url, configuration: configuration)
            } catch {
                await first.close()
                throw error
            }
            do {
                try await body([first, second])
            } catch {
                await first.close()
                await second.close()
                throw error
            }
            await first.close()
            await second.close()
        }
    }

    @Test(arguments: cases)
    func netChangesReplayToTheCurrentSnapshot(_ deployment: Deployment, seed: UInt64) async throws {
        var rng = SeededGenerator(seed: seed)
        // Every fourth seed starts from a large list; odd seeds renumber often.
        let large = seed % 4 == 0
        var configuration = StoreConfiguration(
            fullSync: false, maxModelBytes: 48, historyVersions: 10_000, positionGap: seed % 2 == 1 ? 4 : 1 << 20,
            hotListMemory: seed % 3 == 0 ? 1 : 64 << 20)
        // The store recovers from a stale rank index (rebuilds it, or answers a
        // reset); here it must never have to.
        let inconsistencies = Inconsistencies()
        configuration.onInconsistency = { detail in inconsistencies.record(detail) }
        defer { #expect(inconsistencies.all == [], "seed \(seed): the store found itself inconsistent") }
        // With a one-byte budget, a second list written at every step evicts the
        // first one's rank index each time (rebuilt from the database when needed).
        let evicting = seed % 3 == 0
        try await withStores(deployment, configuration) { stores in
            // One store: no draw, so SQLite's seeds replay as before.
            func pick(_ rng: inout SeededGenerator) -> any TestedStore {
                stores.count == 1 ? stores[0] : stores[Int.random(in: 0..<stores.count, using: &rng)]
            }
            let store = stores[0]
            let list = id("l")
            var body: [NewSection] = []
            if large {
                let count = longTests ? 20_000 : 3_000
                body = [
                    NewSection(id: id("big"), items: (0..<count).map { NewItem(id: id("b\($0)")) }),
                    NewSection(id: id("s0"), items: []),
                ]
            }
            let created = try await store.createList(id: list, name: "start", sections: body)
            let other = id("other")
            if evicting {
                _ = try await store.createList(
                    id: other, name: "",
                    sections: [NewSection(id: id("o"), items: (0..<20).map { NewItem(id: id("o\($0)")) })])
            }
            var states: [Int64: ListSnapshot] = [1: created]
            // Per version: ids of sections and items a write may have moved.
            var movedAt: [Int64: (sections: Set<Identifier>, items: Set<Identifier>, everything: Bool)] = [:]
            var version: Int64 = 1
            var checked = 0
            for step in 0..<Self.writesPerSeed {
                // Milliseconds of CPU per step: let the cooperative pool's
                // other tasks (two threads on two cores) run between steps.
                await Task.yield()
                let context = "seed \(seed) step \(step)"
                var reference = ReferenceList(name: "start", maxModelBytes: 48)
                reference.sections = states[version]?.sections ?? []
                let result: WriteResult
                var moved = (sections: Set<Identifier>(), items: Set<Identifier>(), everything: false)
                do throws(StoreError) {
                    if Int.random(in: 0..<15, using: &rng) == 0 {
                        let (name, sections) = HistoryPropertyTests.randomBody(from: reference, using: &rng)
                        moved.everything = true
                        result = try await pick(&rng).replace(
                            list, name: name, sections: sections.map(\.asNew), expectedVersion: nil)
                    } else {
                        let ops = HistoryPropertyTests.randomOps(from: reference, using: &rng)
                        for op in ops {
                            switch op {
                            case .moveItem(let id, _, _): moved.items.insert(id)
                            case .moveSection(let id, _): moved.sections.insert(id)
                            // Deleted and inserted again elsewhere since V: a move in the net change.
                            case .insertItem(_, let item, _): if let id = item.id { moved.items.insert(id) }
                            case .insertSection(let section, _):
                                if let id = section.id { moved.sections.insert(id) }
                                for item in section.items { if let id = item.id { moved.items.insert(id) } }
                            default: break
                            }
                        }
                        result = try await pick(&rng).apply(ops, to: list, expectedVersion: nil)
                    }
                } catch {
                    continue
                }
                if evicting {
                    let item = id("o\(Int.random(in: 0..<20, using: &rng))")
                    _ = try await pick(&rng).apply(
                        [.moveItem(id: item, section: nil, to: Int.random(in: 0..<20, using: &rng))], to: other,
                        expectedVersion: nil)
                }
                guard result.changed else { continue }
                let snapshot = try await pick(&rng).snapshot(of: list)
                #expect(snapshot.version == result.version, "\(context)")
                let previous = try #require(states[version])
                version = result.version
                states[version] = snapshot
                movedAt[version] = moved

                // The write's own recorded change.
                let recorded = try #require(result.change, "\(context): no recorded change")
                try check(recorded, from: previous, to: snapshot, movedSince: [moved], "\(context) write")
                checked += 1

                // Net changes since random earlier versions.
                var asked: Set<Int64> = [version - 1]
                for _ in 0..<3 { asked.insert(Int64.random(in: 1...version, using: &rng)) }
                for since in asked {
                    guard let old = states[since] else { continue }
                    switch try await pick(&rng).changes(of: list, since: since) {
                    case .reset:
                        Issue.record("\(context): a reset for v\(since), inside the history")
                    case .change(let change):
                        #expect(change.from == since && change.to == version, "\(context)")
                        let moves = (since + 1...max(since + 1, version)).compactMap { movedAt[$0] }
                        try check(
                            change, from: old, to: snapshot, movedSince: since == version ? [] : moves,
                            "\(context) since v\(since)")
                        checked += 1
                    }
                }
            }
            #expect(checked > Self.writesPerSeed, "seed \(seed): too few answers checked (\(checked))")
            // Above the current version, and below the kept history: resets.
            if case .change = try await store.changes(of: list, since: version + 1) {
                Issue.record("seed \(seed): a change for a version above the current one")
            }
        }
    }

    func check(
        _ change: NetChange, from old: ListSnapshot, to new: ListSnapshot,
        movedSince moves: [(sections: Set<Identifier>, items: Set<Identifier>, everything: Bool)],
        _ context: String
    ) throws {
        let changeset = StagedChangeset(condensedFrom: change.old, to: change.new)
        var state = UIKitBatchModel.State(old)
        var reportedItemMoves = 0
        var reportedSectionMoves = 0
        for (number, stage) in changeset.stages.enumerated() {
            #expect(!stage.isEmpty, "\(context): empty stage \(number)")
            do {
                state = try UIKitBatchModel.apply(stage, to: state)
            } catch {
                Issue.record("\(context): UIKit rejects stage \(number): \(error)\n\(stage)")
                return
            }
            reportedItemMoves += stage.itemMoved.count
            reportedSectionMoves += stage.sectionMoved.count
        }
        #expect(state == UIKitBatchModel.State(new), "\(context): the stages do not end at the current snapshot")
        if !moves.contains(where: \.everything) {
            let survivingItems = Set(old.sections.flatMap(\.items).map(\.id))
                .intersection(new.sections.flatMap(\.items).map(\.id))
            let survivingSections = Set(old.sections.map(\.id)).intersection(new.sections.map(\.id))
            let movedItems = moves.reduce(into: Set<Identifier>()) { $0.formUnion($1.items) }
                .intersection(survivingItems)
            let movedSections = moves.reduce(into: Set<Identifier>()) { $0.formUnion($1.sections) }
                .intersection(survivingSections)
            // Items also move when they leave a deleted section or enter an inserted
            // one; those were moved by a moveItem op too, so the bound holds.
            #expect(
                reportedItemMoves <= movedItems.count + itemsParked(old, new),
                "\(context): \(reportedItemMoves) item moves reported, \(movedItems.count) made: \(changeset.stages)")
            #expect(
                reportedSectionMoves <= movedSections.count,
                "\(context): \(reportedSectionMoves) section moves reported, \(movedSections.count) made")
        }
    }

    /// Items going from a deleted section to an inserted one take two moves (parked on the way).
    func itemsParked(_ old: ListSnapshot, _ new: ListSnapshot) -> Int {
        let oldSections = Set(old.sections.map(\.id))
        let newSections = Set(new.sections.map(\.id))
        var sectionOf: [Identifier: Identifier] = [:]
        for section in old.sections { for item in section.items { sectionOf[item.id] = section.id } }
        var count = 0
        for section in new.sections where !oldSections.contains(section.id) {
            for item in section.items {
                if let from = sectionOf[item.id], !newSections.contains(from) { count += 1 }
            }
        }
        return count
    }
}

extension UIKitBatchModel.State {
    /// A snapshot as the model's state.
    init(_ snapshot: ListSnapshot) {
        self.init(
            sections: snapshot.sections.map { section in
                Section(
                    id: section.id.rawValue, model: section.model.canonicalText,
                    items: section.items.map { Item(id: $0.id.rawValue, model: $0.model.canonicalText) })
            })
    }
}

/// What a store reported to ``StoreConfiguration/onInconsistency``, from its own threads.
final class Inconsistencies: Sendable {
    private let details = Mutex<[String]>([])

    func record(_ detail: String) { details.withLock { $0.append(detail) } }

    var all: [String] { details.withLock { $0 } }
}
