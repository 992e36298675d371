import Foundation
import JSON
import ListClient
import ListdTestSupport
import ReactiveCore
import Synchronization
import Testing

/// A follow's connection state (issue 26): `.connecting`, `.live`,
/// `.reconnecting(attempt:after:)`, `.needsAuth`, `.ended`, in order with the
/// updates, as an Observable and as an AsyncSequence, over a fake transport and
/// through a FaultProxy in front of a real listd.
@Suite struct ConnectionStateTests {
    static let unavailable = FakeTransport.json(#"{"status":503,"detail":"busy"}"#, status: 503)
    static let unauthorized = FakeTransport.json(
        #"{"type":"https://listd.dev/problems/unauthorized","status":401,"detail":"no token"}"#, status: 401,
        headers: ["WWW-Authenticate": "Bearer"])

    /// The events without the jittered delays, which differ run to run.
    static func shape(_ events: [FollowEvent]) -> [String] {
        events.map { event in
            switch event {
            case .update(let update): return "update \(update.state.map { "v\($0.version)" } ?? "deleted")"
            case .restored(let state): return "restored v\(state.version)"
            case .connection(.reconnecting(let attempt, _)): return "reconnecting \(attempt)"
            case .connection(let state): return "\(state)"
            }
        }
    }

    @Test func connectingThenReconnectingThenLive() async throws {
        let transport = FakeTransport { _, index in
            switch index {
            case 0, 1: return Self.unavailable
            case 2: return FakeTransport.json(FollowMachineTests.snapshotV1)
            default: return try await FakeTransport.park()
            }
        }
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        let recorder = Recorder<FollowEvent>()
        let subscription = FollowLoopTests.record(
            client.followEvents(list: "g", options: FollowLoopTests.fast), into: recorder)
        defer { subscription.dispose() }
        try #require(await eventually(30) { recorder.elements.count == 5 })
        #expect(
            Self.shape(recorder.elements) == ["connecting", "reconnecting 1", "reconnecting 2", "update v1", "live"])
        // The wait reported is the back-off's: within [min/2, max] of FollowLoopTests.fast.
        for case .connection(.reconnecting(_, let after)) in recorder.elements {
            #expect(after >= .milliseconds(5) && after <= .milliseconds(50))
        }
    }

    @Test func a401WithAFixedTokenIsNeedsAuthThenTheError() async throws {
        let transport = FakeTransport { _, _ in Self.unauthorized }
        let client = ListClient(baseURL: FollowLoopTests.base, token: "old", transport: transport)
        let recorder = Recorder<FollowEvent>()
        let subscription = FollowLoopTests.record(
            client.followEvents(list: "g", options: FollowLoopTests.fast), into: recorder)
        defer { subscription.dispose() }
        try #require(await eventually(30) { recorder.error != nil })
        #expect(Self.shape(recorder.elements) == ["connecting", "needs auth"])
        #expect((recorder.error as? ListClientError)?.status == 401)
        #expect(transport.requests.count == 1)
    }

    @Test func aDeletionIsTheLastUpdateThenEnded() async throws {
        let transport = FakeTransport { _, index in
            index == 0
                ? FakeTransport.json(FollowMachineTests.snapshotV1)
                : FakeTransport.json(#"{"status":404,"detail":"gone"}"#, status: 404)
        }
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        var events: [FollowEvent] = []
        for try await event in client.events(list: "g", options: FollowLoopTests.fast) { events.append(event) }
        #expect(Self.shape(events) == ["connecting", "update v1", "live", "update deleted", "ended"])
    }

    @Test func aFailureRetryingCannotFixIsEnded() async throws {
        let transport = FakeTransport { _, _ in FollowSequenceTests.problem403 }
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        var events: [FollowEvent] = []
        var caught: ListClientError?
        do {
            for try await event in client.events(list: "g", options: FollowLoopTests.fast) { events.append(event) }
        } catch {
            caught = error
        }
        #expect(Self.shape(events) == ["connecting", "ended"])
        #expect(caught?.status == 403)
    }

    @Test func aMultiListFollowReportsThroughTheOptions() async throws {
        let transport = FakeTransport { request, index in
            if index == 0 { return Self.unavailable }
            if request.url.path == "/lists/g" { return FakeTransport.json(FollowMachineTests.snapshotV1) }
            return try await FakeTransport.park()
        }
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        let states = Mutex<[ConnectionState]>([])
        var options = FollowLoopTests.fast
        options.onConnectionState = { state in states.withLock { $0.append(state) } }
        let recorder = Recorder<ListUpdate>()
        let subscription = FollowLoopTests.record(client.follow(lists: ["g"], options: options), into: recorder)
        defer { subscription.dispose() }
        try #require(await eventually(30) { states.withLock { $0.last } == .live })
        let seen = states.withLock { $0 }
        #expect(seen.count == 3 && seen.first == .connecting)
        guard case .reconnecting(attempt: 1, _) = seen[1] else {
            Issue.record("no reconnecting: \(seen)")
            return
        }
        #expect(recorder.elements.count == 1)
    }

    /// Through a FaultProxy in front of a real listd: refused connections are
    /// reported as reconnecting attempts before the follow is live; a server that
    /// stops puts a live follow back to reconnecting, and it is live again (with the
    /// write made meanwhile) once the server is back.
    @Test func statesUnderInjectedFaultsAndARestart() async throws {
        let first = try await TestServer()
        let writer = first.client()
        _ = try await writer.createList(id: "c", sections: [])
        let proxy = try FaultProxy(
            upstreamPort: first.port, seed: SeededGenerator.seed(for: "statesUnderInjectedFaultsAndARestart"),
            odds: .init(drop: 0, reset: 0, delay: 0, refuse: 0), script: Array(repeating: .refuse, count: 6))
        defer { proxy.stop() }
        let follower = ListClient(baseURL: proxy.baseURL, token: nil)
        let recorder = Recorder<FollowEvent>()
        let subscription = FollowLoopTests.record(
            follower.followEvents(list: "c", options: EndToEndTests.options), into: recorder)
        defer { subscription.dispose() }
        try #require(await eventually(30) { Self.shape(recorder.elements).contains("live") })
        let start = Self.shape(recorder.elements)
        #expect(start.first == "connecting")
        #expect(start.contains("reconnecting 1"), "\(start), fates \(proxy.fates)")
        #expect(start.suffix(2) == ["update v1", "live"], "\(start)")

        first.stop(removeFiles: false)
        try #require(
            await eventually(30) { Self.shape(recorder.elements).dropFirst(start.count).contains("reconnecting 1") })
        let second = try await TestServer(port: first.port, reusing: first)
        defer { second.stop() }
        _ = try await second.client().patchList("c", [.insertSection(id: "back")])
        try #require(
            await eventually(30) {
                recorder.elements.last?.connection == .live
                    && recorder.elements.contains { $0.update?.state?.sections.count == 1 }
            })
        let after = Self.shape(recorder.elements).dropFirst(start.count)
        #expect(after.first == "reconnecting 1" && after.last == "live", "\(after)")
        #expect(recorder.error == nil)
    }

    /// `followState` has the connection state too (the clients issue): `.connecting`, the
    /// retries, `.live`, as a property, and as an async sequence of its values.
    @Test func aStateFollowHasItsConnectionState() async throws {
        // The first answer waits until the test observes, so no state goes unseen.
        let (gate, open) = AsyncStream<Void>.makeStream()
        let transport = FakeTransport { _, index in
            switch index {
            case 0:
                for await _ in gate { break }
                return Self.unavailable
            case 1: return Self.unavailable
            case 2: return FakeTransport.json(FollowMachineTests.snapshotV1)
            default: return try await FakeTransport.park()
            }
        }
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        let follow = client.followState(list: "g", options: FollowLoopTests.fast)
        let seen = Recorder<ConnectionState>()
        let observing = follow.connection.producer.subscribe { event in
            if case .next(let state) = event { seen.on(state) }
        }
        defer { observing.dispose() }
        open.finish()
        // The async way: the property's values, from the current one, until live.
        var states: [ConnectionState] = []
        for try await state in follow.connection.typedValues {
            states.append(state)
            if state == .live { break }
        }
        #expect(states.last == .live)
        #expect(follow.connection.value == .live && follow.state.value?.version == 1)
        let shape = seen.elements.map { state -> String in
            if case .reconnecting(let attempt, _) = state { return "reconnecting \(attempt)" }
            return "\(state)"
        }
        #expect(shape == ["connecting", "reconnecting 1", "reconnecting 2", "live"], "\(shape)")
        follow.stop()
    }

    @Test(arguments: [(403, ConnectionState.ended), (401, .needsAuth)])
    func aStateFollowThatFailsSaysWhyInItsConnection(status: Int, expected: ConnectionState) async throws {
        let transport = FakeTransport { _, _ in status == 401 ? Self.unauthorized : FollowSequenceTests.problem403 }
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        let follow = client.followState(list: "g", options: FollowLoopTests.fast)
        #expect(await eventually(30) { follow.failure.value != nil })
        #expect(follow.connection.value == expected)
        #expect(follow.failure.value?.status == status)
    }

    @Test func aStateFollowOfADeletedListEnds() async throws {
        let transport = FakeTransport { _, index in
            index == 0
                ? FakeTransport.json(FollowMachineTests.snapshotV1)
                : FakeTransport.json(#"{"status":404,"detail":"gone"}"#, status: 404)
        }
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        let follow = client.followState(list: "g", options: FollowLoopTests.fast)
        #expect(await eventually(30) { follow.connection.value == .ended })
        #expect(follow.state.value == nil && follow.failure.value == nil)
    }
}
