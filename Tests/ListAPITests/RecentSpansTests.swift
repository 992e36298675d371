import JSON
import ListModel
import ListStore
import ListdTestSupport
import Synchronization
import Testing

@testable import ListAPI

/// The recent commits' rings against an independent model: a list whose every
/// version is kept whole (each entity's row at each version), written by random
/// commits of one to three entities (made, changed, moved, deleted, made and
/// deleted within the commit, or listed unchanged as a holding section), with
/// commits that carry no rows, commits heard twice, and new epochs among them.
/// For random spans, the ring's merged span names exactly the entities whose
/// rows differ between its ends (and may name more, unchanged), each with its
/// rows at both ends, and it gives a span exactly when the model says the
/// ring covers it: an unbroken run of commits since the last break, at most
/// `maxVersions` long.
@Suite struct RecentSpansTests {
    typealias Rows = [Identifier: ItemRow]

    static func row(_ id: Identifier, _ random: inout SeededGenerator) throws -> ItemRow {
        ItemRow(
            id: id, section: Identifier("s\(Int.random(in: 0..<3, using: &random))")!,
            key: Int64.random(in: 0..<100, using: &random),
            model: try Model(parsing: Array("{\"n\":\(Int.random(in: 0..<4, using: &random))}".utf8)))
    }

    @Test(arguments: Array(UInt64(1)...40))
    func mergedSpansMatchTheModel(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let maxVersions = [1, 3, 16, 4_096][Int(seed % 4)]
        // Half the seeds also catch the path index up as commits are recorded (in place).
        let spans = RecentSpans(
            maxVersions: maxVersions, indexAhead: seed % 2 == 0 ? Int64(seed % 5 + 1) : 1 << 40, schedule: { $0() })
        let list: Identifier = "l"
        spans.watch(list)
        var epoch = "e0"
        // The model: the list's rows at every version of the current epoch.
        var states: [Int64: Rows] = [0: [:]]
        var version: Int64 = 0
        /// The earliest version the ring should cover from (nil: nothing yet).
        var runStart: Int64?
        var checked = 0
        var given = 0
        /// The versions whose commit changed a section, in this epoch.
        var sectionVersions = Set<Int64>()
        for _ in 0..<300 {
            let roll = Int.random(in: 0..<40, using: &random)
            if roll == 0 {
                // A new epoch (the list deleted and made again): versions start over.
                spans.record(Commit(list: list, epoch: epoch, version: version, deleted: true))
                epoch = "e\(Int(epoch.dropFirst())! + 1)"
                states = [0: [:]]
                version = 0
                runStart = nil
                sectionVersions = []
                continue
            }
            if roll == 1, version > 0 {
                // Heard again (another instance's copy of a known commit, with no rows): no change.
                spans.record(
                    Commit(
                        list: list, epoch: epoch, version: version - Int64.random(in: 0...1, using: &random),
                        deleted: false))
            }
            var rows = try #require(states[version])
            var touched: [Identifier: RowChange<ItemRow>] = [:]
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let id = Identifier("i\(Int.random(in: 0..<12, using: &random))")!
                let before = states[version]?[id]
                switch Int.random(in: 0..<6, using: &random) {
                case 0: rows[id] = nil
                case 1 where before == nil:
                    // Made and deleted within the commit: listed with no row at either end.
                    rows[id] = nil
                    touched[id] = RowChange(before: nil, after: nil)
                    continue
                case 2:
                    break  // listed, unchanged
                default: rows[id] = try Self.row(id, &random)
                }
                touched[id] = RowChange(before: before, after: rows[id])
            }
            version += 1
            states[version] = rows
            // One commit in eight also changes a section (its key): every view's
            // filtered span takes it whatever its items held.
            var sections: [Identifier: RowChange<SectionRow>] = [:]
            if Int.random(in: 0..<8, using: &random) == 0 {
                let model = try Model(parsing: Array("{}".utf8))
                sections["s0"] = RowChange(
                    before: SectionRow(id: "s0", key: version - 1, model: model),
                    after: SectionRow(id: "s0", key: version, model: model))
                sectionVersions.insert(version)
            }
            let carriesRows = Int.random(in: 0..<15, using: &random) != 0
            spans.record(
                Commit(
                    list: list, epoch: epoch, version: version, deleted: false,
                    touched: carriesRows ? TouchedRows(sections: sections, items: touched) : nil))
            if carriesRows {
                runStart = max(runStart ?? (version - 1), version - Int64(maxVersions))
            } else {
                runStart = nil
            }
            // Random spans within the epoch.
            for _ in 0..<3 {
                // Half of them recent (what a woken follower asks), half anywhere.
                let recent = Bool.random(using: &random)
                let head = recent ? version : Int64.random(in: 0...version, using: &random)
                let since =
                    recent
                    ? max(0, head - Int64.random(in: 0...2, using: &random))
                    : Int64.random(in: 0...head, using: &random)
                let span = spans.span(
                    of: list, since: since, through: ListHead(id: list, epoch: epoch, version: head), name: "n")
                let covered = runStart.map { since >= $0 } ?? false
                #expect(
                    (span != nil) == covered,
                    "seed \(seed) v\(version): since \(since) through \(head), run from \(String(describing: runStart))"
                )
                guard let span else { continue }
                given += 1
                let old = try #require(states[since])
                let new = try #require(states[head])
                #expect(span.from == since && span.head.version == head && span.head.epoch == epoch)
                for id in Set(old.keys).union(new.keys) where old[id] != new[id] {
                    #expect(span.items[id] != nil, "seed \(seed): \(id) changed from v\(since) to v\(head)")
                }
                for (id, change) in span.items {
                    #expect(
                        change.before == old[id] && change.after == new[id],
                        "seed \(seed): \(id) from v\(since) to v\(head)")
                }
                // Filtered by a view's condition: the members (items holding the value)
                // at `since`, moved by the filtered span, are the members at `head`.
                let value = try Model(parsing: Array("\(Int.random(in: 0..<4, using: &random))".utf8)).jsonValue()
                func members(_ rows: Rows) -> Rows {
                    rows.filter { (try? $0.value.model.jsonValue().value(atPath: ["n"])) == value }
                }
                let filtered = try #require(
                    spans.span(
                        of: list, since: since, through: ListHead(id: list, epoch: epoch, version: head), name: "n",
                        matching: (["n"], value)))
                var moved = members(old)
                for (id, change) in filtered.items {
                    moved[id] = change.after.flatMap { members([id: $0])[id] }
                }
                #expect(moved == members(new), "seed \(seed): members of n = \(value) from v\(since) to v\(head)")
                #expect(filtered.items.count <= span.items.count)
                // A section changed between the ends reaches every filtered span.
                #expect(
                    filtered.sections.isEmpty == sectionVersions.allSatisfy { $0 <= since || $0 > head },
                    "seed \(seed): sections from v\(since) to v\(head)")
                checked += 1
            }
            // Another epoch's head is never answered from this run.
            #expect(
                spans.span(
                    of: list, since: version, through: ListHead(id: list, epoch: "other", version: version), name: "n")
                    == nil)
        }
        #expect(given > 100, "seed \(seed): the ring gave few spans (\(given))")
        #expect(checked == given)
    }

    /// A path asked about once is indexed as commits come, off the asking path:
    /// once `indexAhead` commits wait past it, a catch-up is scheduled and
    /// indexes them all, so a follower asking after a burst parses little.
    @Test func aPathAskedAboutIsIndexedAheadOfTheNextAsk() throws {
        let scheduled = Mutex<[@Sendable () -> Void]>([])
        let spans = RecentSpans(indexAhead: 8, schedule: { job in scheduled.withLock { $0.append(job) } })
        spans.watch("a")
        func commit(_ version: Int64) throws -> Commit {
            let id = Identifier("i\(version % 5)")!
            let row = ItemRow(
                id: id, section: "s", key: 1, model: try Model(parsing: Array("{\"n\":\(version % 3)}".utf8)))
            return Commit(
                list: "a", epoch: "e", version: version, deleted: false,
                touched: TouchedRows(sections: [:], items: [id: RowChange(before: nil, after: row)]))
        }
        for version in Int64(1)...3 { spans.record(try commit(version)) }
        #expect(spans.indexed("a", path: ["n"]) == nil)
        let one = try Model(parsing: Array("1".utf8)).jsonValue()
        let head = { (version: Int64) in ListHead(id: "a", epoch: "e", version: version) }
        #expect(spans.span(of: "a", since: 0, through: head(3), name: "", matching: (["n"], one))?.items.count == 1)
        #expect(spans.indexed("a", path: ["n"]) == 3)
        // Seven more commits wait: no catch-up; the eighth schedules one, and only one.
        for version in Int64(4)...10 { spans.record(try commit(version)) }
        #expect(scheduled.withLock { $0.count } == 0)
        for version in Int64(11)...14 { spans.record(try commit(version)) }
        let jobs = scheduled.withLock { jobs in
            defer { jobs.removeAll() }
            return jobs
        }
        #expect(jobs.count == 1)
        #expect(spans.indexed("a", path: ["n"]) == 3)
        for job in jobs { job() }
        #expect(spans.indexed("a", path: ["n"]) == 14)
        // The index it built answers as an ask's would: the commits whose item held 1.
        let span = try #require(spans.span(of: "a", since: 3, through: head(14), name: "", matching: (["n"], one)))
        #expect(Set(span.items.keys) == Set([4, 7, 10, 13].map { Identifier("i\($0 % 5)")! }))
        for version in Int64(15)...23 { spans.record(try commit(version)) }
        #expect(scheduled.withLock { $0.count } == 1)
    }

    @Test func onlyWatchedListsAreRecordedAndTheLastUnwatchDropsTheRing() throws {
        let spans = RecentSpans()
        let rows = TouchedRows(sections: [:], items: [:])
        spans.record(Commit(list: "a", epoch: "e", version: 1, deleted: false, touched: rows))
        #expect(spans.usage.lists == 0)
        spans.watch("a")
        spans.watch("a")
        spans.record(Commit(list: "a", epoch: "e", version: 2, deleted: false, touched: rows))
        #expect(spans.usage.lists == 1 && spans.usage.versions == 1)
        spans.unwatch("a")
        #expect(spans.usage.lists == 1)
        spans.unwatch("a")
        #expect(spans.usage.lists == 0)
    }

    @Test func theRingKeepsAtMostItsRowsButAlwaysItsLastCommit() throws {
        let spans = RecentSpans(maxVersions: 100, maxRows: 5)
        spans.watch("a")
        func commit(_ version: Int64, items: Int) throws -> Commit {
            var touched: [Identifier: RowChange<ItemRow>] = [:]
            for index in 0..<items {
                let id = Identifier("i\(version)-\(index)")!
                touched[id] = RowChange(
                    before: nil,
                    after: ItemRow(id: id, section: "s", key: 1, model: try Model(parsing: Array("1".utf8))))
            }
            return Commit(
                list: "a", epoch: "e", version: version, deleted: false,
                touched: TouchedRows(sections: [:], items: touched))
        }
        for version in Int64(1)...4 { spans.record(try commit(version, items: 2)) }
        // 8 rows over 4 commits: the two oldest go.
        #expect(spans.usage.versions == 2)
        #expect(spans.span(of: "a", since: 1, through: ListHead(id: "a", epoch: "e", version: 4), name: "") == nil)
        #expect(
            spans.span(of: "a", since: 2, through: ListHead(id: "a", epoch: "e", version: 4), name: "")?.items.count
                == 4)
        spans.record(try commit(5, items: 9))
        #expect(spans.usage.versions == 1)
        #expect(
            spans.span(of: "a", since: 4, through: ListHead(id: "a", epoch: "e", version: 5), name: "")?.items.count
                == 9)
    }

    @Test func listsShareTheTotalRowsAndAListRecordingBeyondItLetsGoOfItsOwn() throws {
        let spans = RecentSpans(maxVersions: 100, maxRows: 100, maxTotalRows: 10)
        func commit(_ list: Identifier, _ version: Int64) throws -> Commit {
            let id = Identifier("i\(version)")!
            let row = ItemRow(id: id, section: "s", key: 1, model: try Model(parsing: Array("1".utf8)))
            return Commit(
                list: list, epoch: "e", version: version, deleted: false,
                touched: TouchedRows(sections: [:], items: [id: RowChange(before: nil, after: row)]))
        }
        spans.watch("a")
        spans.watch("b")
        for version in Int64(1)...8 { spans.record(try commit("a", version)) }
        #expect(spans.usage.rows == 8)
        for version in Int64(1)...8 { spans.record(try commit("b", version)) }
        // b keeps what is left (2 rows); a keeps its 8.
        #expect(spans.usage.rows == 10)
        #expect(spans.span(of: "b", since: 6, through: ListHead(id: "b", epoch: "e", version: 8), name: "") != nil)
        #expect(spans.span(of: "b", since: 5, through: ListHead(id: "b", epoch: "e", version: 8), name: "") == nil)
        #expect(spans.span(of: "a", since: 0, through: ListHead(id: "a", epoch: "e", version: 8), name: "") != nil)
        spans.unwatch("a")
        #expect(spans.usage.rows == 2)
        for version in Int64(9)...20 { spans.record(try commit("b", version)) }
        #expect(spans.usage.rows == 10 && spans.usage.versions == 10)
    }

    @Test func spansOlderThanTheStoresHistoryAreNotGiven() throws {
        let rows = TouchedRows(sections: [:], items: [:])
        let byVersions = RecentSpans(history: (versions: 2, age: .zero))
        byVersions.watch("a")
        for version in Int64(1)...5 {
            byVersions.record(Commit(list: "a", epoch: "e", version: version, deleted: false, touched: rows))
        }
        let head = ListHead(id: "a", epoch: "e", version: 5)
        #expect(byVersions.span(of: "a", since: 3, through: head, name: "") != nil)
        #expect(byVersions.span(of: "a", since: 2, through: head, name: "") == nil)

        let byAge = RecentSpans(history: (versions: 10_000, age: .nanoseconds(1)))
        byAge.watch("a")
        byAge.record(Commit(list: "a", epoch: "e", version: 1, deleted: false, touched: rows))
        let one = ListHead(id: "a", epoch: "e", version: 1)
        #expect(byAge.span(of: "a", since: 0, through: one, name: "") == nil)
        #expect(byAge.span(of: "a", since: 1, through: one, name: "")?.items.isEmpty == true)
    }
}
