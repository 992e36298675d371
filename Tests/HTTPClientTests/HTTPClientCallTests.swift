import Foundation
import Glibc
import ListClient
import Server
import ListdTestSupport
import Testing

/// Server's blocking-socket HTTP client against the real listd.
@Suite struct HTTPClientCallTests {
    static func request(
        _ server: TestServer, _ method: String, _ target: String, body: String? = nil, timeout: Duration = .seconds(5)
    ) -> HTTPClientCall.Request {
        HTTPClientCall.Request(
            method: method, host: "127.0.0.1", port: server.port, target: target,
            headers: body == nil ? [] : [("Content-Type", "application/json")], body: body.map { Array($0.utf8) },
            timeout: timeout)
    }

    @Test func getPostAndProblemAnswers() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let health = try HTTPClientCall().perform(Self.request(server, "GET", "/healthz"))
        #expect(health.status == 200)
        let created = try HTTPClientCall().perform(
            Self.request(server, "POST", "/lists", body: #"{"id":"c","name":"C","sections":[]}"#))
        #expect(created.status == 201)
        #expect(created.header("location") == "/lists/c")
        #expect(String(decoding: created.body, as: UTF8.self).contains(#""id":"c""#))
        let missing = try HTTPClientCall().perform(Self.request(server, "GET", "/lists/nope"))
        #expect(missing.status == 404)
        #expect(missing.header("Content-Type")?.hasPrefix("application/problem+json") == true)
        let big = String(repeating: "x", count: 200_000)
        let large = try HTTPClientCall().perform(
            Self.request(server, "PUT", "/lists/c", body: #"{"sections":[{"id":"s","model":"\#(big)","items":[]}]}"#))
        #expect(large.status == 413 || large.status == 400)
    }

    @Test func aRefusedConnectionIsASystemError() throws {
        let request = HTTPClientCall.Request(method: "GET", host: "127.0.0.1", port: 1, target: "/", timeout: .seconds(2))
        #expect(throws: SystemError.self) { try HTTPClientCall().perform(request) }
    }

    @Test func aLongPollTimesOutAtItsDeadline() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        _ = try HTTPClientCall().perform(Self.request(server, "POST", "/lists", body: #"{"id":"t"}"#))
        let started = ContinuousClock.now
        let error = #expect(throws: SystemError.self) {
            try HTTPClientCall().perform(
                Self.request(server, "GET", "/lists/t/changes?since=1&timeout=30", timeout: .milliseconds(300)))
        }
        #expect(error?.errno == ETIMEDOUT)
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test func cancellingAParkedLongPollReleasesTheServersWaiter() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        _ = try HTTPClientCall().perform(Self.request(server, "POST", "/lists", body: #"{"id":"p"}"#))
        let call = HTTPClientCall()
        let request = Self.request(server, "GET", "/lists/p/changes?since=1&timeout=120", timeout: .seconds(130))
        let outcome = Task.detached { () -> Int32? in
            do {
                _ = try call.perform(request)
                return nil
            } catch {
                return (error as? SystemError)?.errno
            }
        }
        #expect(await eventually(10) { (try? await server.gauge("listd_parked_waiters")) == 1 })
        call.cancel()
        #expect(await outcome.value == ECANCELED)
        #expect(await eventually(10) { (try? await server.gauge("listd_parked_waiters")) == 0 })
    }
}
