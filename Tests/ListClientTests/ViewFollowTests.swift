import Foundation
import JSON
import ListClient
import ListClientNetworking
import ListView
import ListdTestSupport
import ReactiveCore
import Testing

/// Following views of a list (the contract's "Views") with ListClient, against a real listd.
@Suite(.serialized) struct ViewFollowTests {
    static let options = EndToEndTests.options

    /// Titles that a double encoding, or a `+` read as a space, would mix up.
    static let titles = ["a+b & c:é", "a b & c:é", "x/y?z=1#", "%41"]
    static let owners = ["ann", "bob", "cy"]

    static func model(done: Bool, rank: Int, owner: String, title: String) -> JSONValue {
        .object([
            "done": .bool(done), "rank": .number(JSONNumber(Int64(rank))), "owner": .string(owner),
            "title": .string(title),
        ])
    }

    static func entry(_ id: String, _ model: JSONValue) -> JSONEntry {
        JSONEntry(id: id, model: JSONText(model.canonicalText))
    }

    /// Two sections of items with every title, owner and both `done`s.
    static let initialSections: ListSections = (0..<2).map { section in
        .init(
            model: entry("s\(section)", ["n": .number(JSONNumber(Int64(section)))]),
            items: (0..<8).map { index in
                entry(
                    "i\(section)-\(index)",
                    model(
                        done: index % 2 == 0, rank: (index * 7 + section) % 10, owner: owners[index % 3],
                        title: titles[index % titles.count]))
            })
    }

    static func view(_ text: String) throws -> ViewSpec { try ViewSpec(parsing: text) }

    /// Views that use every parameter, and their mixes, with values a URL must carry intact.
    static var views: [ViewSpec] {
        get throws {
            [
                ViewSpec(
                    conditions: [.init(path: ["done"], value: false)], order: .init(path: ["rank"])),
                ViewSpec(order: .init(path: ["rank"], descending: true), group: ["owner"], limit: 5),
                ViewSpec(conditions: [.init(path: ["title"], value: "a+b & c:é")], group: ["done"]),
                ViewSpec(text: "B & C", order: .init(path: ["title"]), limit: 6),
                try view("where=owner:ann&where=done:true"),
            ]
        }
    }

    // MARK: - The query reaches the server intact

    @Test(arguments: EndToEndTests.FollowerTransport.allCases)
    func aViewsQueryReachesTheServerIntact(_ transport: EndToEndTests.FollowerTransport) async throws {
        let server = try await TestServer()
        defer { server.stop() }
        _ = try await server.client().createList(id: "q", name: "Q", sections: Self.initialSections)
        let recording = RecordingTransport(
            transport == .automatic ? DefaultTransport() as any HTTPTransport : URLSessionTransport())
        let client = ListClient(baseURL: server.baseURL, token: nil, transport: recording)
        let spec = ViewSpec(
            conditions: [.init(path: ["title"], value: "a+b & c:é")], text: "+B",
            order: .init(path: ["rank"], descending: true))
        let state = try await client.list("q", view: spec)
        // Only the items titled with a plus: a plus read as a space, or a value
        // encoded twice, would match the other title or none.
        let ids = state.sections.flatMap { $0.items.map(\.id) }
        #expect(ids.count == 4, "\(ids)")
        for section in state.sections {
            for item in section.items {
                let model = try JSONValue(parsing: item.model.description)
                #expect(model["title"]?.stringValue == "a+b & c:é")
            }
            let ranks = try section.items.map { try JSONValue(parsing: $0.model.description)["rank"]?.int64Value ?? -1 }
            #expect(ranks == ranks.sorted(by: >), "ordered by -rank")
        }
        let answer = try await client.changes(of: "q", view: spec, since: state.version, timeout: .zero)
        #expect(answer.from == state.version && answer.stages.isEmpty)
        let urls = recording.requests.map(\.url)
        #expect(urls.count == 2)
        for url in urls {
            let query = try #require(url.query(percentEncoded: true))
            #expect(query.hasSuffix(spec.canonicalQuery), "\(query)")
        }
        #expect(urls[0].query(percentEncoded: true) == spec.canonicalQuery)
        // The server reads the very spec back from what was sent.
        #expect(
            try ViewSpec(queryItems: ViewSpec.decodeQuery(urls[1].query(percentEncoded: true) ?? "")) == spec)
    }

    @Test func followingAViewOfAMissingListFails() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let client = server.client()
        let recorder = Recorder<FollowUpdate>()
        let subscription = FollowLoopTests.record(
            client.follow(list: "nope", view: try Self.view("where=done:false"), options: Self.options),
            into: recorder)
        defer { subscription.dispose() }
        #expect(await eventually(10) { recorder.error != nil })
        #expect((recorder.error as? ListClientError)?.status == 404)
    }

    // MARK: - Followers of views under random writes

    @Test(arguments: EndToEndTests.FollowerTransport.allCases)
    func followersOfViewsEndEqualToTheViewsSnapshot(_ transport: EndToEndTests.FollowerTransport) async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let writer = server.client()
        var state = try await writer.createList(id: "v", name: "V", sections: Self.initialSections)
        let views = try Self.views
        var random = ViewWriter(seed: EndToEndTests.seed())
        // Each view's snapshot at every version the writer made.
        var snapshots = [[Int64: ListSections]](repeating: [:], count: views.count)
        for (index, view) in views.enumerated() {
            snapshots[index][state.version] = try await writer.list("v", view: view).sections
        }
        let follower = transport.client(server.baseURL)
        let recorders = views.map { _ in Recorder<FollowUpdate>() }
        var subscriptions = zip(views, recorders).map { view, recorder in
            FollowLoopTests.record(follower.follow(list: "v", view: view, options: Self.options), into: recorder)
        }
        // The same views through POST /changes (one list per request, so one view each).
        let multi = Recorder<ListUpdate>()
        subscriptions.append(
            FollowLoopTests.record(follower.follow(views: ["v": views[1]], options: Self.options), into: multi))
        defer { for subscription in subscriptions { subscription.dispose() } }
        for _ in 0..<EndToEndTests.rounds {
            let answer = try await writer.patchList("v", random.batch(for: state))
            state = try await writer.list("v")
            #expect(state.version == answer.to)
            for (index, view) in views.enumerated() {
                let snapshot = try await writer.list("v", view: view)
                #expect(snapshot.version == state.version, "a view's version is the list's")
                snapshots[index][snapshot.version] = snapshot.sections
            }
        }
        let final = state.version
        for (index, recorder) in recorders.enumerated() {
            let expected = try #require(snapshots[index][final])
            #expect(
                await eventually(10) { recorder.elements.last?.state?.sections == expected },
                "view \(views[index]) ends at its snapshot")
            checkFollow(recorder.elements, against: snapshots[index])
            #expect(recorder.error == nil)
            #expect(!recorder.elements.contains { if case .reset = $0 { true } else { false } }, "no reset")
        }
        let expected = try #require(snapshots[1][final])
        #expect(await eventually(10) { multi.elements.last?.update.state?.sections == expected })
        checkFollow(multi.elements.map(\.update), against: snapshots[1])
        #expect(recorders.allSatisfy { $0.elements.contains { if case .changes = $0 { true } else { false } } })
    }

    // MARK: - A write that leaves a view alone

    @Test func aWriteThatLeavesAViewAloneSendsItsFollowerNothing() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let client = server.client()
        let start = try await client.createList(id: "a", name: "A", sections: Self.initialSections)
        let ann = try Self.view("where=owner:ann&order=rank")
        let recorder = Recorder<FollowUpdate>()
        // Polls long enough that no timeout answers between the two writes.
        var options = Self.options
        options.pollTimeout = .seconds(60)
        let subscription = FollowLoopTests.record(client.follow(list: "a", view: ann, options: options), into: recorder)
        defer { subscription.dispose() }
        #expect(await eventually(10) { recorder.elements.count == 1 })
        #expect(await eventually(10) { (try? await server.gauge("listd_parked_waiters")) == 1 })
        // i0-1 is bob's: the view does not hold it.
        let untouched = try await client.patchList(
            "a", [.updateItem(id: "i0-1", model: Model(Self.model(done: true, rank: 1, owner: "bob", title: "b")))])
        #expect(untouched.to == start.version + 1)
        // i0-0 is ann's: this one changes the view, and the follower hears of it.
        let touched = try await client.patchList(
            "a", [.updateItem(id: "i0-0", model: Model(Self.model(done: false, rank: 99, owner: "ann", title: "t")))])
        #expect(await eventually(10) { recorder.elements.last?.state?.version == touched.to })
        let updates = recorder.elements
        #expect(updates.count == 2, "a snapshot, then one change; none for the write that left the view alone")
        guard case .changes(let change) = updates.last else {
            Issue.record("expected a change, got \(updates)")
            return
        }
        #expect(!change.stages.isEmpty)
        #expect(change.from == start.version, "the parked long-poll was answered by the second write only")
        #expect(change.state.sections == (try await client.list("a", view: ann)).sections)
    }

    // MARK: - Values, no sockets

    @Test func theViewFollowsTheRoutesOwnParametersAsItsCanonicalQuery() async throws {
        let transport = FakeTransport { _, _ in
            FakeTransport.json(#"{"list":"l","epoch":"e","from":4,"to":4,"stages":[]}"#)
        }
        let client = ListClient(
            baseURL: try #require(URL(string: "http://h.invalid:1")), token: nil, transport: transport)
        let spec = try Self.view("where=title:a%2Bb%20c&where=done:false&q=caf%C3%A9&order=-rank&group=owner&limit=9")
        _ = try await client.changes(of: "l", view: spec, since: 4, epoch: "e", timeout: .zero)
        let url = try #require(transport.requests.first).url.absoluteString
        #expect(
            url == "http://h.invalid:1/lists/l/changes?since=4&timeout=0&epoch=e&"
                + "where=done%3Afalse&where=title%3Aa%2Bb%20c&q=caf%C3%A9&order=-rank&group=owner&limit=9")
        #expect(spec.canonicalQuery.hasSuffix("limit=9") && url.hasSuffix(spec.canonicalQuery))
    }

    /// The texts the JavaScript client's `viewQuery` writes (clients/js/listd.test.mjs) are the canonical ones.
    @Test(arguments: [
        "where=done%3Afalse&order=-due&limit=50",
        "where=done%3Afalse&where=owner%3Aann&group=owner",
        "where=code%3A%2242%22&where=flag%3A%22true%22&where=n%3A42&where=none%3A%22null%22&where=tags%3A%5B1%5D"
            + "&where=z%3Anull",
        "q=a%2Bb%20%26%20c%21&order=title.0",
        "where=title%3Acaf%C3%A9",
    ])
    func theJavaScriptClientsViewTextsAreCanonical(_ text: String) throws {
        #expect(try ViewSpec(parsing: text).canonicalQuery == text)
    }

    // MARK: - The machine

    @Test func aViewsMachineHoldsAVersionThatMovedOnWithNoStages() throws {
        var machine = FollowMachine(list: "l", view: try Self.view("where=done:false"))
        _ = machine.receive(snapshot: ListState(id: "l", name: "", epoch: "e", version: 3, sections: []))
        let moved = try ChangeAnswer(json: JSONValue(parsing: #"{"list":"l","epoch":"e","from":3,"to":5,"stages":[]}"#))
        guard case .changes(let change) = machine.receive(moved) else { Issue.record("no change"); return }
        #expect(change.stages.isEmpty && change.from == 3 && change.state.version == 5)
        #expect(machine.nextAction == .poll(since: 5, epoch: "e"))
        #expect(machine.refetchCount == 0)
        // A whole list's too: writes that cancel out (an item inserted, then
        // deleted) are a net change of nothing (API.md), not a broken answer.
        var whole = FollowMachine(list: "l")
        _ = whole.receive(snapshot: ListState(id: "l", name: "", epoch: "e", version: 3, sections: []))
        guard case .changes(let wholeChange) = whole.receive(moved) else { Issue.record("no change"); return }
        #expect(wholeChange.stages.isEmpty && wholeChange.state.version == 5)
        #expect(whole.nextAction == .poll(since: 5, epoch: "e"))
        #expect(whole.refetchCount == 0)
    }
}

/// Random batches over models `{"done", "rank", "owner", "title"}`, so that
/// writes move items into, out of and within every view.
struct ViewWriter {
    var rng: SeededGenerator
    var counter = 0

    init(seed: UInt64) { rng = SeededGenerator(seed: seed) }

    mutating func model() -> Model {
        Model(
            ViewFollowTests.model(
                done: Bool.random(using: &rng), rank: Int.random(in: 0..<20, using: &rng),
                owner: ViewFollowTests.owners[Int.random(in: 0..<3, using: &rng)],
                title: ViewFollowTests.titles[Int.random(in: 0..<ViewFollowTests.titles.count, using: &rng)]))
    }

    /// One to four operations, valid against `state`, each on an item no other touches.
    mutating func batch(for state: ListState) -> [ListOperation] {
        var ops: [ListOperation] = []
        var touched = Set<String>()
        let sections = state.sections.compactMap { Identifier($0.model.id) }
        let items = state.sections.flatMap { section in section.items.map(\.id) }
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            counter += 1
            let untouched = items.filter { !touched.contains($0) }
            let kind = untouched.isEmpty ? 0 : Int.random(in: 0..<8, using: &rng)
            guard let section = sections.randomElement(using: &rng) else { break }
            switch kind {
            case 0..<2:
                guard let id = Identifier("n\(counter)") else { break }
                ops.append(
                    .insertItem(
                        section: section, item: NewItem(id: id, model: model()),
                        at: Bool.random(using: &rng) ? 0 : nil))
            default:
                let text = untouched[Int.random(in: 0..<untouched.count, using: &rng)]
                guard let id = Identifier(text) else { break }
                touched.insert(text)
                switch kind {
                case 2..<5: ops.append(.updateItem(id: id, model: model()))
                case 5: ops.append(.deleteItem(id: id))
                default: ops.append(.moveItem(id: id, section: section, to: 0))
                }
            }
        }
        return ops
    }
}
