import Foundation
import JSON
import ListClient
import ListClientNetworking
import ListdTestSupport
import Testing

/// The outbox (issue 24): writes queued offline drain in order on reconnect,
/// the file holds them across a close and a SIGKILL, and a restarted outbox
/// sends the rest with the same keys, so each write is applied exactly once.
@Suite struct WriteOutboxTests {
    /// The `OutboxCrashWriter` executable that `swift build` put beside this test bundle.
    static func writerURL() throws -> URL {
        let executable = URL(
            fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        var directory = executable.deletingLastPathComponent()
        for _ in 0..<3 {
            let candidate = directory.appendingPathComponent("OutboxCrashWriter")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        throw TestFailure("no OutboxCrashWriter beside \(executable.path)")
    }

    static func temporaryFile() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent("outbox.jsonl")
    }

    /// The numbers of the items in section `s` of `list`, in order.
    static func numbers(_ client: ListClient, _ list: String) async throws -> [Int] {
        let state = try await client.list(list)
        return try (state.sections.first?.items ?? []).map { item in
            try #require(try JSONValue(parsing: Array(item.model.text.utf8))["n"]?.intValue)
        }
    }

    /// Waits until the outbox has nothing pending.
    static func drained(_ outbox: WriteOutbox) async {
        for await pending in outbox.pendingUpdates() where pending.isEmpty { return }
    }

    static func insert(_ number: Int, _ list: String) -> WriteRequest {
        .createItem(inSection: "s", of: list, ["model": ["n": .number(JSONNumber(number))]])
    }

    /// Offline (nothing listens at the client's address), writes queue and are
    /// pending; when the client points at a listd, they drain in order.
    @Test func queuesOfflineAndDrainsInOrderOnReconnect() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let direct = server.client()
        _ = try await direct.createList(id: "o")
        _ = try await direct.createSection(in: "o", ["id": "s", "model": [:]])
        // A port that refuses, held so that no other test's server can take it meanwhile.
        let dead = try RefusingPort()
        defer { dead.close() }
        let client = ListClient(baseURL: dead.baseURL, token: nil)
        client.retryPolicy = RetryPolicy(
            maxAttempts: 2, minimumBackoff: .milliseconds(1), maximumBackoff: .milliseconds(2))
        let file = try Self.temporaryFile()
        let outbox = try await WriteOutbox(
            file: file, client: client, minimumBackoff: .seconds(30), maximumBackoff: .seconds(30))
        var queued: [PendingWrite] = []
        for number in 0..<5 { queued.append(try await outbox.enqueue(Self.insert(number, "o"))) }
        #expect(outbox.pendingWrites.ids == queued.map(\.id))
        #expect(outbox.pendingWrites.count == 5)

        let outcomes = outbox.outcomes()
        client.baseURL = server.baseURL
        outbox.retryNow()
        await Self.drained(outbox)
        var applied: [UInt64] = []
        for await outcome in outcomes {
            guard case .applied(let write, _) = outcome else { break }
            applied.append(write.id)
            if applied.count == 5 { break }
        }
        #expect(applied == queued.map(\.id))
        #expect(try await Self.numbers(direct, "o") == Array(0..<5))
        await outbox.close()
        // Drained: the file is empty, so a new outbox over it has nothing to send.
        let reopened = try await WriteOutbox(file: file, client: client, draining: false)
        #expect(reopened.pendingWrites.isEmpty)
        await reopened.close()
    }

    /// Closed before sending, reopened: the same writes, ids and keys; a rejected
    /// write leaves the queue and the rest goes on.
    @Test func theFileKeepsWritesAndKeysAcrossACloseAndRejectionsDoNotStall() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let direct = server.client()
        _ = try await direct.createList(id: "o")
        _ = try await direct.createSection(in: "o", ["id": "s", "model": [:]])
        let file = try Self.temporaryFile()
        let first = try await WriteOutbox(file: file, client: direct, draining: false)
        let a = try await first.enqueue(Self.insert(0, "o"))
        let refused = try await first.enqueue(Self.insert(1, "no-such-list"))
        let b = try await first.enqueue(Self.insert(2, "o"))
        await first.close()

        let second = try await WriteOutbox(file: file, client: direct, draining: false)
        #expect(second.pendingWrites.writes == [a, refused, b])
        let outcomes = second.outcomes()
        second.startDraining()
        var seen: [WriteOutcome] = []
        for await outcome in outcomes {
            seen.append(outcome)
            if seen.count == 3 { break }
        }
        guard seen.count == 3, case .rejected(let write, let error) = seen[1] else {
            Issue.record("outcomes: \(seen)")
            return
        }
        #expect(write == refused)
        #expect(error.status == 404)
        #expect(try await Self.numbers(direct, "o") == [0, 2])
        // A write is queued after reopening with the next id.
        let c = try await second.enqueue(Self.insert(3, "o"))
        #expect(c.id == b.id + 1)
        await Self.drained(second)
        await second.close()
    }

    /// A crash in the middle of an append leaves half a line: opening the file
    /// keeps the writes before it, drops the torn tail and rewrites the file, so a
    /// later append does not land after the torn bytes; a `done` line removes its write.
    @Test func aTornLastLineIsDroppedOnOpen() async throws {
        let file = try Self.temporaryFile()
        let client = ListClient(baseURL: try #require(URL(string: "http://127.0.0.1:1")), token: nil)
        let first = try await WriteOutbox(file: file, client: client, draining: false)
        let kept = try await first.enqueue(Self.insert(0, "o"))
        let finished = try await first.enqueue(Self.insert(1, "o"))
        await first.close()
        let handle = try FileHandle(forUpdating: file)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("{\"done\":\"\(finished.id)\"}\n{\"id\":\"9\",\"key\":\"ab".utf8))
        try handle.close()

        let second = try await WriteOutbox(file: file, client: client, draining: false)
        #expect(second.pendingWrites.writes == [kept])
        let next = try await second.enqueue(Self.insert(2, "o"))
        #expect(next.id > kept.id)
        await second.close()
        let third = try await WriteOutbox(file: file, client: client, draining: false)
        #expect(third.pendingWrites.writes == [kept, next])
        await third.close()
    }

    /// Issue 24's restart test: a child process queues 400 writes and is SIGKILLed
    /// while draining; a new outbox over its file sends the rest with the same
    /// keys; the list ends with every write exactly once, in order.
    @Test func survivesSIGKILLMidDrain() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let direct = server.client()
        _ = try await direct.createList(id: "k")
        _ = try await direct.createSection(in: "k", ["id": "s", "model": [:]])
        let file = try Self.temporaryFile()
        let count = 400
        let (process, reader) = try ChildProcess.piped(
            try Self.writerURL(), [server.baseURL.absoluteString, file.path, "k", String(count)])
        // Blocking reads on a thread of their own, not a cooperative one.
        let text = try await blocking { () -> String in
            var text = ""
            let deadline = Date().addingTimeInterval(60)
            while text.components(separatedBy: "applied").count <= 40 && Date() < deadline {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            text += String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
            return text
        }
        #expect(process.wasSignaled)
        #expect(text.hasPrefix("queued\n"))
        #expect(!text.contains("drained"))
        let appliedBefore = try await Self.numbers(direct, "k")
        #expect(appliedBefore.count >= 40)
        #expect(appliedBefore.count < count)

        let outbox = try await WriteOutbox(file: file, client: direct)
        await Self.drained(outbox)
        await outbox.close()
        #expect(try await Self.numbers(direct, "k") == Array(0..<count))
        print("survivesSIGKILLMidDrain: \(appliedBefore.count) of \(count) applied before the kill")
    }
}
