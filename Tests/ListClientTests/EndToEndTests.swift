import Foundation
import JSON
import ListClient
import ListClientNetworking
import ListdTestSupport
import ReactiveCore
import Testing

/// ListClient against a real listd on loopback.
@Suite(.serialized) struct EndToEndTests {
    static let options = FollowOptions(
        pollTimeout: .seconds(5), responseSlack: .seconds(5), minimumBackoff: .milliseconds(20),
        maximumBackoff: .milliseconds(200))

    static func seed() -> UInt64 {
        let seed =
            ProcessInfo.processInfo.environment["LISTD_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 1...UInt64.max)
        print("ListClient end-to-end seed: \(seed) (set LISTD_SEED to replay)")
        return seed
    }

    static var rounds: Int { ProcessInfo.processInfo.environment["LISTD_LONG_TESTS"] == nil ? 30 : 500 }

    static func lastVersion(_ recorder: Recorder<FollowUpdate>) -> Int64? { recorder.elements.last?.state?.version }

    /// The transports a follower is tried with: what `ListClient(baseURL:token:)`
    /// picks (plain sockets on Linux), and URLSession, which apps on Apple platforms use.
    enum FollowerTransport: CaseIterable {
        case automatic
        case urlSession

        func client(_ baseURL: URL) -> ListClient {
            switch self {
            case .automatic: ListClient(baseURL: baseURL, token: nil)
            case .urlSession: ListClient(baseURL: baseURL, token: nil, transport: URLSessionTransport())
            }
        }
    }

    @Test(arguments: FollowerTransport.allCases)
    func followerAlwaysMatchesTheServerAtTheSameVersion(_ transport: FollowerTransport) async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let writer = server.client()
        var state = try await writer.createList(id: "g", name: "G", sections: RandomWriter.initialSections)
        var random = RandomWriter(seed: Self.seed())
        random.snapshots[state.version] = state.sections
        let recorder = Recorder<FollowUpdate>()
        let follower = transport.client(server.baseURL)
        let subscription = FollowLoopTests.record(follower.follow(list: "g", options: Self.options), into: recorder)
        defer { subscription.dispose() }
        for _ in 0..<Self.rounds { try await random.write(writer, list: "g", state: &state) }
        let final = state.version
        #expect(await eventually(10) { Self.lastVersion(recorder) == final })
        checkFollow(recorder.elements, against: random.snapshots)
        #expect(recorder.elements.contains { if case .changes = $0 { true } else { false } })
        #expect(recorder.error == nil)
    }

    @Test func resumesAcrossAServerRestartWithoutLossOrDuplication() async throws {
        let first = try await TestServer()
        let writer = first.client()
        var state = try await writer.createList(id: "r", name: "R", sections: RandomWriter.initialSections)
        var random = RandomWriter(seed: Self.seed())
        random.snapshots[state.version] = state.sections
        let recorder = Recorder<FollowUpdate>()
        let transport = RecordingTransport(URLSessionTransport())
        let follower = ListClient(baseURL: first.baseURL, token: nil, transport: transport)
        let subscription = FollowLoopTests.record(follower.follow(list: "r", options: Self.options), into: recorder)
        defer { subscription.dispose() }
        for _ in 0..<10 { try await random.write(writer, list: "r", state: &state) }
        let beforeStop = state.version
        #expect(await eventually(10) { Self.lastVersion(recorder) == beforeStop })
        first.stop(removeFiles: false)
        let second = try await TestServer(port: first.port, reusing: first)
        defer { second.stop() }
        for _ in 0..<10 { try await random.write(writer, list: "r", state: &state) }
        let final = state.version
        #expect(await eventually(10) { Self.lastVersion(recorder) == final })
        checkFollow(recorder.elements, against: random.snapshots)
        // Resumed from the version it held: one snapshot only, never a refetch,
        // and polls after the restart asked for what followed the version held.
        let requests = transport.requests
        #expect(requests.filter { $0.url.path == "/lists/r" }.count == 1)
        let sinces = requests.compactMap { FollowLoopTests.query($0, "since").flatMap(Int64.init) }
        #expect(sinces.contains(beforeStop))
        #expect(sinces == sinces.sorted(), "since never goes back")
        #expect(recorder.error == nil)
    }

    @Test func aFollowerThatFellBehindTheHistoryGetsAReset() async throws {
        let server = try await TestServer(["--history-versions", "2"])
        defer { server.stop() }
        let writer = server.client()
        var state = try await writer.createList(id: "h", name: "H", sections: RandomWriter.initialSections)
        let start = state
        var random = RandomWriter(seed: Self.seed())
        let follower = ListClient(baseURL: server.baseURL, token: nil)
        let recorder = Recorder<FollowUpdate>()
        let subscription = FollowLoopTests.record(follower.follow(list: "h", options: Self.options), into: recorder)
        defer { subscription.dispose() }
        #expect(await eventually(10) { recorder.elements.count == 1 })
        #expect(await eventually(10) { (try? await server.gauge("listd_parked_waiters")) == 1 })
        // Send the follower's next polls nowhere while the list moves on past the history.
        follower.baseURL = URL(string: "http://127.0.0.1:1")!
        try await random.write(writer, list: "h", state: &state)
        #expect(await eventually(10) { Self.lastVersion(recorder) == state.version })
        for _ in 0..<6 { try await random.write(writer, list: "h", state: &state) }
        follower.baseURL = server.baseURL
        let final = state
        #expect(await eventually(10) { Self.lastVersion(recorder) == final.version })
        guard case .reset(let reset) = recorder.elements.last else {
            Issue.record("expected a reset, got \(recorder.elements.last.map { "\($0)" } ?? "nothing")")
            return
        }
        #expect(reset.sections == final.sections)
        // The route itself answers a reset for a version outside the kept history.
        let answer = try await writer.changes(of: "h", since: start.version, epoch: start.epoch, timeout: .zero)
        #expect(answer.isReset && answer.snapshot?.sections == final.sections)
    }

    @Test func aListCreatedWithIndexesHasThemDeclared() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let client = server.client()
        _ = try await client.createList(id: "x", name: "X", indexes: ["done", "tags.0"])
        let declared = try await client.indexes(of: "x")["indexes"]?.arrayValue?.compactMap { $0["path"]?.stringValue }
        #expect(declared == ["done", "tags.0"])
    }

    @Test func disposingTheFollowReleasesTheServersWaiter() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let client = server.client()
        _ = try await client.createList(id: "d", name: "D")
        let recorder = Recorder<FollowUpdate>()
        let subscription = FollowLoopTests.record(
            client.follow(list: "d", options: FollowOptions(pollTimeout: .seconds(120))), into: recorder)
        #expect(await eventually(10) { (try? await server.gauge("listd_parked_waiters")) == 1 })
        subscription.dispose()
        #expect(await eventually(10) { (try? await server.gauge("listd_parked_waiters")) == 0 })
        #expect(recorder.elements.count == 1)
    }

    @Test func followManyListsThroughPostChanges() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let client = server.client()
        _ = try await client.createList(id: "m1", name: "1", sections: RandomWriter.initialSections)
        _ = try await client.createList(id: "m2", name: "2", sections: RandomWriter.initialSections)
        let recorder = Recorder<ListUpdate>()
        let subscription = FollowLoopTests.record(
            client.follow(lists: ["m1", "m2"], options: Self.options), into: recorder)
        defer { subscription.dispose() }
        #expect(await eventually(10) { recorder.elements.count == 2 })
        _ = try await client.patchList("m2", [.updateItem(id: "a1", model: 42)])
        try await client.deleteList("m1")
        #expect(await eventually(10) { recorder.elements.count >= 4 })
        let m2 = try await client.list("m2")
        #expect(recorder.elements.contains { $0.list == "m2" && $0.update.state == m2 })
        #expect(recorder.elements.contains { $0 == ListUpdate(list: "m1", update: .deleted(list: "m1")) })
    }
}
