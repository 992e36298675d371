import Foundation
import Glibc
import HTTP
import ListdTestSupport
import POSIXIO
import Testing

@testable import HTTPClient

/// HTTPClient's blocking-socket client against the real listd.
@Suite struct HTTPClientCallTests {
    static func request(
        _ server: ListdProcess, _ method: HTTPMethod, _ target: String, body: String? = nil,
        timeout: Duration = .seconds(5)
    ) -> HTTPClientCall.Request {
        HTTPClientCall.Request(
            method: method, host: "127.0.0.1", port: server.port, target: target,
            headers: body == nil ? [:] : ["Content-Type": "application/json"], body: body.map { Array($0.utf8) },
            timeout: timeout)
    }

    /// The value of gauge `name` in the server's /metrics, asked through `pool`.
    static func gauge(_ name: String, _ server: ListdProcess, pool: ConnectionPool? = nil) throws -> Double? {
        let text = try HTTPClientCall(pool: pool).perform(request(server, .get, "/metrics")).body
        for line in String(decoding: text, as: UTF8.self).split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.dropFirst(name.count + 1))
        }
        return nil
    }

    @Test func getPostAndProblemAnswers() async throws {
        let server = try await ListdProcess()
        defer { server.stop() }
        let health = try HTTPClientCall().perform(Self.request(server, .get, "/healthz"))
        #expect(health.status == .ok)
        let created = try HTTPClientCall().perform(
            Self.request(server, .post, "/lists", body: #"{"id":"c","name":"C","sections":[]}"#))
        #expect(created.status.code == 201)
        #expect(created.headers["location"] == "/lists/c")
        #expect(String(decoding: created.body, as: UTF8.self).contains(#""id":"c""#))
        let missing = try HTTPClientCall().perform(Self.request(server, .get, "/lists/nope"))
        #expect(missing.status.code == 404)
        #expect(missing.headers["Content-Type"]?.hasPrefix("application/problem+json") == true)
        let big = String(repeating: "x", count: 200_000)
        let large = try HTTPClientCall().perform(
            Self.request(server, .put, "/lists/c", body: #"{"sections":[{"id":"s","model":"\#(big)","items":[]}]}"#))
        #expect(large.status.code == 413 || large.status.code == 400)
    }

    @Test func aRefusedConnectionIsASystemError() throws {
        let request = HTTPClientCall.Request(
            method: .get, host: "127.0.0.1", port: 1, target: "/", timeout: .seconds(2))
        #expect(throws: SystemError.self) { try HTTPClientCall().perform(request) }
    }

    @Test func aLongPollTimesOutAtItsDeadline() async throws {
        let server = try await ListdProcess()
        defer { server.stop() }
        _ = try HTTPClientCall().perform(Self.request(server, .post, "/lists", body: #"{"id":"t"}"#))
        let started = ContinuousClock.now
        let error = #expect(throws: SystemError.self) {
            try HTTPClientCall().perform(
                Self.request(server, .get, "/lists/t/changes?since=1&timeout=120", timeout: .milliseconds(300)))
        }
        #expect(error?.errno == ETIMEDOUT)
        // Well short of the server's answer at 120 s, with room for a loaded machine.
        #expect(ContinuousClock.now - started < .seconds(60))
    }

    @Test func cancellingAParkedLongPollReleasesTheServersWaiter() async throws {
        let server = try await ListdProcess()
        defer { server.stop() }
        let pool = ConnectionPool()
        _ = try HTTPClientCall(pool: pool).perform(Self.request(server, .post, "/lists", body: #"{"id":"p"}"#))
        let call = HTTPClientCall(pool: pool)
        let request = Self.request(server, .get, "/lists/p/changes?since=1&timeout=120", timeout: .seconds(130))
        let outcome = Task.detached { () -> Int32? in
            do {
                _ = try call.perform(request)
                return nil
            } catch {
                return (error as? SystemError)?.errno
            }
        }
        #expect(await eventually(10) { (try? Self.gauge("listd_parked_waiters", server)) == 1 })
        call.cancel()
        #expect(await outcome.value == ECANCELED)
        #expect(await eventually(10) { (try? Self.gauge("listd_parked_waiters", server)) == 0 })
        // The cancelled call's connection was closed, not put back.
        #expect(pool.idleConnections == 0)
    }

    /// Requests through one pool share one TCP connection, as the server sees too.
    @Test func aPoolReusesOneConnectionForRequestAfterRequest() async throws {
        let server = try await ListdProcess()
        defer { server.stop() }
        // An hour: this test's tasks may wait for a thread longer than the default 30 s of idle reuse.
        let pool = ConnectionPool(idleTimeout: .seconds(3600))
        for index in 0..<5 {
            let created = try HTTPClientCall(pool: pool).perform(
                Self.request(server, .post, "/lists", body: #"{"id":"r\#(index)"}"#))
            #expect(created.status.code == 201)
            let read = try HTTPClientCall(pool: pool).perform(Self.request(server, .get, "/lists/r\(index)"))
            #expect(read.status == .ok)
        }
        #expect(pool.connectionsOpened == 1)
        #expect(pool.idleConnections == 1)
        // The server counts the one connection this very request travels on.
        #expect(try Self.gauge("listd_open_connections", server, pool: pool) == 1)
        #expect(pool.connectionsOpened == 1)
        // Without a pool, each call opens and closes its own connection.
        _ = try HTTPClientCall().perform(Self.request(server, .get, "/healthz"))
        #expect(await eventually(10) { (try? Self.gauge("listd_open_connections", server, pool: pool)) == 1 })
    }

    /// A connection the server closed while it sat idle is noticed before use,
    /// so even a POST goes out once, on a new connection.
    @Test func aConnectionClosedWhileIdleIsReplaced() async throws {
        let server = try ScriptedServer([[.answer, .close], [.answer]])
        defer { server.stop() }
        let pool = ConnectionPool()
        #expect(try HTTPClientCall(pool: pool).perform(server.request(.get)).status == .ok)
        #expect(server.waitForClosedConnections(1))
        // The close reaches the client's socket a moment after the server's close returns.
        #expect(await eventually(30) { pool.openIdleConnections == 0 })
        #expect(try HTTPClientCall(pool: pool).perform(server.request(.post, body: "x")).status == .ok)
        #expect(pool.connectionsOpened == 2)
        #expect(server.requests == ["GET", "POST"])
    }

    /// When a reused connection fails before any answer, a GET is repeated on
    /// a new connection, and so is a write with an `Idempotency-Key` (the server
    /// answers its repeat with the first answer)…
    @Test func aSafeOrKeyedRequestIsRetriedOnceOnANewConnection() throws {
        let server = try ScriptedServer([[.answer, .readThenClose], [.answer, .readThenClose], [.answer]])
        defer { server.stop() }
        let pool = ConnectionPool()
        #expect(try HTTPClientCall(pool: pool).perform(server.request(.get)).status == .ok)
        #expect(try HTTPClientCall(pool: pool).perform(server.request(.get)).status == .ok)
        #expect(server.requests == ["GET", "GET", "GET"])
        let keyed = server.request(.delete, headers: ["Idempotency-Key": "k1"])
        #expect(try HTTPClientCall(pool: pool).perform(keyed).status == .ok)
        #expect(pool.connectionsOpened == 3)
        #expect(server.requests == ["GET", "GET", "GET", "DELETE", "DELETE"])
    }

    /// …but a POST is not, and neither is a bare PUT or DELETE: the server may
    /// have acted on it, and a repeat would undo a write made since, or answer
    /// 404 for a delete that was done.
    @Test(arguments: [HTTPMethod.post, .put, .delete, .patch])
    func anUnkeyedWriteIsNotRetried(_ method: HTTPMethod) throws {
        let server = try ScriptedServer([[.answer, .readThenClose], [.answer]])
        defer { server.stop() }
        let pool = ConnectionPool()
        #expect(try HTTPClientCall(pool: pool).perform(server.request(.get)).status == .ok)
        let error = #expect(throws: SystemError.self) {
            try HTTPClientCall(pool: pool).perform(server.request(method, body: "z"))
        }
        #expect(error?.call.contains("\(method) not retried") == true, "\(String(describing: error))")
        #expect(pool.connectionsOpened == 1)
        #expect(server.requests == ["GET", method.rawValue])
    }

    /// A response that asks to close is not followed by a reuse.
    @Test func connectionCloseIsHonoured() throws {
        let server = try ScriptedServer([[.answerAndClose], [.answer]])
        defer { server.stop() }
        let pool = ConnectionPool()
        #expect(try HTTPClientCall(pool: pool).perform(server.request(.get)).status == .ok)
        #expect(pool.idleConnections == 0)
        #expect(try HTTPClientCall(pool: pool).perform(server.request(.get)).status == .ok)
        #expect(pool.connectionsOpened == 2)
    }
}
