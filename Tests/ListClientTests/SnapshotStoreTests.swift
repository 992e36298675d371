import Foundation
import JSON
import ListClientNetworking
import ListdTestSupport
import ReactiveCore
import Synchronization
import Testing

@testable import ListClient

/// Offline reads of followed data (the clients issue): a follow with a snapshot store
/// shows the state it kept at once, marked as restored, then resumes from its version
/// and epoch with a change; a stored state of another epoch is replaced by the server's
/// reset; a corrupt file is reported and ignored; the files are written atomically.
@Suite struct SnapshotStoreTests {
    static func temporaryFolder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("listd-snapshots-\(UUID().uuidString)")
    }

    static func v1() throws -> ListState { try FollowMachineTests.state(FollowMachineTests.snapshotV1) }

    @Test func aFileStoreKeepsOneFilePerListAndViewAndRemovesIt() async throws {
        let v1 = try Self.v1()
        let folder = Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = FileSnapshotStore(directory: folder)
        let open = try ViewSpec(parsing: "where=done:false&order=due")
        #expect(try await store.load(list: "g", view: .wholeList) == nil)
        try await store.save(v1, view: .wholeList)
        var viewed = v1
        viewed.sections.removeLast()
        try await store.save(viewed, view: open)
        #expect(try await store.load(list: "g", view: .wholeList) == v1)
        #expect(try await store.load(list: "g", view: open) == viewed)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(files.count == 2 && files.contains("g.json"), "\(files)")  // no temporary file left
        #expect(store.file(list: "g", view: open).lastPathComponent.hasPrefix("g@"))
        try await store.remove(list: "g", view: .wholeList)
        try await store.remove(list: "g", view: .wholeList)  // nothing kept: no error
        #expect(try await store.load(list: "g", view: .wholeList) == nil)
        #expect(try await store.load(list: "g", view: open) == viewed)
    }

    @Test(arguments: [
        "", "{", "[1,2]", #"{"format":1,"list":"g","view":"","state":{"id":"g"}}"#,
        #"{"format":1,"list":"other","view":"","state":{}}"#, "\u{FF}\u{FE}",
    ])
    func aCorruptFileIsAnErrorOfLoadNeverACrash(text: String) async throws {
        let folder = Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let store = FileSnapshotStore(directory: folder)
        try Data(text.utf8).write(to: store.file(list: "g", view: .wholeList))
        await #expect(throws: SnapshotFileError.self) { try await store.load(list: "g", view: .wholeList) }
    }

    /// A follow whose store file is corrupt reports it, fetches the snapshot as if
    /// nothing were kept, and replaces the file with the server's state.
    @Test func aFollowOverACorruptFileReportsItAndStartsFromTheServer() async throws {
        let v1 = try Self.v1()
        let folder = Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let store = FileSnapshotStore(directory: folder)
        try Data("not json".utf8).write(to: store.file(list: "g", view: .wholeList))
        let transport = FakeTransport { request, _ in
            request.url.path == "/lists/g"
                ? FakeTransport.json(FollowMachineTests.snapshotV1) : try await FakeTransport.park()
        }
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        let failures = Recorder<String>()
        var options = FollowLoopTests.fast
        options.snapshotStore = store
        options.onSnapshotStoreFailure = { failures.on("\($0.operation)") }
        let recorder = Recorder<FollowEvent>()
        let subscription = FollowLoopTests.record(client.followEvents(list: "g", options: options), into: recorder)
        defer { subscription.dispose() }
        #expect(await eventually(30) { ConnectionStateTests.shape(recorder.elements).contains("live") })
        #expect(ConnectionStateTests.shape(recorder.elements) == ["connecting", "update v1", "live"])
        #expect(failures.elements == ["load"])
        #expect(await eventually(30) { (try? await store.load(list: "g", view: .wholeList)) == v1 })
    }

    /// Started offline: the stored state at once (as `.restored`), reconnecting while the
    /// server is away, then a change from the stored version, asked with a poll that does
    /// not wait, and no snapshot fetched.
    @Test func startedOfflineItShowsTheStoredStateThenResumesWithAChange() async throws {
        let v1 = try Self.v1()
        struct Refused: Error {}
        let online = Atomic<Bool>(false)
        let transport = FakeTransport { request, _ in
            guard online.load(ordering: .relaxed) else { throw Refused() }
            if request.url.path == "/lists/g/changes", FollowLoopTests.query(request, "since") == "1" {
                return FakeTransport.json(FollowMachineTests.stagesV1toV2)
            }
            return try await FakeTransport.park()
        }
        let store = InMemorySnapshotStore()
        try await store.save(v1, view: .wholeList)
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        var options = FollowLoopTests.fast
        options.snapshotStore = store
        let follow = client.followState(list: "g", options: options)
        let recorder = Recorder<FollowEvent>()
        let subscription = FollowLoopTests.record(client.followEvents(list: "g", options: options), into: recorder)
        defer { subscription.dispose() }
        try #require(
            await eventually(30) { ConnectionStateTests.shape(recorder.elements).contains("reconnecting 2") })
        #expect(Array(ConnectionStateTests.shape(recorder.elements).prefix(2)) == ["connecting", "restored v1"])
        #expect(follow.state.value == v1 && follow.isFromCache.value)
        online.store(true, ordering: .relaxed)
        try #require(await eventually(30) { recorder.elements.contains { $0.update?.state?.version == 2 } })
        guard case .update(.changes(let change)) = recorder.elements.last(where: { $0.update != nil }) else {
            Issue.record("not a change: \(recorder.elements)")
            return
        }
        #expect(change.from == 1 && change.state.sections.first?.items.map(\.id) == ["kiwi", "pear", "leek"])
        #expect(!transport.requests.contains { $0.url.path == "/lists/g" })
        let firstPoll = try #require(transport.requests.first { $0.url.path == "/lists/g/changes" })
        #expect(FollowLoopTests.query(firstPoll, "epoch") == "e1" && FollowLoopTests.query(firstPoll, "timeout") == "0")
        #expect(await eventually(30) { store.state(of: "g")?.version == 2 })
        #expect(await eventually(30) { follow.state.value?.version == 2 && !follow.isFromCache.value })
        follow.stop()
    }

    /// A stored state of another epoch (the list deleted and created again while the
    /// app was away) is replaced by the server's reset, in the follow and in the store.
    @Test func aStoredStateOfAnotherEpochIsReplacedByTheServersReset() async throws {
        let v1 = try Self.v1()
        let e2 = FollowMachineTests.snapshotV1.replacingOccurrences(of: #""epoch":"e1""#, with: #""epoch":"e2""#)
        let transport = FakeTransport { request, index in
            if request.url.path == "/lists/g/changes", FollowLoopTests.query(request, "epoch") == "e1" {
                return FakeTransport.json(#"{"list":"g","epoch":"e2","from":1,"to":1,"reset":true,"snapshot":\#(e2)}"#)
            }
            return try await FakeTransport.park()
        }
        let store = InMemorySnapshotStore()
        try await store.save(v1, view: .wholeList)
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        var options = FollowLoopTests.fast
        options.snapshotStore = store
        let recorder = Recorder<FollowUpdate>()
        let subscription = FollowLoopTests.record(client.follow(list: "g", options: options), into: recorder)
        defer { subscription.dispose() }
        try #require(await eventually(30) { recorder.elements.count == 2 })
        #expect(recorder.elements[0] == .snapshot(v1))
        guard case .reset(let replaced) = recorder.elements[1] else {
            Issue.record("not a reset: \(recorder.elements)")
            return
        }
        #expect(replaced.epoch == "e2")
        #expect(await eventually(30) { store.state(of: "g")?.epoch == "e2" })
    }

    /// A list deleted while the app was away: the stored state is shown, then the
    /// deletion, and the entry is forgotten.
    @Test func aStoredListDeletedMeanwhileIsDeletedAndForgotten() async throws {
        let v1 = try Self.v1()
        let transport = FakeTransport { _, _ in FakeTransport.json(#"{"status":404,"detail":"gone"}"#, status: 404) }
        let store = InMemorySnapshotStore()
        try await store.save(v1, view: .wholeList)
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        var options = FollowLoopTests.fast
        options.snapshotStore = store
        var updates: [FollowUpdate] = []
        for try await update in client.updates(list: "g", options: options) { updates.append(update) }
        #expect(updates == [.snapshot(v1), .deleted(list: "g")])
        #expect(await eventually(30) { store.state(of: "g") == nil })
    }

    /// A store that counts its writes and takes its time over each.
    final class SlowStore: SnapshotStore {
        let saved = Mutex<[Int64]>([])
        func load(list: String, view: ViewSpec) async throws -> ListState? { nil }
        func save(_ state: ListState, view: ViewSpec) async throws {
            try await Task.sleep(for: .milliseconds(50))
            saved.withLock { $0.append(state.version) }
        }
        func remove(list: String, view: ViewSpec) async throws {}
    }

    /// A burst of updates costs a few writes, not one each, the follow never waits
    /// for one, and the last state is always written.
    @Test func aBurstOfUpdatesIsWrittenOnceAnIntervalAndTheLastStateAlways() async throws {
        let store = SlowStore()
        let v1 = try Self.v1()
        for version in Int64(1)...200 {
            var state = v1
            state.version = version
            SnapshotKeeper.shared.keep(
                .save(state), list: "burst", view: .wholeList, in: store, interval: .milliseconds(200),
                onFailure: nil)
        }
        #expect(await eventually(30) { store.saved.withLock { $0.last } == 200 })
        let saved = store.saved.withLock { $0 }
        #expect(saved.count <= 3, "\(saved)")
        #expect(saved == saved.sorted(), "in order")
        #expect(await eventually(30) { !SnapshotKeeper.shared.isBusy(list: "burst", view: .wholeList, in: store) })
    }

    /// On a real listd, with files: a follow keeps the list; the server stops; a new
    /// follow (an app started offline) shows the kept state at once; the server comes
    /// back with writes made meanwhile, and the follow resumes with a change, over the
    /// long-poll and over the event stream.
    @Test(arguments: [FollowTransport.longPoll, .eventStream])
    func anAppStartedOfflineShowsTheLastStateThenResumes(_ transport: FollowTransport) async throws {
        let folder = Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = try await TestServer()
        let writer = first.client()
        _ = try await writer.createList(id: "o", sections: [])
        _ = try await writer.patchList("o", [.insertSection(id: "a")])
        var options = EventStreamFollowTests.options(transport)
        options.snapshotStore = FileSnapshotStore(directory: folder)
        let before = ListClient(baseURL: first.baseURL, token: nil).followState(list: "o", options: options)
        #expect(await eventually(30) { before.state.value?.sections.count == 1 && before.connection.value == .live })
        let kept = try #require(before.state.value)
        #expect(
            await eventually(30) {
                (try? await FileSnapshotStore(directory: folder).load(list: "o", view: .wholeList)) == kept
            })
        before.stop()
        first.stop(removeFiles: false)

        // Offline: a new app's follow, with a fresh store over the same files.
        options.snapshotStore = FileSnapshotStore(directory: folder)
        let recording = StreamingRecorder(DefaultTransport())
        let after = ListClient(baseURL: first.baseURL, token: nil, transport: recording)
        let recorder = Recorder<FollowEvent>()
        let subscription = FollowLoopTests.record(after.followEvents(list: "o", options: options), into: recorder)
        defer { subscription.dispose() }
        #expect(await eventually(30) { recorder.elements.contains { $0 == .restored(kept) } })
        let second = try await TestServer(port: first.port, reusing: first)
        defer { second.stop() }
        _ = try await second.client().patchList("o", [.insertSection(id: "b")])
        try #require(await eventually(30) { recorder.elements.contains { $0.update?.state?.sections.count == 2 } })
        let updates = recorder.elements.compactMap { event -> FollowUpdate? in
            if case .update(let update) = event { return update }
            return nil
        }
        guard case .changes(let change) = updates.last else {
            Issue.record("not a change: \(ConnectionStateTests.shape(recorder.elements))")
            return
        }
        #expect(change.from == kept.version)
        #expect(!updates.contains { if case .reset = $0 { true } else { false } })
        // Resumed, not refetched: no GET of the list's snapshot.
        #expect(!recording.requests.contains { $0.url.path == "/lists/o" })
        #expect(recorder.error == nil)
    }

    /// A multi-list follow with a store, over `POST /changes` and over one event stream:
    /// g's stored state at once, h's snapshot fetched (nothing kept of it), g resumed with
    /// a change from the stored version, and both kept.
    @Test(arguments: [FollowTransport.longPoll, .eventStream])
    func aMultiListFollowRestoresEachStoredListAndResumesIt(_ transport: FollowTransport) async throws {
        let v1 = try Self.v1()
        let fake = FakeStreamingTransport { request, _ in
            switch (request.method, request.url.path) {
            case ("GET", "/lists/h"): return FakeTransport.json(MultiListEventStreamTests.h)
            case ("POST", "/changes"):
                let body = try JSONValue(parsing: request.body ?? [])
                if body["lists"]?["g"]?.int64Value == 1 {
                    #expect(FollowLoopTests.query(request, "timeout") == "0")
                    return FakeTransport.json(#"{"lists":{"g":\#(MultiListEventStreamTests.gV1toV2)}}"#)
                }
                return try await FakeTransport.park()
            default:
                Issue.record("unexpected \(request.method) \(request.url.path)")
                return try await FakeTransport.park()
            }
        } stream: { request, _ in
            FollowLoopTests.query(request, "lists") == "g:e1:1,h:e1:1"
                ? FakeStreamingTransport.events([.event("change", MultiListEventStreamTests.gV1toV2)], then: .park)
                : FakeStreamingTransport.events([], then: .park)
        }
        let store = InMemorySnapshotStore()
        try await store.save(v1, view: .wholeList)
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: fake)
        var options = EventStreamFollowTests.options(transport, FollowLoopTests.fast)
        options.snapshotStore = store
        let recorder = Recorder<ListUpdate>()
        let subscription = FollowLoopTests.record(client.follow(lists: ["g", "h"], options: options), into: recorder)
        defer { subscription.dispose() }
        try #require(await eventually(30) { recorder.elements.count == 3 })
        #expect(
            MultiListEventStreamTests.kinds(recorder.elements) == [
                "g snapshot v1", "h snapshot v1", "g changes v1-v2",
            ])
        #expect(await eventually(30) { store.state(of: "g")?.version == 2 && store.state(of: "h")?.version == 1 })
        #expect(!fake.requests.contains { $0.url.path == "/lists/g" })
    }
}
