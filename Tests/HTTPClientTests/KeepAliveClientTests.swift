import Foundation
import Glibc
import HTTP
import ListdTestSupport
import POSIXIO
import Synchronization
import Testing

@testable import HTTPClient

/// The event-loop client: exchanges from async code that no thread blocks on,
/// against the real listd and against a scripted server that misbehaves on cue.
@Suite struct KeepAliveClientTests {
    /// A minute unless a test is about timeouts: the deadline runs while the
    /// task waits for one of the cooperative pool's two threads, which other
    /// suites running beside this one can hold for seconds.
    static func request(
        _ port: Int, _ method: HTTPMethod, _ target: String, body: [UInt8]? = nil, timeout: Duration = .seconds(60)
    ) -> HTTPClientCall.Request {
        HTTPClientCall.Request(
            method: method, host: "127.0.0.1", port: port, target: target,
            headers: body == nil ? [:] : ["Content-Type": "application/json"], body: body, timeout: timeout)
    }

    /// For tests that count connections: at the start of a full run a test's
    /// tasks can wait most of a minute for a thread, past the default 30 s after
    /// which an idle connection is no longer reused.
    static let longIdle: Duration = .seconds(3600)

    static func gauge(_ name: String, _ server: ListdProcess) async throws -> Double? {
        let text = try await KeepAliveClient().perform(request(server.port, .get, "/metrics")).body
        for line in String(decoding: text, as: UTF8.self).split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.dropFirst(name.count + 1))
        }
        return nil
    }

    /// Requests one after another share one connection, which waits idle between them.
    @Test func requestsReuseOneConnection() async throws {
        let server = try await ListdProcess()
        defer { server.stop() }
        let client = KeepAliveClient(idleTimeout: Self.longIdle)
        // Counted after the first answer: a new connection the server closed before the
        // request went out (its 10 s head timeout, in a loaded run) is replaced.
        var first: Int?
        for index in 0..<5 {
            let created = try await client.perform(
                Self.request(server.port, .post, "/lists", body: Array(#"{"id":"r\#(index)"}"#.utf8)))
            #expect(created.status.code == 201)
            if first == nil { first = client.connectionsOpened }
            let read = try await client.perform(Self.request(server.port, .get, "/lists/r\(index)"))
            #expect(read.status == .ok)
            #expect(String(decoding: read.body, as: UTF8.self).contains("\"r\(index)\""))
        }
        let missing = try await client.perform(Self.request(server.port, .get, "/lists/nope"))
        #expect(missing.status.code == 404)
        #expect(client.connectionsOpened == first, "every request after the first reused its connection")
        #expect(client.idleConnections == 1)
    }

    /// Many long-polls parked at once, each on its own connection, all answered
    /// by one write: one loop thread hears them all, and every task resumes.
    @Test func manyParkedLongPollsAnsweredTogether() async throws {
        let server = try await ListdProcess()
        defer { server.stop() }
        let writer = KeepAliveClient()
        _ = try await writer.perform(Self.request(server.port, .post, "/lists", body: Array(#"{"id":"m"}"#.utf8)))
        let count = 64
        let clients = (0..<count).map { _ in KeepAliveClient() }
        let shared = KeepAliveClient(idleTimeout: Self.longIdle)
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<count {
                // Half with a client each, half sharing one: a busy client opens another connection.
                let client = index.isMultiple(of: 2) ? clients[index] : shared
                group.addTask {
                    let answer = try await client.perform(
                        Self.request(server.port, .get, "/lists/m/changes?since=1&timeout=30", timeout: .seconds(40)))
                    return answer.status.code
                }
            }
            #expect(await eventually(20) { (try? await Self.gauge("listd_parked_waiters", server)) == Double(count) })
            let patch = try await writer.perform(
                Self.request(
                    server.port, .patch, "/lists/m",
                    body: Array(#"{"ops":[{"op":"insertSection","section":{"id":"s","model":{}},"at":0}]}"#.utf8)))
            #expect(patch.status.code == 200)
            var answered = 0
            for try await status in group {
                #expect(status == 200)
                answered += 1
            }
            #expect(answered == count)
        }
        // One each (a new connection closed by the server before its request went out is replaced).
        #expect(shared.connectionsOpened >= count / 2)
        #expect(shared.idleConnections == shared.maxIdlePerEndpoint)
    }

    /// Cancelling the task of a parked long-poll ends it at once and closes its
    /// connection, so the server releases its waiter; nothing is put back.
    @Test func cancellingAParkedLongPoll() async throws {
        let server = try await ListdProcess()
        defer { server.stop() }
        let client = KeepAliveClient(idleTimeout: Self.longIdle)
        _ = try await client.perform(Self.request(server.port, .post, "/lists", body: Array(#"{"id":"p"}"#.utf8)))
        let poll = Task {
            try await client.perform(
                Self.request(server.port, .get, "/lists/p/changes?since=1&timeout=120", timeout: .seconds(130)))
        }
        #expect(await eventually(10) { (try? await Self.gauge("listd_parked_waiters", server)) == 1 })
        // Counted from here: a new connection the server closed before the request
        // went out (its 10 s head timeout, while this task waited for a thread in a
        // loaded run) is replaced, and that is not what this test is about.
        let opened = client.connectionsOpened
        let started = ContinuousClock.now
        poll.cancel()
        let error = await #expect(throws: SystemError.self) { try await poll.value }
        #expect(error?.errno == ECANCELED)
        // Well short of the poll's 120 s; the margin is for busy suites holding the cooperative threads.
        #expect(ContinuousClock.now - started < .seconds(60))
        #expect(await eventually(10) { (try? await Self.gauge("listd_parked_waiters", server)) == 0 })
        #expect(client.idleConnections == 0)
        // The connection still works for nobody: the next request opens a new one.
        #expect(try await client.perform(Self.request(server.port, .get, "/lists/p")).status == .ok)
        #expect(client.connectionsOpened > opened)
        #expect(client.idleConnections == 1)
    }

    /// A task cancelled before its request goes out sends nothing.
    @Test func aCancelledTaskSendsNothing() async throws {
        let server = try ScriptedServer([[.answer]])
        defer { server.stop() }
        let client = KeepAliveClient()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await client.perform(Self.request(server.port, .get, "/"))
        }
        let error = await #expect(throws: SystemError.self) { try await task.value }
        #expect(error?.errno == ECANCELED)
        #expect(client.connectionsOpened == 0)
    }

    /// The server closes the connection while the request is parked: the call
    /// fails, naming the close, and is not sent again (the connection was new).
    @Test func aConnectionClosedByTheServerMidPoll() async throws {
        let server = try ScriptedServer([[.readThenClose], [.answer]])
        defer { server.stop() }
        let client = KeepAliveClient()
        let error = await #expect(throws: SystemError.self) {
            try await client.perform(Self.request(server.port, .get, "/"))
        }
        #expect(error?.errno == ECONNRESET)
        #expect(error?.call.contains("closed before a response") == true)
        #expect(server.requests == ["GET"])
        #expect(client.idleConnections == 0)
    }

    /// A close in the middle of an answer is an error, even for a GET: some of the answer came.
    @Test func aConnectionClosedMidAnswer() async throws {
        let server = try ScriptedServer([[.answer, .answerPartlyThenClose(60)], [.answer]])
        defer { server.stop() }
        // The second request must reuse the first connection, however long a busy
        // run keeps its task from a thread between the two (CI, session 18: 100 s).
        let client = KeepAliveClient(idleTimeout: Self.longIdle)
        #expect(try await client.perform(Self.request(server.port, .get, "/")).status == .ok)
        let error = await #expect(throws: SystemError.self) {
            try await client.perform(Self.request(server.port, .get, "/"))
        }
        #expect(error?.call.contains("mid-body") == true)
        #expect(server.requests == ["GET", "GET"])
    }

    /// The loop hears a server close an idle connection and drops it, so even a
    /// POST goes out once, on a new connection.
    @Test func aConnectionClosedWhileIdleIsDropped() async throws {
        let server = try ScriptedServer([[.answer, .close], [.answer]])
        defer { server.stop() }
        let client = KeepAliveClient()
        #expect(try await client.perform(Self.request(server.port, .get, "/")).status == .ok)
        #expect(server.waitForClosedConnections(1))
        #expect(await eventually(10) { client.idleConnections == 0 })
        #expect(try await client.perform(Self.request(server.port, .post, "/", body: Array("x".utf8))).status == .ok)
        #expect(client.connectionsOpened == 2)
        #expect(server.requests == ["GET", "POST"])
    }

    /// When a reused connection fails before any answer, a GET goes again on a new connection, and
    /// so does a write with an `Idempotency-Key` (the server answers its repeat with the first answer)…
    @Test func aSafeOrKeyedRequestIsRetriedOnceOnANewConnection() async throws {
        let server = try ScriptedServer([[.answer, .readThenClose], [.answer, .readThenClose], [.answer]])
        defer { server.stop() }
        let client = KeepAliveClient(idleTimeout: Self.longIdle)
        #expect(try await client.perform(Self.request(server.port, .get, "/")).status == .ok)
        #expect(try await client.perform(Self.request(server.port, .get, "/")).status == .ok)
        var keyed = Self.request(server.port, .put, "/", body: Array("y".utf8))
        keyed.headers.add(name: "Idempotency-Key", value: "k1")
        #expect(try await client.perform(keyed).status == .ok)
        #expect(client.connectionsOpened == 3)
        #expect(server.requests == ["GET", "GET", "GET", "PUT", "PUT"])
    }

    /// …but a POST does not, and neither does a bare PUT or DELETE: the server
    /// may have acted on it, and a repeat would undo a write made since, or
    /// answer 404 for a delete that was done.
    @Test(arguments: [HTTPMethod.post, .put, .delete, .patch])
    func anUnkeyedWriteIsNotRetried(_ method: HTTPMethod) async throws {
        let server = try ScriptedServer([[.answer, .readThenClose], [.answer]])
        defer { server.stop() }
        let client = KeepAliveClient(idleTimeout: Self.longIdle)
        #expect(try await client.perform(Self.request(server.port, .get, "/")).status == .ok)
        let error = await #expect(throws: SystemError.self) {
            try await client.perform(Self.request(server.port, method, "/", body: Array("z".utf8)))
        }
        #expect(error?.call.contains("\(method) not retried") == true, "\(String(describing: error))")
        #expect(client.connectionsOpened == 1)
        #expect(server.requests == ["GET", method.rawValue])
    }

    /// An answer that asks to close is not followed by a reuse.
    @Test func connectionCloseIsHonoured() async throws {
        let server = try ScriptedServer([[.answerAndClose], [.answer]])
        defer { server.stop() }
        let client = KeepAliveClient(idleTimeout: Self.longIdle)
        #expect(try await client.perform(Self.request(server.port, .get, "/")).status == .ok)
        #expect(client.idleConnections == 0)
        #expect(try await client.perform(Self.request(server.port, .get, "/")).status == .ok)
        #expect(client.connectionsOpened == 2)
    }

    /// A long-poll past its timeout fails with ETIMEDOUT, soon after it.
    @Test func aTimeoutEndsTheExchange() async throws {
        let server = try await ListdProcess()
        defer { server.stop() }
        let client = KeepAliveClient()
        _ = try await client.perform(Self.request(server.port, .post, "/lists", body: Array(#"{"id":"t"}"#.utf8)))
        let started = ContinuousClock.now
        let error = await #expect(throws: SystemError.self) {
            try await client.perform(
                Self.request(server.port, .get, "/lists/t/changes?since=1&timeout=120", timeout: .milliseconds(300)))
        }
        #expect(error?.errno == ETIMEDOUT)
        // Well before the server's own answer at 120 s; the margin is for a machine
        // whose two cooperative threads other suites hold for seconds.
        #expect(ContinuousClock.now - started < .seconds(60))
        #expect(client.idleConnections == 0)
    }

    /// A request larger than the socket takes at once is sent in parts as room
    /// appears; an answer larger than one read is read in parts.
    @Test func largeRequestsAndAnswers() async throws {
        // The server reads nothing until the client's first send has found the
        // socket full: read at once, it could drain the socket as fast as the
        // client fills it, and the whole request would go in the first send.
        let server = try ScriptedServer([[.waitForGate, .countBody, .answerWithBody(3 * 1024 * 1024)]])
        defer { server.stop() }
        let loop = try HTTPClientLoop.shared()
        let flushes = loop.flushCount
        let partialSends = loop.partialSendCount
        let client = KeepAliveClient()
        let body = [UInt8](repeating: UInt8(ascii: "b"), count: 32 * 1024 * 1024)
        async let answer = client.perform(Self.request(server.port, .put, "/", body: body))
        // A minute: the request's task waits for a cooperative thread, which busy suites can hold for long.
        try await waitUntil("the first send of 32 MiB left part of it unsent", within: .seconds(60)) {
            loop.partialSendCount > partialSends
        }
        server.openGate()
        let counted = try await answer
        #expect(String(decoding: counted.body, as: UTF8.self) == String(body.count))
        #expect(loop.flushCount > flushes, "the rest of the request was not sent by the loop")
        let large = try await client.perform(Self.request(server.port, .get, "/"))
        #expect(large.body.count == 3 * 1024 * 1024)
        #expect(client.connectionsOpened == 1)
    }

    /// A new connection the server closes before the request is sent (its idle
    /// timeout ran while the task waited for a thread) is replaced, even for a
    /// POST: the server never had the request. Found in a CI run where busy
    /// suites held the task past listd's 10 s head timeout.
    @Test func aNewConnectionClosedBeforeTheRequestIsReplaced() async throws {
        // On an address of its own: in a full run, a client of another test still trying a
        // port that was its server's took this server's first connection, and the script went wrong.
        let server = try ScriptedServer([[.close], [.answer]], host: "127.0.0.3")
        defer { server.stop() }
        let waiting = Atomic<Bool>(true)
        let seen = Mutex("")
        let client = KeepAliveClient(
            maxIdlePerEndpoint: 4, idleTimeout: .seconds(30),
            afterConnect: { connection in
                // The first connection only: wait until the loop saw the server end it.
                guard waiting.exchange(false, ordering: .acquiringAndReleasing) else { return }
                let started = ContinuousClock.now
                let lost =
                    (try? await waitUntil("the loop saw the server's close", within: .seconds(60)) {
                        connection.isLost
                    }) != nil
                seen.withLock { $0 = "lost: \(lost) after \(ContinuousClock.now - started)" }
            })
        let answer: HTTPClientCall.Response
        do {
            // A minute: the retry must come within the request's deadline, and in a full run
            // the task waits for a thread for many seconds (5 s ran out before the retry).
            var request = server.request(.post, body: "{}")
            request.timeout = .seconds(60)
            answer = try await client.perform(request)
        } catch {
            let first = seen.withLock { $0 }
            Issue.record(
                "\(error); the first connection: \(first); accepted: \(server.requests); opened: \(client.connectionsOpened)"
            )
            return
        }
        #expect(answer.status == .ok)
        #expect(client.connectionsOpened == 2)
        #expect(server.requests == ["POST"])
    }

    @Test func refusedAndUnresolvableEndpoints() async throws {
        let client = KeepAliveClient()
        // Port 1 on loopback: nobody listens.
        let refused = await #expect(throws: SystemError.self) {
            try await client.perform(Self.request(1, .get, "/"))
        }
        #expect(refused?.errno == ECONNREFUSED)
        let outOfRange = await #expect(throws: SystemError.self) {
            try await client.perform(Self.request(70_000, .get, "/"))
        }
        #expect(outOfRange?.errno == EINVAL)
    }
}
