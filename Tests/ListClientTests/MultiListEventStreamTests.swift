import Foundation
import JSON
import ListClient
import ListClientNetworking
import ListdTestSupport
import ReactiveCore
import Synchronization
import Testing

/// A multi-list follow over one event stream (`GET /events?lists=a:E:V,b:E:V`, the
/// clients issue): one stream instead of `POST /changes`, resumed from the versions held
/// after the stream dies, a list deleted while it was down found by probing, one list's
/// failed fetch losing no other's snapshot; and on a real listd, across a restart.
@Suite struct MultiListEventStreamTests {
    static let g = FollowMachineTests.snapshotV1
    static let h = FollowMachineTests.snapshotV1.replacingOccurrences(of: #""id":"g""#, with: #""id":"h""#)
    static let gV1toV2 = FollowMachineTests.stagesV1toV2.replacingOccurrences(of: "\n", with: "")
    static let options = EventStreamFollowTests.options(.eventStream, FollowLoopTests.fast)

    static func snapshots(_ request: ClientRequest) -> ClientResponse? {
        switch (request.method, request.url.path) {
        case ("GET", "/lists/g"): return FakeTransport.json(g)
        case ("GET", "/lists/h"): return FakeTransport.json(h)
        default: return nil
        }
    }

    static func kinds(_ updates: [ListUpdate]) -> [String] {
        updates.map { update in
            switch update.update {
            case .snapshot(let state): return "\(update.list) snapshot v\(state.version)"
            case .reset(let state): return "\(update.list) reset v\(state.version)"
            case .changes(let change): return "\(update.list) changes v\(change.from)-v\(change.state.version)"
            case .deleted: return "\(update.list) deleted"
            }
        }
    }

    @Test func aMultiListFollowTakesOneEventStreamAndNoLongPoll() async throws {
        let transport = FakeStreamingTransport { request, _ in
            if let answer = Self.snapshots(request) { return answer }
            Issue.record("a request besides the snapshots: \(request.method) \(request.url)")
            return try await FakeTransport.park()
        } stream: { _, index in
            index == 0
                ? FakeStreamingTransport.events(
                    [.event("change", Self.gV1toV2), .event("deleted", #"{"list":"h","deleted":true}"#)], then: .park)
                : FakeStreamingTransport.events([], then: .park)
        }
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        let recorder = Recorder<ListUpdate>()
        let subscription = FollowLoopTests.record(
            client.follow(lists: ["g", "h"], options: Self.options), into: recorder)
        defer { subscription.dispose() }
        try #require(await eventually(30) { recorder.elements.count == 4 })
        #expect(
            Self.kinds(recorder.elements) == ["g snapshot v1", "h snapshot v1", "g changes v1-v2", "h deleted"])
        #expect(transport.streams.count == 1)
        let stream = try #require(transport.streams.first)
        #expect(stream.url.path == "/events")
        #expect(FollowLoopTests.query(stream, "lists") == "g:e1:1,h:e1:1")
        #expect(stream.header("Accept") == "text/event-stream")
        #expect(transport.requests.allSatisfy { $0.method == "GET" && $0.url.path.hasPrefix("/lists/") })
        #expect(recorder.error == nil)
    }

    @Test func aStreamThatDiesMidwayIsReopenedFromTheVersionsHeld() async throws {
        let transport = FakeStreamingTransport { request, _ in
            if let answer = Self.snapshots(request) { return answer }
            return try await FakeTransport.park()
        } stream: { _, index in
            // The first stream carries g's change, then its connection ends.
            index == 0
                ? FakeStreamingTransport.events([.event("change", Self.gV1toV2)], then: .end)
                : FakeStreamingTransport.events([], then: .park)
        }
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        let recorder = Recorder<ListUpdate>()
        let states = Recorder<ConnectionState>()
        var options = Self.options
        options.onConnectionState = { states.on($0) }
        let subscription = FollowLoopTests.record(client.follow(lists: ["g", "h"], options: options), into: recorder)
        defer { subscription.dispose() }
        try #require(await eventually(30) { transport.streams.count == 2 })
        // Reopened from g at 2 and h at 1: no refetch, nothing applied twice.
        #expect(FollowLoopTests.query(transport.streams[1], "lists") == "g:e1:2,h:e1:1")
        #expect(transport.requests.count == 2)
        #expect(Self.kinds(recorder.elements) == ["g snapshot v1", "h snapshot v1", "g changes v1-v2"])
        #expect(states.elements.contains { if case .reconnecting(1, _) = $0 { true } else { false } })
        #expect(await eventually(30) { states.elements.last == .live })
    }

    @Test func oneListsFailedFetchDoesNotLoseAnothersSnapshot() async throws {
        struct Refused: Error {}
        let hFetches = Atomic<Int>(0)
        let transport = FakeStreamingTransport { request, _ in
            if request.url.path == "/lists/h", hFetches.add(1, ordering: .relaxed).newValue == 1 { throw Refused() }
            if let answer = Self.snapshots(request) { return answer }
            return try await FakeTransport.park()
        } stream: { request, _ in
            // g's change arrives on the stream opened once both lists are held.
            FollowLoopTests.query(request, "lists") == "g:e1:1,h:e1:1"
                ? FakeStreamingTransport.events([.event("change", Self.gV1toV2)], then: .park)
                : FakeStreamingTransport.events([], then: .park)
        }
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        let recorder = Recorder<ListUpdate>()
        let subscription = FollowLoopTests.record(
            client.follow(lists: ["g", "h"], options: Self.options), into: recorder)
        defer { subscription.dispose() }
        try #require(await eventually(30) { recorder.elements.count == 3 })
        // g's snapshot, taken in the round whose h fetch failed, was emitted; g's
        // change applies to it, and h's snapshot came once, on the retry.
        #expect(Self.kinds(recorder.elements) == ["g snapshot v1", "h snapshot v1", "g changes v1-v2"])
        #expect(transport.requests.map(\.url.path) == ["/lists/g", "/lists/h", "/lists/h"])
        #expect(recorder.error == nil)
    }

    @Test func aListDeletedWhileTheStreamWasDownIsFoundAndTheRestFollowed() async throws {
        let transport = FakeStreamingTransport { request, _ in
            if let answer = Self.snapshots(request) { return answer }
            switch request.url.path {
            case "/lists/h/changes":
                return FakeTransport.json(#"{"status":404,"detail":"no list h"}"#, status: 404)
            case "/lists/g/changes":
                #expect(FollowLoopTests.query(request, "timeout") == "0")
                return FakeTransport.json(#"{"list":"g","epoch":"e1","from":1,"to":1,"stages":[]}"#)
            default: return try await FakeTransport.park()
            }
        } stream: { request, _ in
            // The server refuses a stream that names a list it does not have.
            FollowLoopTests.query(request, "lists")?.contains("h:") == true
                ? FakeStreamingTransport.problem(404, "no list h")
                : FakeStreamingTransport.events([], then: .park)
        }
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        let recorder = Recorder<ListUpdate>()
        let subscription = FollowLoopTests.record(
            client.follow(lists: ["g", "h"], options: Self.options), into: recorder)
        defer { subscription.dispose() }
        try #require(await eventually(30) { transport.streams.count == 2 })
        #expect(Self.kinds(recorder.elements) == ["g snapshot v1", "h snapshot v1", "h deleted"])
        #expect(FollowLoopTests.query(transport.streams[1], "lists") == "g:e1:1")
        #expect(recorder.error == nil && !recorder.isCompleted)
    }

    @Test func aFollowWithAViewLongPollsAndOneOfWholeListsStreamsWithAutomatic() async throws {
        let view = try ViewSpec(parsing: "where=done:false")
        let transport = FakeStreamingTransport { request, _ in
            if request.method == "GET" { return FakeTransport.json(request.url.path.hasSuffix("/g") ? Self.g : Self.h) }
            return try await FakeTransport.park()
        } stream: { _, _ in
            FakeStreamingTransport.events([], then: .park)
        }
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        let viewed = client.follow(views: ["g": view, "h": .wholeList], options: Self.options).subscribe { _ in }
        #expect(await eventually(30) { transport.requests.contains { $0.url.path == "/changes" } })
        viewed.dispose()
        #expect(transport.streams.isEmpty)
        let whole = client.follow(
            lists: ["g", "h"], options: EventStreamFollowTests.options(.automatic, FollowLoopTests.fast)
        ).subscribe { _ in }
        defer { whole.dispose() }
        #expect(await eventually(30) { transport.streams.count == 1 })
    }

    /// On a real listd: two lists on one stream, the server restarted mid-way, writes
    /// before and after, one list deleted: each list ends at the server's state, versions
    /// only go up, the deletion arrives, and nothing was long-polled.
    @Test func aMultiListStreamOnARealServerSurvivesARestart() async throws {
        let first = try await TestServer()
        let writer = first.client()
        _ = try await writer.createList(id: "a", sections: [])
        _ = try await writer.createList(id: "b", sections: [])
        let streaming = StreamingRecorder(DefaultTransport())
        let follower = ListClient(baseURL: first.baseURL, token: nil, transport: streaming)
        let recorder = Recorder<ListUpdate>()
        let states = Recorder<ConnectionState>()
        var options = EventStreamFollowTests.options(.eventStream)
        options.onConnectionState = { states.on($0) }
        let subscription = FollowLoopTests.record(follower.follow(lists: ["a", "b"], options: options), into: recorder)
        defer { subscription.dispose() }
        func sections(_ list: String) -> Int? {
            recorder.elements.last { $0.list == list }?.update.state?.sections.count
        }
        _ = try await writer.patchList("a", [.insertSection(id: "a1")])
        _ = try await writer.patchList("b", [.insertSection(id: "b1")])
        #expect(await eventually(30) { sections("a") == 1 && sections("b") == 1 })
        #expect(await eventually(30) { states.elements.last == .live && streaming.streams.count == 1 })
        // The stream is open on the first server (under load, a stream asked for may
        // connect only after the restart, and then no second one is needed).
        #expect(await eventually(30) { (try? await first.gauge("listd_event_streams")) == 1 })
        first.stop(removeFiles: false)
        let second = try await TestServer(port: first.port, reusing: first)
        defer { second.stop() }
        let again = second.client()
        _ = try await again.patchList("b", [.insertSection(id: "b2")])
        _ = try await again.patchList("a", [.insertSection(id: "a2")])
        #expect(await eventually(30) { sections("a") == 2 && sections("b") == 2 })
        try await again.deleteList("b")
        _ = try await again.patchList("a", [.insertSection(id: "a3")])
        #expect(await eventually(30) { sections("a") == 3 })
        #expect(await eventually(30) { recorder.elements.last { $0.list == "b" }?.update == .deleted(list: "b") })
        let a = try await again.list("a")
        #expect(recorder.elements.last { $0.list == "a" }?.update.state == a)
        for list in ["a", "b"] {
            let versions = recorder.elements.filter { $0.list == list }.compactMap(\.update.state?.version)
            #expect(versions == versions.sorted() && Set(versions).count == versions.count, "\(list): \(versions)")
            // One snapshot each, at the start: the restart was resumed, not refetched.
            #expect(
                recorder.elements.filter { $0.list == list }.first.map {
                    if case .snapshot = $0.update { true } else { false }
                } == true)
            #expect(!recorder.elements.contains { if case .reset = $0.update { true } else { false } })
        }
        #expect(streaming.streams.count >= 2)
        #expect(streaming.streams.allSatisfy { $0.url.path == "/events" })
        #expect(!streaming.requests.contains { $0.url.path.hasSuffix("changes") && $0.method == "POST" })
        #expect(recorder.error == nil)
    }
}

/// A streaming transport with no sockets: requests answered by `send`, streams by `stream`.
final class FakeStreamingTransport: StreamingHTTPTransport {
    typealias StreamResponder = @Sendable (ClientRequest, Int) async throws -> ClientStream
    private let plain: FakeTransport
    private let respondStream: StreamResponder
    private let log = Mutex<[ClientRequest]>([])

    init(_ send: @escaping FakeTransport.Responder, stream: @escaping StreamResponder) {
        plain = FakeTransport(send)
        respondStream = stream
    }

    func send(_ request: ClientRequest) async throws -> ClientResponse { try await plain.send(request) }
    func canStream(to url: URL) -> Bool { true }

    func stream(_ request: ClientRequest) async throws -> ClientStream {
        let index = log.withLock { log in
            log.append(request)
            return log.count - 1
        }
        return try await respondStream(request, index)
    }

    var requests: [ClientRequest] { plain.requests }
    var streams: [ClientRequest] { log.withLock { $0 } }

    /// What a fake stream does after its events.
    enum After { case end, park }

    /// The pieces of a stream, handed out one by one.
    final class Pieces: Sendable {
        let queue: Mutex<[[UInt8]]>
        init(_ pieces: [[UInt8]]) { queue = Mutex(pieces) }
        func next() -> [UInt8]? { queue.withLock { $0.isEmpty ? nil : $0.removeFirst() } }
    }

    /// A 200 event stream: `events`, one piece each, then its end or a wait until cancelled.
    static func events(_ events: [String], then after: After) -> ClientStream {
        let pieces = Pieces(events.map { Array($0.utf8) })
        return ClientStream(
            status: 200, headers: ["Content-Type": "text/event-stream"],
            next: {
                if let piece = pieces.next() { return piece }
                if after == .park { _ = try await FakeTransport.park() }
                return nil
            }, cancel: {})
    }

    /// An error answer to a stream request.
    static func problem(_ status: Int, _ detail: String) -> ClientStream {
        let pieces = Pieces([Array(#"{"status":\#(status),"detail":"\#(detail)"}"#.utf8)])
        return ClientStream(
            status: status, headers: ["Content-Type": "application/problem+json"], next: { pieces.next() },
            cancel: {})
    }
}

extension String {
    /// One server-sent event's text.
    static func event(_ name: String, _ data: String) -> String { "event: \(name)\ndata: \(data)\n\n" }
}
