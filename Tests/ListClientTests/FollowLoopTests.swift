import Foundation
import JSON
import ListClient
import ListdTestSupport
import ReactiveCore
import Synchronization
import Testing

/// The follow loop over a fake transport: requests, retries, cancellation.
@Suite struct FollowLoopTests {
    static let base = URL(string: "http://fake.invalid:1")!
    static let fast = FollowOptions(
        pollTimeout: .seconds(5), responseSlack: .seconds(1), minimumBackoff: .milliseconds(10),
        maximumBackoff: .milliseconds(50))

    static func query(_ request: ClientRequest, _ name: String) -> String? {
        URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == name }?.value
    }

    static func record<E: Sendable>(_ observable: Observable<E>, into recorder: Recorder<E>) -> any Disposable {
        observable.subscribe { event in
            switch event {
            case .next(let element): recorder.on(element)
            case .error(let error): recorder.fail(error)
            case .completed: recorder.complete()
            }
        }
    }

    @Test func snapshotThenChangesWithSinceEpochAndToken() async throws {
        let transport = FakeTransport { request, index in
            switch index {
            case 0: return FakeTransport.json(FollowMachineTests.snapshotV1)
            case 1: return FakeTransport.json(FollowMachineTests.stagesV1toV2)
            default: return try await FakeTransport.park()
            }
        }
        let client = ListClient(baseURL: Self.base, token: "s3cret", transport: transport)
        let recorder = Recorder<FollowUpdate>()
        let subscription = Self.record(client.follow(list: "g", options: Self.fast), into: recorder)
        try #require(await eventually(30) { recorder.elements.count == 2 && transport.requests.count == 3 })
        subscription.dispose()
        let requests = transport.requests
        #expect(requests[0].method == "GET" && requests[0].url.path == "/lists/g")
        #expect(requests[0].header("Authorization") == "Bearer s3cret")
        #expect(requests[1].url.path == "/lists/g/changes")
        #expect(Self.query(requests[1], "since") == "1" && Self.query(requests[1], "epoch") == "e1")
        #expect(Self.query(requests[1], "timeout") == "5")
        #expect(requests[1].timeout == .seconds(6))
        #expect(Self.query(requests[2], "since") == "2")
        guard case .changes(let change) = recorder.elements[1] else { Issue.record("no changes"); return }
        #expect(change.state.version == 2 && change.stages.count == 2)
        #expect(await eventually(30) { transport.cancelledCount == 1 })
    }

    @Test func honoursRetryAfterOn503() async throws {
        let transport = FakeTransport { _, index in
            if index == 0 {
                return FakeTransport.json(
                    #"{"type":"https://listd.dev/problems/overloaded","status":503,"detail":"busy"}"#, status: 503,
                    headers: ["Retry-After": "1"])
            }
            if index == 1 { return FakeTransport.json(FollowMachineTests.snapshotV1) }
            return try await FakeTransport.park()
        }
        let client = ListClient(baseURL: Self.base, token: nil, transport: transport)
        let recorder = Recorder<FollowUpdate>()
        let started = ContinuousClock.now
        let subscription = Self.record(client.follow(list: "g", options: Self.fast), into: recorder)
        defer { subscription.dispose() }
        #expect(await eventually(30) { recorder.elements.count == 1 })
        #expect(ContinuousClock.now - started >= .seconds(1))
        #expect(recorder.error == nil)
    }

    @Test func resumesFromTheSameVersionAfterATransportError() async throws {
        struct Refused: Error {}
        let transport = FakeTransport { request, index in
            switch index {
            case 0: return FakeTransport.json(FollowMachineTests.snapshotV1)
            case 1, 2: throw Refused()
            case 3: return FakeTransport.json(FollowMachineTests.stagesV1toV2)
            default: return try await FakeTransport.park()
            }
        }
        let client = ListClient(baseURL: Self.base, token: nil, transport: transport)
        let recorder = Recorder<FollowUpdate>()
        let subscription = Self.record(client.follow(list: "g", options: Self.fast), into: recorder)
        defer { subscription.dispose() }
        try #require(await eventually(30) { recorder.elements.count == 2 })
        #expect(transport.requests[1...3].allSatisfy { Self.query($0, "since") == "1" })
        #expect(recorder.elements.map { $0.state?.version } == [1, 2])
    }

    @Test func anAnswerThatDoesNotApplyIsRefetchedAsAReset() async throws {
        let bad = #"{"list":"g","epoch":"e1","from":1,"to":2,"stages":[{"itemMoved":[{"from":[0,9],"to":[0,0]}]}]}"#
        let snapshotV2 = FollowMachineTests.snapshotV1.replacingOccurrences(of: #""version":1"#, with: #""version":2"#)
        let transport = FakeTransport { _, index in
            switch index {
            case 0: return FakeTransport.json(FollowMachineTests.snapshotV1)
            case 1: return FakeTransport.json(bad)
            case 2: return FakeTransport.json(snapshotV2)
            default: return try await FakeTransport.park()
            }
        }
        let client = ListClient(baseURL: Self.base, token: nil, transport: transport)
        let recorder = Recorder<FollowUpdate>()
        let subscription = Self.record(client.follow(list: "g", options: Self.fast), into: recorder)
        defer { subscription.dispose() }
        try #require(await eventually(30) { recorder.elements.count == 2 && transport.requests.count == 4 })
        let snapshot = try FollowMachineTests.state(snapshotV2)
        #expect(recorder.elements.last == .reset(snapshot))
        #expect(transport.requests[2].url.path == "/lists/g")
        #expect(Self.query(transport.requests[3], "since") == "2")
        #expect(recorder.error == nil)
    }

    @Test func aListDeletedWhileFollowedEmitsDeletedAndCompletes() async throws {
        let transport = FakeTransport { _, index in
            if index == 0 { return FakeTransport.json(FollowMachineTests.snapshotV1) }
            return FakeTransport.json(
                #"{"type":"https://listd.dev/problems/not-found","status":404,"detail":"no list g"}"#, status: 404)
        }
        let client = ListClient(baseURL: Self.base, token: nil, transport: transport)
        let recorder = Recorder<FollowUpdate>()
        _ = Self.record(client.follow(list: "g", options: Self.fast), into: recorder)
        #expect(await eventually(30) { recorder.isCompleted })
        #expect(recorder.elements.last == .deleted(list: "g"))
    }

    @Test func anUnknownListFailsWithTheProblemType() async throws {
        let transport = FakeTransport { _, _ in
            FakeTransport.json(
                #"{"type":"https://listd.dev/problems/not-found","title":"Not found","status":404,"detail":"no list g"}"#,
                status: 404)
        }
        let client = ListClient(baseURL: Self.base, token: nil, transport: transport)
        let recorder = Recorder<FollowUpdate>()
        _ = Self.record(client.follow(list: "g", options: Self.fast), into: recorder)
        #expect(await eventually(30) { recorder.error != nil })
        let error = try #require(recorder.error as? ListClientError)
        #expect(
            error.kind == .problem && error.status == 404 && error.slug == "not-found" && error.detail == "no list g")
    }

    @Test func stateFollowKeepsTheLatestStateAndStopCancels() async throws {
        let transport = FakeTransport { _, index in
            switch index {
            case 0: return FakeTransport.json(FollowMachineTests.snapshotV1)
            case 1: return FakeTransport.json(FollowMachineTests.stagesV1toV2)
            default: return try await FakeTransport.park()
            }
        }
        let client = ListClient(baseURL: Self.base, token: nil, transport: transport)
        let follow = client.followState(list: "g", options: Self.fast)
        #expect(await eventually(30) { follow.state.value?.version == 2 })
        #expect(follow.state.value?.sections.first?.items.map(\.id) == ["kiwi", "pear", "leek"])
        follow.stop()
        #expect(await eventually(30) { transport.cancelledCount == 1 })
    }

    @Test func followManyUsesPostChangesAndDropsDeletedLists() async throws {
        let other = FollowMachineTests.snapshotV1.replacingOccurrences(of: #""id":"g""#, with: #""id":"h""#)
        let transport = FakeTransport { request, index in
            if request.method == "GET" {
                return FakeTransport.json(request.url.path.hasSuffix("/g") ? FollowMachineTests.snapshotV1 : other)
            }
            if request.url.path == "/changes", index == 2 {
                return FakeTransport.json(
                    #"{"lists":{"g":\#(FollowMachineTests.stagesV1toV2),"h":{"list":"h","deleted":true}}}"#)
            }
            return try await FakeTransport.park()
        }
        let client = ListClient(baseURL: Self.base, token: nil, transport: transport)
        let recorder = Recorder<ListUpdate>()
        let subscription = Self.record(client.follow(lists: ["g", "h"], options: Self.fast), into: recorder)
        #expect(await eventually(30) { recorder.elements.count == 4 && transport.requests.count == 4 })
        subscription.dispose()
        let post = transport.requests[2]
        #expect(post.method == "POST")
        let body = try JSONValue(parsing: post.body ?? [])
        #expect(body["lists"]?["g"]?.int64Value == 1 && body["lists"]?["h"]?.int64Value == 1)
        #expect(body["epochs"]?["g"]?.stringValue == "e1")
        #expect(recorder.elements[2].list == "g" && recorder.elements[2].update.state?.version == 2)
        #expect(recorder.elements[3] == ListUpdate(list: "h", update: .deleted(list: "h")))
        let last = transport.requests[3]
        let lastBody = try JSONValue(parsing: last.body ?? [])
        #expect(lastBody["lists"]?["h"] == nil && lastBody["lists"]?["g"]?.int64Value == 2)
    }

    /// Issue 26: g's snapshot arrived in the same round as h's failed fetch. The round's
    /// updates were dropped while g's machine kept the state, so g's next update was a
    /// change against a snapshot the consumer never got.
    @Test func followManyEmitsASnapshotWhoseNeighboursFetchFailed() async throws {
        struct Refused: Error {}
        let other = FollowMachineTests.snapshotV1.replacingOccurrences(of: #""id":"g""#, with: #""id":"h""#)
        let hFetches = Atomic<Int>(0)
        let transport = FakeTransport { request, _ in
            switch (request.method, request.url.path) {
            case ("GET", "/lists/g"): return FakeTransport.json(FollowMachineTests.snapshotV1)
            case ("GET", "/lists/h"):
                if hFetches.add(1, ordering: .relaxed).newValue == 1 { throw Refused() }
                return FakeTransport.json(other)
            default:
                let body = try JSONValue(parsing: request.body ?? [])
                if body["lists"]?["g"]?.int64Value == 1 {
                    return FakeTransport.json(#"{"lists":{"g":\#(FollowMachineTests.stagesV1toV2)}}"#)
                }
                return try await FakeTransport.park()
            }
        }
        let client = ListClient(baseURL: Self.base, token: nil, transport: transport)
        let recorder = Recorder<ListUpdate>()
        let subscription = Self.record(client.follow(lists: ["g", "h"], options: Self.fast), into: recorder)
        defer { subscription.dispose() }
        try #require(await eventually(30) { recorder.elements.filter { $0.list == "g" }.count == 2 })
        let g = recorder.elements.filter { $0.list == "g" }.map(\.update)
        guard case .snapshot(let first) = g[0], case .changes(let change) = g[1] else {
            Issue.record("g's updates: \(g)"); return
        }
        #expect(first.version == 1 && change.from == 1 && change.state.version == 2)
        #expect(recorder.elements.filter { $0.list == "h" }.map { $0.update.state?.version } == [1])
        #expect(recorder.error == nil)
    }

    /// Issue 26, the same with a deletion: g's 404 in a round whose h fetch failed was
    /// dropped with the round, and g vanished from the follow without a `.deleted`.
    @Test func followManyEmitsADeletionWhoseNeighboursFetchFailed() async throws {
        struct Refused: Error {}
        let other = FollowMachineTests.snapshotV1.replacingOccurrences(of: #""id":"g""#, with: #""id":"h""#)
        let hFetches = Atomic<Int>(0)
        let transport = FakeTransport { request, _ in
            switch (request.method, request.url.path) {
            case ("GET", "/lists/g"):
                return FakeTransport.json(
                    #"{"type":"https://listd.dev/problems/not-found","status":404,"detail":"no list g"}"#, status: 404)
            case ("GET", "/lists/h"):
                if hFetches.add(1, ordering: .relaxed).newValue == 1 { throw Refused() }
                return FakeTransport.json(other)
            default: return try await FakeTransport.park()
            }
        }
        let client = ListClient(baseURL: Self.base, token: nil, transport: transport)
        let recorder = Recorder<ListUpdate>()
        let subscription = Self.record(client.follow(lists: ["g", "h"], options: Self.fast), into: recorder)
        defer { subscription.dispose() }
        try #require(await eventually(30) { recorder.elements.contains { $0.list == "h" } })
        #expect(recorder.elements.first == ListUpdate(list: "g", update: .deleted(list: "g")))
        #expect(recorder.elements.filter { $0.list == "g" }.count == 1)
        #expect(recorder.error == nil)
    }

    /// Issue 26: an answer that did not apply drops the state until the refetch; a 404 on
    /// that refetch is the list deleted (the follow has shown it), not a list that never was.
    @Test func a404OnTheRefetchAfterARejectedAnswerIsADeletion() async throws {
        let bad = #"{"list":"g","epoch":"e1","from":1,"to":2,"stages":[{"itemMoved":[{"from":[0,9],"to":[0,0]}]}]}"#
        let transport = FakeTransport { _, index in
            switch index {
            case 0: return FakeTransport.json(FollowMachineTests.snapshotV1)
            case 1: return FakeTransport.json(bad)
            default:
                return FakeTransport.json(
                    #"{"type":"https://listd.dev/problems/not-found","status":404,"detail":"no list g"}"#, status: 404)
            }
        }
        let client = ListClient(baseURL: Self.base, token: nil, transport: transport)
        let recorder = Recorder<FollowUpdate>()
        let subscription = Self.record(client.follow(list: "g", options: Self.fast), into: recorder)
        defer { subscription.dispose() }
        #expect(await eventually(30) { recorder.isCompleted || recorder.error != nil })
        #expect(recorder.error == nil)
        #expect(recorder.isCompleted)
        #expect(recorder.elements.last == .deleted(list: "g"))
        #expect(transport.requests.count == 3)
    }

    /// Issue 26: `minimumBackoff: .zero` trapped in `Backoff`'s precondition at the follow's
    /// start. A setting must not crash an app: the back-off clamps it, and the follow retries.
    @Test func aZeroBackoffIsClampedAndTheFollowRetries() async throws {
        struct Refused: Error {}
        let transport = FakeTransport { _, index in
            switch index {
            case 0: throw Refused()
            case 1: return FakeTransport.json(FollowMachineTests.snapshotV1)
            default: return try await FakeTransport.park()
            }
        }
        let client = ListClient(baseURL: Self.base, token: nil, transport: transport)
        let options = FollowOptions(
            pollTimeout: .seconds(5), responseSlack: .seconds(1), minimumBackoff: .zero, maximumBackoff: .zero)
        let recorder = Recorder<FollowUpdate>()
        let subscription = Self.record(client.follow(list: "g", options: options), into: recorder)
        defer { subscription.dispose() }
        #expect(await eventually(30) { recorder.elements.count == 1 })
        #expect(recorder.elements.first?.state?.version == 1)
        #expect(recorder.error == nil)
    }

    /// Instances by host name, each answering with its own responder (a dead one throws).
    static func cluster(
        _ hosts: [String], _ respond: @escaping @Sendable (String, ClientRequest) async throws -> ClientResponse
    ) -> (FakeTransport, [URL]) {
        let transport = FakeTransport { request, _ in try await respond(Self.instance(request), request) }
        return (transport, hosts.compactMap { URL(string: "http://\($0).invalid:1") })
    }

    /// The instance a request went to: the first label of its host.
    static func instance(_ request: ClientRequest) -> String {
        String(request.url.host?.split(separator: ".").first ?? "")
    }

    @Test func aFollowWhoseInstanceDiesContinuesOnTheNextWithoutAReset() async throws {
        struct Refused: Error {}
        let (transport, urls) = Self.cluster(["a", "b", "c"]) { host, request in
            switch host {
            case "a":
                if request.url.path == "/lists/g" { return FakeTransport.json(FollowMachineTests.snapshotV1) }
                throw Refused()
            case "b" where Self.query(request, "since") == "1" && Self.query(request, "epoch") == "e1":
                return FakeTransport.json(FollowMachineTests.stagesV1toV2)
            default:
                return try await FakeTransport.park()
            }
        }
        let client = ListClient(baseURLs: urls, token: nil, transport: transport)
        let failovers = Mutex<[Failover]>([])
        var options = Self.fast
        options.onFailover = { failover in failovers.withLock { $0.append(failover) } }
        let recorder = Recorder<FollowUpdate>()
        let subscription = Self.record(client.follow(list: "g", options: options), into: recorder)
        defer { subscription.dispose() }
        try #require(await eventually(30) { recorder.elements.count == 2 })
        #expect(recorder.elements.map { $0.state?.version } == [1, 2])
        guard case .changes = recorder.elements[1] else { Issue.record("not changes: \(recorder.elements[1])"); return }
        let moves = failovers.withLock { $0 }
        #expect(moves.count == 1)
        #expect(moves.first?.from == urls[0] && moves.first?.to == urls[1] && moves.first?.lists == ["g"])
        #expect(moves.first?.error.kind == .transport && moves.first?.count == 1)
        // Later requests of the client skip the dead instance too.
        #expect(client.baseURL == urls[1])
        #expect(transport.requests.allSatisfy { Self.instance($0) != "c" })
    }

    @Test func aFollowGoesRoundTheListPastEveryDeadInstance() async throws {
        struct Refused: Error {}
        // c is dead; a answers only long-polls, b only snapshots.
        let (transport, urls) = Self.cluster(["c", "a", "b"]) { host, request in
            switch (host, request.url.path) {
            case ("b", "/lists/g"): return FakeTransport.json(FollowMachineTests.snapshotV1)
            case ("a", "/lists/g/changes"):
                if Self.query(request, "since") == "1" { return FakeTransport.json(FollowMachineTests.stagesV1toV2) }
                return try await FakeTransport.park()
            default: throw Refused()
            }
        }
        let client = ListClient(baseURLs: urls, token: nil, transport: transport)
        let count = Atomic<Int>(0)
        var options = Self.fast
        options.onFailover = { _ in count.add(1, ordering: .relaxed) }
        let recorder = Recorder<FollowUpdate>()
        let subscription = Self.record(client.follow(list: "g", options: options), into: recorder)
        defer { subscription.dispose() }
        try #require(await eventually(30) { recorder.elements.count == 2 })
        #expect(recorder.elements.map { $0.state?.version } == [1, 2])
        // Snapshot: c refused, a refused, b gave it. Poll: b refused, c refused, a answered.
        #expect(transport.requests.prefix(6).map(Self.instance) == ["c", "a", "b", "b", "c", "a"])
        let polls = transport.requests.filter { $0.url.path.hasSuffix("/changes") }
        #expect(polls.prefix(3).allSatisfy { Self.query($0, "since") == "1" })
        #expect(count.load(ordering: .relaxed) == 4)
        #expect(recorder.error == nil)
    }

    @Test func followManyFailsOverAsAWhole() async throws {
        struct Refused: Error {}
        let (transport, urls) = Self.cluster(["a", "b"]) { host, request in
            if request.method == "GET" { return FakeTransport.json(FollowMachineTests.snapshotV1) }
            if host == "a" { throw Refused() }
            let body = try JSONValue(parsing: request.body ?? [])
            if body["lists"]?["g"]?.int64Value == 1 {
                return FakeTransport.json(#"{"lists":{"g":\#(FollowMachineTests.stagesV1toV2)}}"#)
            }
            return try await FakeTransport.park()
        }
        let client = ListClient(baseURLs: urls, token: nil, transport: transport)
        let recorder = Recorder<ListUpdate>()
        let subscription = Self.record(client.follow(lists: ["g"], options: Self.fast), into: recorder)
        defer { subscription.dispose() }
        try #require(await eventually(30) { recorder.elements.count == 2 })
        #expect(recorder.elements.map { $0.update.state?.version } == [1, 2])
        #expect(client.baseURL == urls[1])
    }
}
