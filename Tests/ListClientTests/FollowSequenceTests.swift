import Foundation
import JSON
import ListClient
import ListdTestSupport
import ReactiveCore
import Synchronization
import Testing

/// Follows as `AsyncSequence`s with typed errors (issue 26): what they deliver,
/// the error they throw, and that leaving the loop stops the network work.
@Suite struct FollowSequenceTests {
    static let problem403 = FakeTransport.json(
        #"{"type":"https://listd.dev/problems/forbidden","status":403,"detail":"no"}"#, status: 403)

    @Test func deliversSnapshotThenChangesThenThrowsTheTypedError() async throws {
        let transport = FakeTransport { _, index in
            switch index {
            case 0: return FakeTransport.json(FollowMachineTests.snapshotV1)
            case 1: return FakeTransport.json(FollowMachineTests.stagesV1toV2)
            default: return Self.problem403
            }
        }
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        var versions: [Int64?] = []
        var caught: ListClientError?
        do {
            for try await update in client.updates(list: "g", options: FollowLoopTests.fast) {
                versions.append(update.state?.version)
            }
        } catch {
            // `error` is a ListClientError here, not `any Error`: the sequence's Failure.
            caught = error
        }
        #expect(versions == [1, 2])
        #expect(caught?.status == 403 && caught?.slug == "forbidden")
    }

    @Test func aDeletedListEndsTheLoopWithoutAnError() async throws {
        let transport = FakeTransport { _, index in
            index == 0
                ? FakeTransport.json(FollowMachineTests.snapshotV1)
                : FakeTransport.json(#"{"status":404,"detail":"gone"}"#, status: 404)
        }
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        var updates: [FollowUpdate] = []
        for try await update in client.updates(list: "g", options: FollowLoopTests.fast) { updates.append(update) }
        #expect(updates.count == 2)
        #expect(updates.last == .deleted(list: "g"))
    }

    @Test func cancellingTheConsumingTaskCancelsTheLongPollAndSendsNoMore() async throws {
        let transport = FakeTransport { _, index in
            index == 0 ? FakeTransport.json(FollowMachineTests.snapshotV1) : try await FakeTransport.park()
        }
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        let received = Atomic<Int>(0)
        let consumer = Task {
            var count = 0
            for try await _ in client.updates(list: "g", options: FollowLoopTests.fast) {
                count += 1
                received.store(count, ordering: .relaxed)
            }
            return count
        }
        // The snapshot is in and the long-poll after it is parked.
        try #require(await eventually(30) { received.load(ordering: .relaxed) == 1 && transport.requests.count == 2 })
        #expect(transport.cancelledCount == 0)
        consumer.cancel()
        // The loop ends normally (next returns nil) and the parked long-poll is cancelled.
        #expect(try await consumer.value == 1)
        #expect(await eventually(30) { transport.cancelledCount == 1 })
        #expect(transport.requests.count == 2)
    }

    @Test func leavingTheLoopWithBreakCancelsTheLongPoll() async throws {
        let transport = FakeTransport { _, index in
            index == 0 ? FakeTransport.json(FollowMachineTests.snapshotV1) : try await FakeTransport.park()
        }
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        for try await update in client.updates(list: "g", options: FollowLoopTests.fast) {
            #expect(update.state?.version == 1)
            // Wait until the long-poll is out, so that leaving has something to cancel.
            try #require(await eventually(30) { transport.requests.count == 2 })
            break
        }
        #expect(await eventually(30) { transport.cancelledCount == 1 })
        #expect(transport.requests.count == 2)
    }

    @Test func typedValuesOfAnyObservableMapOtherErrorsToTransport() async throws {
        struct Boom: Error {}
        let source = Observable<Int>.create { observer in
            observer.onNext(1)
            observer.onNext(2)
            observer.onError(Boom())
            return Disposables.create()
        }
        var seen: [Int] = []
        var caught: ListClientError?
        do {
            for try await value in source.typedValues { seen.append(value) }
        } catch {
            caught = error
        }
        #expect(seen == [1, 2])
        #expect(caught?.kind == .transport && caught?.detail.contains("Boom") == true)
    }

    @Test func manyListsAsASequence() async throws {
        let transport = FakeTransport { request, index in
            if request.url.path == "/lists/g" { return FakeTransport.json(FollowMachineTests.snapshotV1) }
            if request.url.path == "/lists/h" {
                return FakeTransport.json(
                    FollowMachineTests.snapshotV1.replacingOccurrences(of: #""g""#, with: #""h""#))
            }
            return try await FakeTransport.park()
        }
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        var lists: Set<String> = []
        for try await update in client.updates(lists: ["g", "h"], options: FollowLoopTests.fast) {
            lists.insert(update.list)
            if lists.count == 2 { break }
        }
        #expect(lists == ["g", "h"])
    }

    /// Against a real listd: the sequence reaches every version the writer made, in order.
    @Test func aSequenceFollowsARealServerToTheLastWrite() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let writer = server.client()
        _ = try await writer.createList(id: "s", sections: [])
        _ = try await writer.patchList("s", [.insertSection(id: "a")])
        let writes = 20
        let follower = server.client()
        let consumer = Task { () throws(ListClientError) -> [Int64] in
            var versions: [Int64] = []
            var items = 0
            for try await update in follower.updates(list: "s", options: EndToEndTests.options) {
                if let version = update.state?.version { versions.append(version) }
                items = update.state?.itemCount ?? items
                if items == writes { break }
            }
            return versions
        }
        var last: Int64 = 0
        for index in 0..<writes {
            let model = Model(JSONValue.number(JSONNumber(Int64(index))))
            last = try await writer.patchList(
                "s", [.insertItem(section: "a", id: Identifier(stringLiteral: "i\(index)"), model: model)]
            ).to
        }
        let versions = try await consumer.value
        #expect(versions == versions.sorted() && Set(versions).count == versions.count)
        #expect(versions.last == last)
    }
}
