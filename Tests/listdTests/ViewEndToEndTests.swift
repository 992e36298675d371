import Foundation
import JSON
import ListModel
import ListView
import ListWire
import ListdTestSupport
import SectionDiff
import Synchronization
import Testing

/// Views (docs/API.md, "Views") through the real binary: snapshots, the
/// long-poll, server-sent events and `POST /changes`, and the 400s of bad
/// view parameters.
@Suite struct ViewEndToEndTests {
    /// Views of every parameter and their mixes, windows of 1 and larger than the view.
    static let views = [
        "where=s:open", "order=n", "order=-n&limit=4", "group=s", "group=s&order=-n&limit=7", "q=%C3%A9",
        "where=s:open&group=tags.0&order=t", "limit=1", "order=t&limit=500", "where=n:1&order=-t",
    ]

    /// A random model: a status that may be missing, numbers such as 1 and
    /// 1.0, unicode strings, a nested array.
    static func model(_ random: inout SeededGenerator) -> String {
        var fields: [String] = []
        switch Int.random(in: 0..<4, using: &random) {
        case 0: fields.append(#""s":"open""#)
        case 1: fields.append(#""s":"done""#)
        case 2: fields.append(#""s":null"#)
        default: break
        }
        let numbers = ["1", "1.0", "2", "-3", "0.5", "10", "1e1", "true", #""1""#]
        if Int.random(in: 0..<5, using: &random) != 0 {
            fields.append(#""n":"# + numbers[Int.random(in: 0..<numbers.count, using: &random)])
        }
        let texts = ["é", "e\u{301}", "Zebra", "apple", "", "\u{1F600}", "été"]
        fields.append(#""t":""# + texts[Int.random(in: 0..<texts.count, using: &random)] + #"""#)
        if Bool.random(using: &random) {
            fields.append(#""tags":[""# + ["red", "blue"][Int.random(in: 0..<2, using: &random)] + #""]"#)
        }
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// One to three random operations on the list as it is.
    static func ops(_ snapshot: JSONValue, _ random: inout SeededGenerator, counter: inout Int) -> String {
        let sections = snapshot["sections"]?.arrayValue ?? []
        let sectionIDs = sections.compactMap { $0["id"]?.stringValue }
        let items = sections.flatMap { $0["items"]?.arrayValue ?? [] }.compactMap { $0["id"]?.stringValue }
        var ops: [String] = []
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            counter += 1
            let roll = Int.random(in: 0..<20, using: &random)
            if items.isEmpty || roll < 5, let section = sectionIDs.randomElement(using: &random) {
                ops.append(
                    #"{"op":"insertItem","section":"\#(section)","item":{"id":"x\#(counter)","model":\#(model(&random))},"at":0}"#
                )
            } else if roll < 11, let item = items.randomElement(using: &random) {
                ops.append(#"{"op":"updateItem","id":"\#(item)","model":\#(model(&random))}"#)
            } else if roll < 14, let item = items.randomElement(using: &random),
                let section = sectionIDs.randomElement(using: &random)
            {
                ops.append(#"{"op":"moveItem","id":"\#(item)","section":"\#(section)","to":0}"#)
            } else if roll < 17, let item = items.randomElement(using: &random) {
                ops.append(#"{"op":"deleteItem","id":"\#(item)"}"#)
            } else if roll == 17, let section = sectionIDs.randomElement(using: &random) {
                ops.append(#"{"op":"moveSection","id":"\#(section)","to":0}"#)
            } else if roll == 18, sectionIDs.count > 1, let section = sectionIDs.randomElement(using: &random) {
                ops.append(#"{"op":"deleteSection","id":"\#(section)"}"#)
            } else {
                ops.append(#"{"op":"insertSection","section":{"id":"s\#(counter)","model":{"k":\#(counter)}},"at":0}"#)
            }
        }
        return #"{"ops":["# + ops.joined(separator: ",") + "]}"
    }

    /// (store, seed): SQLite always, PostgreSQL when a test server is configured.
    static var cases: [(String, UInt64)] {
        [("sqlite", 1), ("sqlite", 2)] + (TestPostgres.enabled ? [("postgres", 3)] : [])
    }

    /// The view of a list snapshot (JSON), by ListView's brute-force `evaluate`.
    static func oracle(_ list: JSONValue, _ query: String) throws -> ChangeReplay.Sections {
        let spec = try ViewSpec(parsing: query)
        var sources: [SourceSection] = []
        for section in list["sections"]?.arrayValue ?? [] {
            let items = try (section["items"]?.arrayValue ?? []).map { item in
                ViewItem(
                    id: try #require(Identifier(item["id"]?.stringValue ?? "")),
                    model: Model(try #require(item["model"])))
            }
            sources.append(
                SourceSection(
                    id: try #require(Identifier(section["id"]?.stringValue ?? "")),
                    model: Model(try #require(section["model"])), items: items))
        }
        return try spec.evaluate(sources).map { section in
            ArraySection(
                model: JSONEntry(id: section.id, model: JSONText(section.model.canonicalText)),
                items: section.items.map { JSONEntry(id: $0.id.rawValue, model: JSONText($0.model.canonicalText)) })
        }
    }

    /// Whether `count` long-polls are parked on `server` within 30 s (a state, not a delay).
    static func parked(_ count: Int, on server: ListdServer) async -> Bool {
        await eventually(30) {
            (try? await server.get("/metrics").text.contains("listd_parked_waiters \(count)")) == true
        }
    }

    func json(_ reply: ListdServer.Reply) throws -> JSONValue {
        try JSONValue(parsing: Array(reply.body), limits: JSONLimits(maxDepth: 64, maxBytes: .max))
    }

    /// Random writes; after each, every view's snapshot is kept. For random
    /// earlier versions V, the view's long-poll answer since V, applied stage by
    /// stage (each stage checked as a UIKit batch update would be, section
    /// updates as `reloadSections`) to the view's snapshot at V, gives exactly
    /// its snapshot now.
    @Test(arguments: cases)
    func aViewsAnswerSinceAnyVersionTakesItsSnapshotThenToItsSnapshotNow(store: String, seed: UInt64) async throws {
        let database = store == "postgres" ? try await TestPostgres.createDatabase() : nil
        defer { database?.drop() }
        let server = try await ListdServer(store: database?.url)
        defer { server.stop() }
        var random = SeededGenerator(seed: seed)
        var items: [String] = []
        for index in 0..<24 { items.append(#"{"id":"i\#(index)","model":\#(Self.model(&random))}"#) }
        let body =
            #"{"id":"l","sections":[{"id":"a","model":{},"items":["# + items[..<12].joined(separator: ",")
            + #"]},{"id":"b","model":{},"items":["# + items[12...].joined(separator: ",") + "]}]}"
        #expect(try await server.request("POST", "/lists", body: body).status == 201)
        // Each view's snapshot at each version, checked against the view the
        // brute-force oracle (ListView's evaluate) makes of the whole list.
        var kept: [String: [Int: ChangeReplay.Sections]] = [:]
        func keepViews() async throws -> Int {
            let list = try json(try await server.get("/lists/l"))
            let version = list["version"]?.intValue ?? -1
            for view in Self.views {
                let reply = try await server.get("/lists/l?\(view)")
                #expect(reply.status == 200, "\(view): \(reply.text)")
                let value = try json(reply)
                #expect(value["version"]?.intValue == version, "\(view): no write runs beside this test")
                let sections = try ChangeReplay.sections(ofSnapshot: value)
                #expect(sections == (try Self.oracle(list, view)), "seed \(seed) v\(version) \(view)")
                kept[view, default: [:]][version] = sections
            }
            return version
        }
        var version = try await keepViews()
        var counter = 0
        var checked = 0
        for step in 0..<40 {
            let list = try json(try await server.get("/lists/l"))
            let write = try await server.request("PATCH", "/lists/l", body: Self.ops(list, &random, counter: &counter))
            guard write.status == 200 else { continue }
            version = try await keepViews()
            for view in Self.views {
                let now = try #require(kept[view]?[version])
                var asked: Set<Int> = [version - 1]
                for _ in 0..<2 { asked.insert(Int.random(in: 1...version, using: &random)) }
                for since in asked {
                    guard let old = kept[view]?[since] else { continue }
                    let reply = try await server.get("/lists/l/changes?since=\(since)&timeout=0&\(view)")
                    let answer = try json(reply)
                    let context = "seed \(seed) step \(step), \(view) since v\(since): \(reply.text.prefix(600))"
                    #expect(answer["reset"] == nil && answer["to"]?.intValue == version, "\(context)")
                    #expect(ChangeReplay.reloadConflicts(answer) == 0, "\(context)")
                    let applied = try ChangeReplay.apply(answer, to: old)
                    #expect(applied == now, "\(context)")
                    // A view the writes since V left alone: no stages, `to` moved on.
                    if old == now { #expect(answer["stages"]?.arrayValue?.isEmpty == true, "\(context)") }
                    checked += 1
                }
            }
        }
        #expect(checked > 400)
    }

    /// Writers and followers at once: two clients write random batches while
    /// a follower per view asks "changes since the version I hold" with
    /// `timeout=0` (and now and then a short long-poll) and applies each
    /// answer, and an event stream per view runs beside it. When the writes
    /// stop, each follower catches up once more and must hold exactly the
    /// view's snapshot, and each stream's events, replayed, must give it too.
    /// (The streams moved the kept views by spans starting before their
    /// version; an item made and deleted within such a span stayed in the view,
    /// and every later answer was computed from a state that was not the list's.)
    @Test(arguments: [UInt64(11), 12, 13, 14, 15, 16])
    func followersOfViewsBesideConcurrentWritersEndAtTheViewsSnapshot(seed: UInt64) async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        var random = SeededGenerator(seed: seed)
        var items: [String] = []
        for index in 0..<24 { items.append(#"{"id":"i\#(index)","model":\#(Self.model(&random))}"#) }
        let body =
            #"{"id":"l","sections":[{"id":"a","model":{},"items":["# + items[..<12].joined(separator: ",")
            + #"]},{"id":"b","model":{},"items":["# + items[12...].joined(separator: ",") + "]}]}"
        #expect(try await server.request("POST", "/lists", body: body).status == 201)
        // An event stream per view too, from the first version, read at the end.
        let firstVersion = try json(try await server.get("/lists/l"))["version"]?.intValue ?? -1
        var streams: [(view: String, stream: EventStreamReader, start: ChangeReplay.Sections)] = []
        for view in Self.views {
            let start = try ChangeReplay.sections(
                ofSnapshot: try json(try await server.get("/lists/l?\(view)")))
            let stream = try EventStreamReader(
                port: server.port, target: "/lists/l/events?since=\(firstVersion)&\(view)")
            streams.append((view, stream, start))
        }
        defer { for entry in streams { entry.stream.close() } }
        #expect(await eventually { streams.allSatisfy { $0.stream.body.contains("retry:") } })
        enum Outcome: Sendable {
            case failure(String)
            case follower(number: Int, version: Int, held: ChangeReplay.Sections)
        }
        let writesDone = DoneFlag()
        try await withThrowingTaskGroup(of: Outcome?.self) { group in
            for writer in 0..<2 {
                group.addTask {
                    defer { if writer == 0 { writesDone.value.store(true, ordering: .releasing) } }
                    var random = SeededGenerator(seed: seed &* 31 &+ UInt64(writer))
                    var counter = writer * 100_000
                    for _ in 0..<60 {
                        let list = try self.json(try await server.get("/lists/l"))
                        _ = try await server.request(
                            "PATCH", "/lists/l", body: Self.ops(list, &random, counter: &counter))
                    }
                    return nil
                }
            }
            for (number, view) in Self.views.enumerated() {
                group.addTask {
                    var random = SeededGenerator(seed: seed &* 1_000 &+ UInt64(number))
                    let first = try self.json(try await server.get("/lists/l?\(view)"))
                    var held = try ChangeReplay.sections(ofSnapshot: first)
                    var version = first["version"]?.intValue ?? -1
                    var answers = 0
                    func step(timeout: Int) async throws -> String? {
                        let reply = try await server.get("/lists/l/changes?since=\(version)&timeout=\(timeout)&\(view)")
                        guard reply.status == 200 else { return "\(view): \(reply.status) \(reply.text)" }
                        let answer = try self.json(reply)
                        if let snapshot = answer["snapshot"] {
                            held = try ChangeReplay.sections(ofSnapshot: snapshot)
                        } else {
                            guard answer["from"]?.intValue == version else {
                                return
                                    "\(view): an answer from \(answer["from"]?.intValue ?? -1) while holding \(version)"
                            }
                            do {
                                held = try ChangeReplay.apply(answer, to: held)
                            } catch {
                                return
                                    "\(view) at v\(version) (timeout \(timeout)): \(error); answer \(reply.text.prefix(800))"
                            }
                        }
                        version = answer["to"]?.intValue ?? version
                        answers += 1
                        return nil
                    }
                    let deadline = ContinuousClock.now + .seconds(120)
                    while !writesDone.value.load(ordering: .acquiring) {
                        guard ContinuousClock.now < deadline else {
                            return .failure("\(view): the writes took over 120 s")
                        }
                        if let failure = try await step(timeout: Int.random(in: 0..<3, using: &random) == 0 ? 1 : 0) {
                            return .failure(failure)
                        }
                    }
                    #expect(answers > 0)
                    return .follower(number: number, version: version, held: held)
                }
            }
            var followers: [Int: (version: Int, held: ChangeReplay.Sections)] = [:]
            for try await result in group {
                switch result {
                case .failure(let failure): Issue.record("seed \(seed): \(failure)")
                case .follower(let number, let version, let held): followers[number] = (version, held)
                case nil: break
                }
            }
            // Every writer is done: each follower catches up from where it stopped.
            let list = try json(try await server.get("/lists/l"))
            let head = list["version"]?.intValue ?? -1
            for (number, view) in Self.views.enumerated() {
                guard let follower = followers[number] else { continue }
                var held = follower.held
                let reply = try await server.get("/lists/l/changes?since=\(follower.version)&timeout=0&\(view)")
                let answer = try json(reply)
                if let snapshot = answer["snapshot"] {
                    held = try ChangeReplay.sections(ofSnapshot: snapshot)
                } else {
                    held = try ChangeReplay.apply(answer, to: held)
                }
                #expect(answer["to"]?.intValue == head, "seed \(seed) \(view): \(reply.text.prefix(300))")
                let snapshot = try ChangeReplay.sections(ofSnapshot: try json(try await server.get("/lists/l?\(view)")))
                #expect(snapshot == (try Self.oracle(list, view)), "seed \(seed) \(view): the view's snapshot")
                #expect(held == snapshot, "seed \(seed) \(view): the follower's state (from v\(follower.version))")
            }
            // Each view's event stream, replayed from the view at the first version, ends at its snapshot.
            for (view, stream, start) in streams {
                let snapshot = try ChangeReplay.sections(ofSnapshot: try json(try await server.get("/lists/l?\(view)")))
                var replayed = start
                var failure = ""
                let arrived = await eventually(20) {
                    replayed = start
                    for event in stream.events where !event.data.isEmpty {
                        do {
                            let answer = try JSONValue(parsing: Array(event.data.utf8))
                            if answer["stages"] == nil && answer["snapshot"] == nil { continue }
                            replayed = try ChangeReplay.apply(answer, to: replayed)
                        } catch {
                            failure = "event \(event.id) (\(event.event)): \(error)"
                            return true
                        }
                    }
                    return replayed == snapshot
                }
                #expect(failure.isEmpty, "seed \(seed) \(view): \(failure)")
                #expect(
                    arrived && replayed == snapshot,
                    "seed \(seed) \(view): the event stream's state; events: \(stream.events.map { "\($0.event) \($0.id)" })"
                )
            }
        }
    }

    @Test func aViewsSnapshotHasTheViewsOwnSectionsAndPositions() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        let body = #"""
            {"id":"l","sections":[
              {"id":"a","model":{},"items":[{"id":"i1","model":{"s":"open","due":3}},{"id":"i2","model":{"s":"done","due":1}}]},
              {"id":"b","model":{},"items":[{"id":"i3","model":{"s":"open","due":2}},{"id":"i4","model":{"due":0}}]}]}
            """#
        #expect(try await server.request("POST", "/lists", body: body).status == 201)
        let filtered = try await server.get("/lists/l?where=s:open&order=-due")
        #expect(filtered.status == 200)
        #expect(filtered.text.contains(#""sections":[{"id":"a","model":{},"items":[{"id":"i1","#))
        #expect(filtered.text.contains(#"{"id":"b","model":{},"items":[{"id":"i3","#))
        let grouped = try await server.get("/lists/l?group=s&order=due&limit=3")
        let value = try json(grouped)
        let sections = value["sections"]?.arrayValue ?? []
        #expect(sections.compactMap { $0["id"]?.stringValue } == ["null", #""done""#, #""open""#])
        #expect(sections.first?["model"]?.canonicalText == #"{"value":null}"#)
        #expect(
            sections.flatMap { $0["items"]?.arrayValue ?? [] }.compactMap { $0["id"]?.stringValue }
                == ["i4", "i2", "i3"], "the window holds the first three in section order: \(grouped.text)")
        // The list's ETag: unchanged list, 304.
        let etag = try #require(grouped.header("ETag"))
        let again = try await server.get("/lists/l?group=s&order=due&limit=3", headers: ["If-None-Match": etag])
        #expect(again.status == 304)
    }

    @Test func badViewParametersAre400sThatNameThem() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        #expect(try await server.request("POST", "/lists", body: ["id": "l"]).status == 201)
        let cases: [(String, String)] = [
            ("/lists/l?grup=s", "grup"), ("/lists/l?limit=0", "limit"), ("/lists/l?order=a..b", "order"),
            ("/lists/l?where=nocolon", "where"), ("/lists/l?order=a&order=b", "order"),
            ("/lists/l/changes?since=1&limit=x", "limit"), ("/lists/l/changes?since=1&sorce=1", "sorce"),
            ("/lists/l/events?since=1&group=", "group"),
        ]
        for (path, named) in cases {
            let reply = try await server.get(path)
            #expect(reply.status == 400, "\(path): \(reply.status)")
            #expect(reply.header("Content-Type") == "application/problem+json", "\(path)")
            let detail = try json(reply)["detail"]?.stringValue ?? ""
            #expect(detail.contains(named), "\(path): \(detail)")
        }
        let many = try await server.request(
            "POST", "/changes", body: #"{"lists":{"l":{"since":1,"view":"where=s:open&grup=s"}}}"#)
        #expect(many.status == 400)
        #expect(many.text.contains("grup"), "\(many.text)")
    }

    /// A write that leaves a view alone wakes none of its waiters and sends
    /// its streams nothing; the next write that changes it is answered from the
    /// version the client held.
    @Test func aWriteThatLeavesAViewAloneWakesNoneOfItsFollowers() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        let body =
            #"{"id":"l","sections":[{"id":"a","model":{},"items":[{"id":"i1","model":{"s":"open"}},{"id":"i2","model":{"s":"done"}}]}]}"#
        #expect(try await server.request("POST", "/lists", body: body).status == 201)
        let stream = try EventStreamReader(port: server.port, target: "/lists/l/events?since=1&where=s:open")
        #expect(await eventually { stream.body.contains("retry: 1000") })
        async let poll = server.get("/lists/l/changes?since=1&timeout=60&where=s:open")
        async let many = server.request(
            "POST", "/changes", body: #"{"lists":{"l":{"since":1,"view":"where=s:open"}},"timeout":60}"#, timeout: 90)
        #expect(await Self.parked(2, on: server))
        // Leaves the view alone (i2 stays done): v2.
        let quiet = try await server.request(
            "PATCH", "/lists/l", body: #"{"ops":[{"op":"updateItem","id":"i2","model":{"s":"done","n":1}}]}"#)
        #expect(quiet.status == 200)
        // Both park again at v2 (a state, not a delay), then a write that changes the view: v3.
        #expect(await Self.parked(2, on: server))
        let loud = try await server.request(
            "PATCH", "/lists/l", body: #"{"ops":[{"op":"updateItem","id":"i2","model":{"s":"open"}}]}"#)
        #expect(loud.status == 200)
        let answer = try json(try await poll)
        #expect(answer["from"]?.intValue == 1 && answer["to"]?.intValue == 3)
        #expect(answer["stages"]?[0]?["itemInserted"]?[0]?["at"]?.canonicalText == "[0,1]")
        let manyAnswer = try json(try await many)
        #expect(manyAnswer["lists"]?["l"]?["from"]?.intValue == 1)
        #expect(manyAnswer["lists"]?["l"]?["to"]?.intValue == 3)
        #expect(await eventually { stream.events.count == 1 })
        let event = try #require(stream.events.first)
        #expect(event.id.hasSuffix(":3"), "one event, for the write that changed the view: \(stream.events)")
        // A long-poll that times out after writes that left the view alone: no stages, `to` moved on.
        _ = try await server.request(
            "PATCH", "/lists/l", body: #"{"ops":[{"op":"insertItem","section":"a","item":{"id":"i9","model":{}}}]}"#)
        let idle = try json(try await server.get("/lists/l/changes?since=3&timeout=0.3&where=s:open"))
        #expect(idle["from"]?.intValue == 3 && idle["to"]?.intValue == 4)
        #expect(idle["stages"]?.arrayValue?.isEmpty == true)
    }

    /// A parked view waiter waits under its first condition's value: a write
    /// that takes an item out of the view (its value before matched), or that
    /// changes a section (the view has the list's sections), wakes it.
    @Test func aViewsWaiterWakesForItemsLeavingItAndForSectionChanges() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        let body =
            #"{"id":"l","sections":[{"id":"a","model":{},"items":[{"id":"i1","model":{"s":"open"}},{"id":"i2","model":{"s":"done"}}]}]}"#
        #expect(try await server.request("POST", "/lists", body: body).status == 201)
        async let leaving = server.get("/lists/l/changes?since=1&timeout=60&where=s:open")
        #expect(await Self.parked(1, on: server))
        _ = try await server.request(
            "PATCH", "/lists/l", body: #"{"ops":[{"op":"updateItem","id":"i1","model":{"s":"done"}}]}"#)
        let left = try json(try await leaving)
        #expect(left["to"]?.intValue == 2 && left["stages"]?[0]?["itemDeleted"]?.canonicalText == "[[0,0]]")

        async let section = server.get("/lists/l/changes?since=2&timeout=60&where=s:open")
        #expect(await Self.parked(1, on: server))
        _ = try await server.request(
            "PATCH", "/lists/l", body: #"{"ops":[{"op":"updateSection","id":"a","model":{"title":"A"}}]}"#)
        let updated = try json(try await section)
        #expect(updated["to"]?.intValue == 3)
        #expect(updated["stages"]?[0]?["sectionUpdated"]?[0]?["model"]?.canonicalText == #"{"title":"A"}"#)
    }

    /// Two instances on one PostgreSQL database: a view's follower moves from
    /// one to the other mid-stream, with the version and epoch it holds, and
    /// continues without a reset; a write on either wakes its long-poll on the other.
    @Test(.enabled(if: TestPostgres.enabled, Comment(rawValue: TestPostgres.skipReason)))
    func aViewsFollowerMovesBetweenInstancesWithoutAReset() async throws {
        let database = try await TestPostgres.createDatabase()
        defer { database.drop() }
        let first = try await ListdServer(store: database.url)
        defer { first.stop() }
        let second = try await ListdServer(store: database.url)
        defer { second.stop() }
        let items = (0..<40).map { #"{"id":"i\#($0)","model":{"s":"\#($0 % 2 == 0 ? "open" : "done")","n":\#($0)}}"# }
        let body = #"{"id":"l","sections":[{"id":"a","model":{},"items":["# + items.joined(separator: ",") + "]}]}"
        #expect(try await first.request("POST", "/lists", body: body).status == 201)
        let view = "where=s:open&order=-n&limit=5"
        let start = try json(try await first.get("/lists/l?\(view)"))
        var held = try ChangeReplay.sections(ofSnapshot: start)
        var version = try #require(start["version"]?.intValue)
        let epoch = try #require(start["epoch"]?.stringValue)
        for round in 0..<6 {
            let writer = round % 2 == 0 ? first : second
            let reader = round % 2 == 0 ? second : first
            let path = "/lists/l/changes?since=\(version)&epoch=\(epoch)&timeout=30&\(view)"
            async let poll = reader.get(path)
            #expect(await Self.parked(1, on: reader))
            let model = #"{"s":"open","n":\#(100 + round)}"#
            let write = try await writer.request(
                "PATCH", "/lists/l", body: #"{"ops":[{"op":"updateItem","id":"i\#(round * 2 + 1)","model":\#(model)}]}"#
            )
            #expect(write.status == 200)
            let answer = try json(try await poll)
            #expect(answer["reset"] == nil, "round \(round): \(answer)")
            held = try ChangeReplay.apply(answer, to: held)
            version = try #require(answer["to"]?.intValue)
            let now = try ChangeReplay.sections(ofSnapshot: try json(try await writer.get("/lists/l?\(view)")))
            #expect(held == now, "round \(round)")
        }
    }

    /// A view's long-poll parked through many writes that left its view alone,
    /// then woken by one that did not, is answered from the version it holds,
    /// exactly (the kept view is taken as unchanged through the quiet writes).
    @Test func aViewsWaiterParkedThroughQuietWritesIsAnsweredExactly() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        let items = (0..<30).map { #"{"id":"i\#($0)","model":{"s":"\#($0 % 3 == 0 ? "open" : "done")","n":\#($0)}}"# }
        let body = #"{"id":"l","sections":[{"id":"a","model":{},"items":["# + items.joined(separator: ",") + "]}]}"
        #expect(try await server.request("POST", "/lists", body: body).status == 201)
        let view = "where=s:open&order=-n"
        let start = try json(try await server.get("/lists/l?\(view)"))
        let held = try ChangeReplay.sections(ofSnapshot: start)
        async let poll = server.get("/lists/l/changes?since=1&timeout=60&\(view)")
        #expect(await Self.parked(1, on: server))
        for round in 0..<20 {
            let model = #"{"s":"done","n":\#(100 + round)}"#
            let quiet = try await server.request(
                "PATCH", "/lists/l", body: #"{"ops":[{"op":"updateItem","id":"i1","model":\#(model)}]}"#)
            #expect(quiet.status == 200)
        }
        let loud = try await server.request(
            "PATCH", "/lists/l", body: #"{"ops":[{"op":"updateItem","id":"i2","model":{"s":"open","n":50}}]}"#)
        #expect(loud.status == 200)
        let answer = try json(try await poll)
        #expect(answer["from"]?.intValue == 1 && answer["to"]?.intValue == 22)
        let now = try ChangeReplay.sections(ofSnapshot: try json(try await server.get("/lists/l?\(view)")))
        #expect(try ChangeReplay.apply(answer, to: held) == now)
        #expect(answer["stages"]?[0]?["itemInserted"]?[0]?["at"]?.canonicalText == "[0,0]")
    }
}

/// A flag tasks share (an `Atomic` cannot be captured by value).
private final class DoneFlag: Sendable {
    let value = Atomic<Bool>(false)
}
