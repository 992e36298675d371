import Foundation
import JSON
import ListClient
import ListdTestSupport
import ReactiveCore
import SectionDiff
import Synchronization
import Testing

/// The follow loops against an in-memory listd that writes, deletes, re-creates lists
/// (a new epoch) and injects faults between and instead of answers (issue 26):
/// refused connections, 500s, 503s with `Retry-After`, bodies that are not JSON,
/// stale answers, stages that do not apply, resets. The properties, for every seed:
/// every update a consumer receives applies to what it holds (a change starts at its
/// version and epoch, and each stage replayed on its sections gives the stage's
/// sections), every state it holds is one the server had, nothing follows a
/// `.deleted`, and once the server goes quiet the consumer holds the server's final
/// snapshot (or saw the list's deletion). Odd seeds give the client two base URLs, so
/// the follow also fails over between instances under the same faults.
@Suite struct FollowFaultTests {
    static let options = FollowOptions(
        pollTimeout: .seconds(5), responseSlack: .seconds(1), minimumBackoff: .milliseconds(1),
        maximumBackoff: .milliseconds(2))

    @Test(arguments: 0..<UInt64(SeededGenerator.cases(normal: 24, long: 400)))
    func oneListUnderFaults(seed: UInt64) async throws {
        let server = FaultyServer(seed: seed, lists: ["g"], budget: 150)
        let (client, transport) = Self.client(server, seed: seed)
        let consumer = Consumer(server: server)
        let subscription = client.follow(list: "g", options: Self.options).subscribe { event in
            switch event {
            case .next(let update): consumer.receive(list: "g", update)
            case .error(let error): consumer.fail(error)
            case .completed: consumer.complete()
            }
        }
        defer { subscription.dispose() }
        try await Self.check(consumer, server, lists: ["g"], seed: seed)
        Self.checkFailover(transport, server, seed: seed)
    }

    @Test(arguments: 0..<UInt64(SeededGenerator.cases(normal: 24, long: 400)))
    func threeListsUnderFaults(seed: UInt64) async throws {
        let lists = ["g", "h", "k"]
        let server = FaultyServer(seed: seed, lists: lists, budget: 200)
        let (client, transport) = Self.client(server, seed: seed)
        let consumer = Consumer(server: server)
        let subscription = client.follow(lists: lists, options: Self.options).subscribe { event in
            switch event {
            case .next(let update): consumer.receive(list: update.list, update.update)
            case .error(let error): consumer.fail(error)
            case .completed: consumer.complete()
            }
        }
        defer { subscription.dispose() }
        try await Self.check(consumer, server, lists: lists, seed: seed)
        Self.checkFailover(transport, server, seed: seed)
    }

    /// A client of `server`: of one base URL for even seeds, of two for odd ones, so
    /// that refusals and 5xx move the follow between instances (both serve the one
    /// in-memory store, as instances on one PostgreSQL do).
    static func client(_ server: FaultyServer, seed: UInt64) -> (ListClient, FakeTransport) {
        let transport = FakeTransport { request, _ in try await server.respond(request) }
        let urls =
            seed % 2 == 0 ? [FollowLoopTests.base] : ["a", "b"].compactMap { URL(string: "http://\($0).invalid:1") }
        return (ListClient(baseURLs: urls, token: nil, transport: transport), transport)
    }

    /// With two base URLs, a follow that met a refusal or a 5xx asked the other instance too.
    static func checkFailover(_ transport: FakeTransport, _ server: FaultyServer, seed: UInt64) {
        guard seed % 2 == 1, server.instanceFaults > 0 else { return }
        #expect(Set(transport.requests.compactMap(\.url.host)).count == 2, "seed \(seed): no failover")
    }

    /// Waits until the server is quiet and the consumer holds its final state, then checks.
    static func check(_ consumer: Consumer, _ server: FaultyServer, lists: [String], seed: UInt64) async throws {
        let caughtUp = await eventually(60) {
            // A follow that ended (its lists all deleted) asks nothing more, so the server stays noisy.
            (server.isQuiet || consumer.hasEnded) && lists.allSatisfy { consumer.holds(server.final($0), of: $0) }
        }
        let report = "seed \(seed): \(consumer.summary(lists)) server \(lists.map { server.final($0) })"
        #expect(caughtUp, "the consumer did not reach the server's final state: \(report)")
        #expect(consumer.violations.isEmpty, "\(consumer.violations.prefix(5)) \(report)")
        // The one error allowed: a list deleted before the follow showed it is, to the
        // client, a list that never existed, and that ends a follow with the 404 (as documented).
        let goneBeforeShown = consumer.isNotFoundBeforeAnyUpdate && lists.allSatisfy { server.final($0) == nil }
        #expect(
            consumer.error == nil || goneBeforeShown,
            "the follow failed: \(String(describing: consumer.error)) \(report)")
    }
}

/// What a consumer holds of each list, with every update checked as it arrives.
final class Consumer: Sendable {
    struct Held: Equatable {
        var epoch: String
        var version: Int64
        var sections: ListSections
    }

    private struct State {
        var held: [String: Held] = [:]
        var deleted: Set<String> = []
        var violations: [String] = []
        var error: (any Error)?
        var completed = false
        var updates = 0
    }

    private let state = Mutex(State())
    let server: FaultyServer

    init(server: FaultyServer) { self.server = server }

    func receive(list: String, _ update: FollowUpdate) {
        state.withLock { state in
            state.updates += 1
            if state.deleted.contains(list) {
                state.violations.append("\(list): \(update) after .deleted")
                return
            }
            switch update {
            case .snapshot(let snapshot), .reset(let snapshot):
                if case .snapshot = update, state.held[list] != nil {
                    state.violations.append("\(list): a second .snapshot (a refetch is a .reset)")
                }
                state.held[list] = Held(epoch: snapshot.epoch, version: snapshot.version, sections: snapshot.sections)
            case .changes(let change):
                guard let held = state.held[list] else {
                    state.violations.append("\(list): changes from \(change.from) before any snapshot")
                    return
                }
                guard change.from == held.version, change.state.epoch == held.epoch, change.before == held.sections
                else {
                    state.violations.append(
                        "\(list): changes from \(change.state.epoch)@\(change.from) while holding \(held.epoch)@\(held.version)"
                    )
                    return
                }
                var sections = held.sections
                for (index, applied) in change.stages.enumerated() {
                    do {
                        sections = try applied.stage.apply(to: sections)
                    } catch {
                        state.violations.append("\(list): stage \(index) from \(change.from) does not apply: \(error)")
                        return
                    }
                    if sections != applied.sections {
                        state.violations.append("\(list): stage \(index) from \(change.from) gives other sections")
                    }
                }
                if sections != change.state.sections {
                    state.violations.append("\(list): the stages from \(change.from) do not end at the state")
                }
                state.held[list] = Held(
                    epoch: change.state.epoch, version: change.state.version, sections: change.state.sections)
            case .deleted:
                state.held[list] = nil
                state.deleted.insert(list)
            }
            if let held = state.held[list], !server.had(list, held) {
                state.violations.append("\(list): \(held.epoch)@\(held.version) is not a state the server had")
            }
        }
    }

    func fail(_ error: any Error) { state.withLock { $0.error = error } }
    func complete() { state.withLock { $0.completed = true } }

    /// Whether the consumer holds `final` for `list` (`nil`: saw it deleted, or the
    /// follow ended with a 404 before it showed anything).
    func holds(_ final: Held?, of list: String) -> Bool {
        state.withLock { state in
            guard let final else { return state.deleted.contains(list) || Self.notFoundBeforeAnyUpdate(state) }
            return state.held[list] == final
        }
    }

    /// Whether the follow failed with a 404 before it emitted anything.
    var isNotFoundBeforeAnyUpdate: Bool { state.withLock { Self.notFoundBeforeAnyUpdate($0) } }

    private static func notFoundBeforeAnyUpdate(_ state: State) -> Bool {
        state.updates == 0 && (state.error as? ListClientError)?.status == 404
    }

    /// Whether the follow completed or failed.
    var hasEnded: Bool { state.withLock { $0.completed || $0.error != nil } }

    var violations: [String] { state.withLock { $0.violations } }
    var error: (any Error)? { state.withLock { $0.error } }

    func summary(_ lists: [String]) -> String {
        state.withLock { state in
            let held = lists.map { list in
                state.held[list].map { "\(list) \($0.epoch)@\($0.version)" } ?? "\(list) none"
            }
            return "\(state.updates) updates, holding \(held), deleted \(state.deleted.sorted())"
        }
    }
}

/// An in-memory listd whose answers go wrong on purpose, for ``FollowFaultTests``.
///
/// For its first `budget` requests it may write to a list, delete one (for good) or
/// re-create one (a new epoch) before answering, and it answers about a third of them
/// with a fault. Then it goes quiet: no writes, no faults, and a long-poll with nothing
/// new parks, as the real server's does. Answers are computed as the server's are: the
/// net change from the version asked for (SectionDiff's changeset), a reset for a
/// version or epoch it does not know.
final class FaultyServer: Sendable {
    struct Refused: Error {}

    private struct Entry {
        var epoch: String
        var version: Int64
        var sections: ListSections
        /// The sections at each version of this epoch.
        var history: [Int64: ListSections]
        var deleted = false
    }

    private struct State {
        var rng: SeededGenerator
        var lists: [String: Entry] = [:]
        var budget: Int
        var counter = 0
        /// Every (list, epoch, version) the server held, with its sections.
        var seen: [String: ListSections] = [:]
        /// How many faults said the instance failed (a refusal, a 5xx), which moves a follow on.
        var instanceFaults = 0
    }

    private enum Outcome {
        case answer(ClientResponse)
        case refuse
        case park
    }

    private let state: Mutex<State>

    init(seed: UInt64, lists: [String], budget: Int) {
        var state = State(rng: SeededGenerator(seed: seed &* 0x9E37_79B9 &+ 7), budget: budget)
        for list in lists {
            let sections: ListSections = [
                .init(model: Self.entry("s0", "{}"), items: (1...4).map { Self.entry("\(list)\($0)", "\($0)") }),
                .init(model: Self.entry("s1", "{}"), items: []),
            ]
            state.lists[list] = Entry(epoch: "e0", version: 1, sections: sections, history: [1: sections])
            state.seen[Self.key(list, "e0", 1)] = sections
        }
        self.state = Mutex(state)
    }

    static func entry(_ id: String, _ model: String) -> JSONEntry { JSONEntry(id: id, model: JSONText(model)) }
    static func key(_ list: String, _ epoch: String, _ version: Int64) -> String { "\(list)|\(epoch)|\(version)" }

    var isQuiet: Bool { state.withLock { $0.budget <= 0 } }

    /// How many refusals and 5xx answers the server made.
    var instanceFaults: Int { state.withLock { $0.instanceFaults } }

    /// The list's state now, `nil` when it is deleted.
    func final(_ list: String) -> Consumer.Held? {
        state.withLock { state in
            guard let entry = state.lists[list], !entry.deleted else { return nil }
            return Consumer.Held(epoch: entry.epoch, version: entry.version, sections: entry.sections)
        }
    }

    /// Whether the server held exactly this state of `list` at some point.
    func had(_ list: String, _ held: Consumer.Held) -> Bool {
        state.withLock { $0.seen[Self.key(list, held.epoch, held.version)] == held.sections }
    }

    func respond(_ request: ClientRequest) async throws -> ClientResponse {
        switch state.withLock({ Self.step(&$0, request) }) {
        case .answer(let response): return response
        case .refuse: throw Refused()
        case .park: return try await FakeTransport.park()
        }
    }

    // MARK: - One request

    private static func step(_ state: inout State, _ request: ClientRequest) -> Outcome {
        let noisy = state.budget > 0
        if noisy {
            state.budget -= 1
            change(&state)
            if let fault = fault(&state, request) { return fault }
        }
        let path = request.url.path.split(separator: "/").map(String.init)
        let query = Dictionary(
            (URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []).map {
                ($0.name, $0.value ?? "")
            }
        ) { first, _ in first }
        let mayPark = !noisy && query["timeout"] != "0"
        switch (request.method, path.count) {
        case ("GET", 2):
            guard let entry = state.lists[path[1]], !entry.deleted else { return .answer(notFound(path[1])) }
            var writer = JSONWriter()
            writer.snapshot(
                id: path[1], name: path[1], epoch: entry.epoch, version: entry.version, sections: entry.sections)
            return .answer(json(writer.bytes))
        case ("GET", 3):
            let list = path[1]
            guard let entry = state.lists[list], !entry.deleted else { return .answer(notFound(list)) }
            let since = query["since"].flatMap { Int64($0) } ?? -1
            if since == entry.version && entry.epoch == query["epoch"] && mayPark { return .park }
            return .answer(json(answer(list, entry, since: since, epoch: query["epoch"], rng: &state.rng)))
        case ("POST", 1):
            guard let body = try? JSONValue(parsing: request.body ?? []), let asked = body["lists"]?.objectValue else {
                return .answer(problem(400, "bad body"))
            }
            var answers: [(list: String, json: [UInt8])] = []
            var deleted: [String] = []
            for (list, since) in asked.sorted(by: { $0.key < $1.key }) {
                guard let entry = state.lists[list], !entry.deleted else {
                    // The real server refuses the whole request for a list it does not know,
                    // and names one deleted while the request waited: either may happen.
                    if Bool.random(using: &state.rng) { return .answer(notFound(list)) }
                    deleted.append(list)
                    continue
                }
                let epoch = body["epochs"]?[list]?.stringValue
                let version = since.int64Value ?? -1
                if version == entry.version && epoch == entry.epoch { continue }
                answers.append((list, answer(list, entry, since: version, epoch: epoch, rng: &state.rng)))
            }
            if answers.isEmpty && deleted.isEmpty && mayPark { return .park }
            var writer = JSONWriter()
            writer.manyListsAnswer(answers, deleted: deleted)
            return .answer(json(writer.bytes))
        default:
            return .answer(problem(404, "no route \(request.method) \(request.url.path)"))
        }
    }

    /// The answer to `since` in `epoch`: the net change to the current version, no stages
    /// when it is current, a reset when the server does not know the version or the epoch
    /// (and now and then anyway: a client must take a reset at any time).
    private static func answer(
        _ list: String, _ entry: Entry, since: Int64, epoch: String?, rng: inout SeededGenerator
    ) -> [UInt8] {
        var writer = JSONWriter()
        if epoch == entry.epoch, let old = entry.history[since], Int.random(in: 0..<20, using: &rng) != 0 {
            if since == entry.version {
                writer.unchangedAnswer(list: list, epoch: entry.epoch, version: since)
            } else {
                writer.stagedAnswer(
                    list: list, epoch: entry.epoch, from: since, to: entry.version,
                    stages: ListChangeset(from: old, to: entry.sections))
            }
        } else {
            writer.resetAnswer(
                from: since, id: list, name: list, epoch: entry.epoch, version: entry.version,
                sections: entry.sections)
        }
        return writer.bytes
    }

    /// Between requests: a write to a live list (about half the time), now and then
    /// (1 in 50) a re-creation with a new epoch, rarely (1 in 400) a deletion, for good.
    private static func change(_ state: inout State) {
        let live = state.lists.filter { !$0.value.deleted }.keys.sorted()
        guard !live.isEmpty else { return }
        let list = live[Int.random(in: 0..<live.count, using: &state.rng)]
        guard var entry = state.lists[list] else { return }
        switch Int.random(in: 0..<400, using: &state.rng) {
        case 0:
            entry.deleted = true
        case 1..<9:
            state.counter += 1
            entry.epoch = "e\(state.counter)"
            entry.version = Int64.random(in: 1...3, using: &state.rng)
            entry.sections = mutated(entry.sections, &state)
            entry.history = [entry.version: entry.sections]
        case 9..<200:
            entry.version += 1
            entry.sections = mutated(entry.sections, &state)
            entry.history[entry.version] = entry.sections
        default:
            return
        }
        state.seen[key(list, entry.epoch, entry.version)] = entry.sections
        state.lists[list] = entry
    }

    /// A fault instead of the answer, about a third of the time.
    private static func fault(_ state: inout State, _ request: ClientRequest) -> Outcome? {
        let isChanges = request.method == "POST" || request.url.path.hasSuffix("/changes")
        let kind = Int.random(in: 0..<24, using: &state.rng)
        if kind < 5 { state.instanceFaults += 1 }
        switch kind {
        case 0, 1: return .refuse
        case 2: return .answer(problem(500, "database unreachable"))
        case 3:
            return .answer(
                problem(503, "over the connection limit", headers: ["Retry-After": "0"]))
        case 4:
            // An HTTP date already past: retry at once.
            return .answer(
                problem(503, "over the connection limit", headers: ["Retry-After": "Sun, 06 Nov 1994 08:49:37 GMT"]))
        case 5: return .answer(ClientResponse(status: 200, body: Array("<html>proxy</html>".utf8)))
        case 6 where isChanges: return .answer(json(wrong(request, &state, stale: true)))
        case 7 where isChanges: return .answer(json(wrong(request, &state, stale: false)))
        default: return nil
        }
    }

    /// An answer for the request's first list that must be rejected: from a version
    /// before the one asked for (an answer to an older request), or with a stage that
    /// does not apply.
    private static func wrong(_ request: ClientRequest, _ state: inout State, stale: Bool) -> [UInt8] {
        let list: String
        let since: Int64
        let epoch: String?
        if request.method == "POST" {
            let body = try? JSONValue(parsing: request.body ?? [])
            let first = body?["lists"]?.objectValue?.keys.sorted().first ?? ""
            list = first
            since = body?["lists"]?[first]?.int64Value ?? 0
            epoch = body?["epochs"]?[first]?.stringValue
        } else {
            list = request.url.path.split(separator: "/").dropFirst().first.map(String.init) ?? ""
            let items = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
            since = items.first { $0.name == "since" }?.value.flatMap { Int64($0) } ?? 0
            epoch = items.first { $0.name == "epoch" }?.value
        }
        let from = stale ? since - 1 : since
        let stages = stale ? #"[{"sectionDeleted":[0]}]"# : #"[{"itemDeleted":[[99,99]]}]"#
        let text =
            #"{"list":"\#(list)","epoch":"\#(epoch ?? "e0")","from":\#(from),"to":\#(since + 1),"stages":\#(stages)}"#
        if request.method == "POST" { return Array(#"{"lists":{"\#(list)":\#(text)}}"#.utf8) }
        return Array(text.utf8)
    }

    /// `sections` after one to three random edits: items inserted, deleted, updated and
    /// moved (within and across sections), sections inserted, deleted, moved and updated.
    private static func mutated(_ sections: ListSections, _ state: inout State) -> ListSections {
        var sections = sections
        for _ in 0..<Int.random(in: 1...3, using: &state.rng) {
            state.counter += 1
            let counter = state.counter
            let model = String(Int.random(in: 0..<100, using: &state.rng))
            let paths = sections.indices.flatMap { section in sections[section].items.indices.map { (section, $0) } }
            switch Int.random(in: 0..<9, using: &state.rng) {
            case 0..<2 where !sections.isEmpty:
                let section = Int.random(in: 0..<sections.count, using: &state.rng)
                let at = Int.random(in: 0...sections[section].items.count, using: &state.rng)
                sections[section].items.insert(entry("i\(counter)", model), at: at)
            case 2 where !paths.isEmpty:
                let (section, item) = paths[Int.random(in: 0..<paths.count, using: &state.rng)]
                sections[section].items.remove(at: item)
            case 3 where !paths.isEmpty:
                let (section, item) = paths[Int.random(in: 0..<paths.count, using: &state.rng)]
                sections[section].items[item] = entry(sections[section].items[item].id, model)
            case 4 where !paths.isEmpty:
                let (section, item) = paths[Int.random(in: 0..<paths.count, using: &state.rng)]
                let moving = sections[section].items.remove(at: item)
                let target = Int.random(in: 0..<sections.count, using: &state.rng)
                let at = Int.random(in: 0...sections[target].items.count, using: &state.rng)
                sections[target].items.insert(moving, at: at)
            case 5 where sections.count > 1:
                sections.remove(at: Int.random(in: 0..<sections.count, using: &state.rng))
            case 6 where sections.count > 1:
                let moving = sections.remove(at: Int.random(in: 0..<sections.count, using: &state.rng))
                sections.insert(moving, at: Int.random(in: 0...sections.count, using: &state.rng))
            case 7 where !sections.isEmpty:
                let section = Int.random(in: 0..<sections.count, using: &state.rng)
                sections[section].model = entry(sections[section].model.id, #"{"n":\#(model)}"#)
            default:
                let items = (0..<Int.random(in: 0...2, using: &state.rng)).map { entry("i\(counter)-\($0)", model) }
                let at = Int.random(in: 0...sections.count, using: &state.rng)
                sections.insert(.init(model: entry("s\(counter)", "{}"), items: items), at: at)
            }
        }
        return sections
    }

    private static func json(_ bytes: [UInt8]) -> ClientResponse {
        ClientResponse(status: 200, headers: ["Content-Type": "application/json"], body: bytes)
    }

    private static func notFound(_ list: String) -> ClientResponse {
        problem(404, "no list \(list)")
    }

    private static func problem(_ status: Int, _ detail: String, headers: [String: String] = [:]) -> ClientResponse {
        var writer = JSONWriter()
        writer.value(["status": .number(JSONNumber(Int64(status))), "detail": .string(detail)])
        return ClientResponse(
            status: status, headers: headers.merging(["Content-Type": "application/problem+json"]) { a, _ in a },
            body: writer.bytes)
    }
}
