import Foundation
import ListdTestSupport
import Testing

@testable import SectionDiff

/// The shapes of random change the round trips draw from.
enum Profile: CaseIterable {
    case empty, flat, manySections, movedSections, acrossSections, leavingAndEntering, updatesWithMoves, everything
}

/// A random old state and a random new state made from it by the profile's changes.
struct RandomCase {
    var old: [TestSection] = []
    var new: [TestSection] = []
    var profile: Profile

    init(seed: UInt64, profile: Profile, maxItems: Int = 12, uniqueIDs: Bool = true) {
        self.profile = profile
        var random = SeededGenerator(seed: seed)
        var nextID = 0
        func fresh() -> Int {
            nextID += 1
            return uniqueIDs ? nextID : Int.random(in: 0..<6, using: &random)
        }
        func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &random) < p }

        let sectionCount: Int
        switch profile {
        case .empty: sectionCount = Int.random(in: 0...1, using: &random)
        case .flat, .updatesWithMoves: sectionCount = 1
        default: sectionCount = Int.random(in: 1...6, using: &random)
        }
        for _ in 0..<sectionCount {
            let items = (0..<Int.random(in: 0...maxItems, using: &random)).map { _ in TestItem(id: fresh()) }
            old.append(section(fresh(), items: items))
        }
        var new = old
        let moving = profile == .flat ? 0.3 : 0.15

        if profile == .empty {
            if chance(0.5) { new = [] } else if chance(0.5) { old = [] }
            if chance(0.5) {
                new.append(
                    section(
                        fresh(), items: (0..<Int.random(in: 0...3, using: &random)).map { _ in TestItem(id: fresh()) }))
            }
            self.new = new
            return
        }
        let sectionWork = [.manySections, .movedSections, .leavingAndEntering, .everything].contains(profile)
        let itemsAcross = [.acrossSections, .leavingAndEntering, .everything, .manySections].contains(profile)

        // Items that leave sections about to be deleted, to be placed elsewhere.
        var homeless: [TestItem] = []
        if sectionWork {
            var index = 0
            while index < new.count {
                if chance(0.25) {
                    let removed = new.remove(at: index)
                    if profile != .manySections || chance(0.5) {
                        homeless += removed.items.filter { _ in chance(0.6) }
                    }
                } else {
                    index += 1
                }
            }
            for _ in 0..<Int.random(in: 0...2, using: &random) {
                let items = (0..<Int.random(in: 0...3, using: &random)).map { _ in TestItem(id: fresh()) }
                new.insert(section(fresh(), items: items), at: Int.random(in: 0...new.count, using: &random))
            }
        }
        if sectionWork || profile == .movedSections {
            for _ in 0..<Int.random(in: 0...2, using: &random) where new.count > 1 {
                let moved = new.remove(at: Int.random(in: 0..<new.count, using: &random))
                new.insert(moved, at: Int.random(in: 0...new.count, using: &random))
            }
            for index in new.indices where chance(0.2) { new[index].model.version += 1 }
        }
        if new.isEmpty && !homeless.isEmpty { new.append(section(fresh(), [])) }
        for item in homeless {
            let s = Int.random(in: 0..<new.count, using: &random)
            new[s].items.insert(item, at: Int.random(in: 0...new[s].items.count, using: &random))
        }
        // Item deletes, inserts, moves, updates.
        for s in new.indices {
            new[s].items.removeAll { _ in chance(0.15) }
            for _ in 0..<Int.random(in: 0...2, using: &random) {
                new[s].items.insert(TestItem(id: fresh()), at: Int.random(in: 0...new[s].items.count, using: &random))
            }
        }
        let moves = new.reduce(0) { $0 + $1.items.count }
        for _ in 0..<moves where chance(moving) {
            let from = Int.random(in: 0..<new.count, using: &random)
            guard !new[from].items.isEmpty else { continue }
            let item = new[from].items.remove(at: Int.random(in: 0..<new[from].items.count, using: &random))
            let to = itemsAcross ? Int.random(in: 0..<new.count, using: &random) : from
            new[to].items.insert(item, at: Int.random(in: 0...new[to].items.count, using: &random))
        }
        let updating = profile == .updatesWithMoves ? 0.3 : 0.1
        for s in new.indices {
            for i in new[s].items.indices where chance(updating) { new[s].items[i].version += 1 }
        }
        self.new = new
    }
}

@Suite struct RoundTripTests {
    /// 24,000 cases normally (a few seconds); `LISTD_LONG_TESTS=1` for 2,400,000.
    static let caseCount = ProcessInfo.processInfo.environment["LISTD_LONG_TESTS"] == "1" ? 2_400_000 : 24_000
    static let baseSeed: UInt64 = 0x5EC7_10D1_FF00_0001

    @Test(arguments: Profile.allCases)
    func randomChangesRoundTripThroughUIKitRules(_ profile: Profile) throws {
        let perProfile = Self.caseCount / Profile.allCases.count
        let profileIndex = UInt64(Profile.allCases.firstIndex(of: profile) ?? 0)
        // How many cases changed something (most do; the .empty profile has
        // about 70%): a generator that drifted into
        // producing equal old and new lists would make every round trip pass trivially.
        var changed = 0
        for number in 0..<perProfile {
            let seed = Self.baseSeed &+ profileIndex << 40 &+ UInt64(number)
            let random = RandomCase(seed: seed, profile: profile)
            let verified = try verify(random.old, random.new, seed: seed)
            if profile == .flat, let before = random.old.first, let after = random.new.first {
                // Moves must be exactly the survivors minus their longest increasing subsequence.
                let oldIndex = Dictionary(uniqueKeysWithValues: before.items.enumerated().map { ($1.id, $0) })
                let survivors = after.items.compactMap { oldIndex[$0.id] }
                let minimum = survivors.count - naiveLISLength(survivors)
                #expect(verified.changeset.itemMoveCount == minimum, "flat moves, seed \(seed)")
            }
            if !verified.changeset.stages.isEmpty { changed += 1 }
        }
        #expect(changed > perProfile / 2, "\(changed) of \(perProfile) cases changed anything")
    }

    @Test func largerRandomChangesRoundTrip() throws {
        for number in 0..<200 {
            let seed = Self.baseSeed &+ 0xB16 << 40 &+ UInt64(number)
            let random = RandomCase(seed: seed, profile: .everything, maxItems: 80)
            try verify(random.old, random.new, seed: seed)
        }
    }

    @Test func duplicateIdentitiesDoNotCrashAndAreDeterministic() throws {
        for number in 0..<2_000 {
            let seed = Self.baseSeed &+ 0xD0B << 40 &+ UInt64(number)
            let random = RandomCase(seed: seed, profile: .everything, maxItems: 6, uniqueIDs: false)
            let verified = try verify(random.old, random.new, seed: seed, uniqueIdentities: false)
            #expect(TestChangeset(from: random.old, to: random.new) == verified.changeset, "seed \(seed)")
        }
    }
}
