import Foundation
import JSON
import ListClient
import ListClientNetworking
import ListClientTestSupport
import ListdTestSupport
import Synchronization
import Testing

/// Idempotency keys and write retries (issue 24): the decisions as values, the
/// requests on a fake transport, and writes whose answers a fault proxy loses on
/// their way back from a real listd.
@Suite struct WriteRetryTests {
    @Test func keysAreUUIDv7Text() throws {
        var random = SeededGenerator(seed: 7)
        let early = IdempotencyKey.make(now: Date(timeIntervalSince1970: 1_700_000_000), using: &random)
        let late = IdempotencyKey.make(now: Date(timeIntervalSince1970: 1_700_000_000.002), using: &random)
        for key in [early, late, IdempotencyKey.make()] {
            let bytes = Array(key.utf8)
            #expect(bytes.count == 36)
            #expect([8, 13, 18, 23].allSatisfy { bytes[$0] == UInt8(ascii: "-") })
            #expect(bytes[14] == UInt8(ascii: "7"))  // version
            #expect("89ab".utf8.contains(bytes[19]))  // variant 10
            #expect(bytes.allSatisfy { (0x20...0x7E).contains($0) })
        }
        #expect(early.hasPrefix("018bcfe5-6800-7"))  // 1_700_000_000_000 ms in hex
        #expect(early < late)
        #expect(IdempotencyKey.make() != IdempotencyKey.make())
    }

    @Test func retriesOnlyWhatMayNotHaveArrived() {
        let transport = ListClientError(kind: .transport, detail: "reset")
        #expect(RetryPolicy.isRetryable(transport))
        for status in [502, 503, 504] {
            #expect(RetryPolicy.isRetryable(ListClientError(kind: .problem, status: status, detail: "")))
        }
        for status in [400, 401, 403, 404, 408, 409, 412, 422, 429, 500] {
            #expect(!RetryPolicy.isRetryable(ListClientError(kind: .problem, status: status, detail: "")))
        }
        #expect(!RetryPolicy.isRetryable(ListClientError(kind: .cancelled, detail: "")))
        #expect(!RetryPolicy.isRetryable(ListClientError(kind: .invalidResponse, detail: "")))
    }

    @Test func givesUpAtMaxAttemptsOrDeadline() {
        let lost = ListClientError(kind: .transport, detail: "reset")
        var attempts = WriteAttempts(policy: RetryPolicy(maxAttempts: 3, deadline: .seconds(60)))
        for expected in [true, true, false] {
            attempts.sending()
            #expect((attempts.retry(after: lost, elapsed: .zero) != nil) == expected)
        }

        var late = WriteAttempts(policy: RetryPolicy(maxAttempts: 10, deadline: .seconds(1)))
        late.sending()
        #expect(late.retry(after: lost, elapsed: .seconds(2)) == nil)

        // A 503's Retry-After is the wait (plus at most half of it as jitter).
        var busy = WriteAttempts(policy: RetryPolicy(maxAttempts: 5, deadline: .seconds(60)))
        busy.sending()
        let wait = busy.retry(
            after: ListClientError(kind: .problem, status: 503, detail: "", retryAfter: 2), elapsed: .zero)
        #expect(wait.map { $0 >= .seconds(2) && $0 <= .seconds(3) + .milliseconds(1) } == true)
        // A Retry-After that ends past the deadline ends the write instead.
        busy.sending()
        let tooLong = busy.retry(
            after: ListClientError(kind: .problem, status: 503, detail: "", retryAfter: 90), elapsed: .zero)
        #expect(tooLong == nil)
        // Never after a 4xx, whatever is left.
        var refused = WriteAttempts(policy: RetryPolicy())
        refused.sending()
        #expect(refused.retry(after: ListClientError(kind: .problem, status: 422, detail: ""), elapsed: .zero) == nil)
    }

    /// On a fake transport: each retry sends the same method, URL, key and body
    /// bytes; a 4xx is never retried; 503 is, after its Retry-After.
    @Test func retrySendsTheSameBytesAndKey() async throws {
        let transport = FakeTransport { request, index in
            switch index {
            case 0: throw ListClientError(kind: .transport, detail: "connection reset")
            case 1: return FakeTransport.json(#"{"detail":"busy"}"#, status: 503, headers: ["Retry-After": "0"])
            default: return FakeTransport.json(#"{"id":"a","model":{}}"#, status: 201)
            }
        }
        let client = ListClient(
            baseURL: try #require(URL(string: "http://127.0.0.1:1")), token: nil, transport: transport)
        client.retryPolicy = RetryPolicy(
            maxAttempts: 5, minimumBackoff: .milliseconds(1), maximumBackoff: .milliseconds(2))
        _ = try await client.createItem(inSection: "s", of: "l", ["model": ["b": 1, "a": "x"]])
        let requests = transport.requests
        #expect(requests.count == 3)
        #expect(client.writeRetries == 2)
        let key = try #require(requests.first?.header("Idempotency-Key"))
        for request in requests {
            #expect(request.method == "POST")
            #expect(request.url == requests[0].url)
            #expect(request.body == requests[0].body)
            #expect(request.header("Idempotency-Key") == key)
        }

        let refusing = FakeTransport { _, _ in FakeTransport.json(#"{"detail":"no"}"#, status: 409) }
        let second = ListClient(
            baseURL: try #require(URL(string: "http://127.0.0.1:1")), token: nil, transport: refusing)
        await #expect(throws: ListClientError.self) { try await second.deleteItem("a", of: "l") }
        #expect(refusing.requests.count == 1)
        #expect(refusing.requests.first?.header("Idempotency-Key") != nil)
        // Reads carry no key.
        let reading = FakeTransport { _, _ in FakeTransport.json("{}") }
        let third = ListClient(baseURL: try #require(URL(string: "http://127.0.0.1:1")), token: nil, transport: reading)
        _ = try await third.sections(of: "l")
        #expect(reading.requests.first?.header("Idempotency-Key") == nil)
    }

    /// With two base URLs, a retry goes to the other instance with the same key
    /// and bytes, and the client stays there.
    @Test func aRetryMovesToTheNextInstance() async throws {
        let transport = FakeTransport { request, _ in
            if request.url.port == 1 { throw ListClientError(kind: .transport, detail: "refused") }
            return FakeTransport.json("{}", status: 200)
        }
        let urls = [try #require(URL(string: "http://127.0.0.1:1")), try #require(URL(string: "http://127.0.0.1:2"))]
        let client = ListClient(baseURLs: urls, token: nil, transport: transport)
        client.retryPolicy = RetryPolicy(minimumBackoff: .milliseconds(1), maximumBackoff: .milliseconds(2))
        _ = try await client.patchItem("a", of: "l", ["model": ["x": 1]])
        let requests = transport.requests
        #expect(requests.map(\.url.port) == [1, 2])
        #expect(requests[0].header("Idempotency-Key") == requests[1].header("Idempotency-Key"))
        #expect(requests[0].body == requests[1].body)
        #expect(client.baseURL == urls[1])
    }

    /// Against the real binary: the proxy loses the answers of the first two
    /// connections that carry this test's requests (a FIN, then a reset, each
    /// after listd answered); the write is applied once and its caller gets the answer.
    ///
    /// The fates go by the list's id in the request (`scriptMarker`): under a
    /// loaded full run, one went once to a connection that was not this write's
    /// (the write was then retried once, not twice), and nothing in the test said whose.
    @Test func aWriteWhoseAnswerIsLostIsAppliedOnce() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let direct = server.client()
        let list = "lost-answers-\(UInt64.random(in: 0...UInt64.max))"
        _ = try await direct.createList(id: list)
        _ = try await direct.createSection(in: list, ["id": "s", "model": [:]])
        let proxy = try FaultProxy(
            upstreamPort: server.port, seed: 1, odds: .init(drop: 0, reset: 0, delay: 0, refuse: 0),
            script: [.drop(afterAnswers: 0), .reset(afterAnswers: 0)], scriptMarker: list)
        defer { proxy.stop() }
        let client = ListClient(baseURL: proxy.baseURL, token: nil)
        client.retryPolicy = RetryPolicy(minimumBackoff: .milliseconds(1), maximumBackoff: .milliseconds(5))
        let answer = try await client.createItem(inSection: "s", of: list, ["model": ["n": 1]])
        #expect(answer["item"]?["model"]?["n"]?.intValue == 1)
        #expect(proxy.answersLost == 2, "the proxy's fates: \(proxy.fates)")
        #expect(client.writeRetries == 2, "the proxy's fates: \(proxy.fates)")
        let state = try await direct.list(list)
        #expect(state.sections.first?.items.count == 1)

        // A delete whose answer is lost: the retry gets the stored 204, not a 404.
        let item = try #require(answer["item"]?["id"]?.stringValue)
        let dropping = try FaultProxy(
            upstreamPort: server.port, seed: 2, odds: .init(drop: 0, reset: 0, delay: 0, refuse: 0),
            script: [.drop(afterAnswers: 0)], scriptMarker: list)
        defer { dropping.stop() }
        let second = ListClient(baseURL: dropping.baseURL, token: nil)
        second.retryPolicy = RetryPolicy(minimumBackoff: .milliseconds(1), maximumBackoff: .milliseconds(5))
        try await second.deleteItem(item, of: list)
        #expect(dropping.answersLost == 1, "the proxy's fates: \(dropping.fates)")
        #expect(second.writeRetries == 1, "the proxy's fates: \(dropping.fates)")
        #expect(try await direct.list(list).sections.first?.items.isEmpty == true)
    }

    /// Issue 24's test: several clients write through a proxy that drops, resets
    /// and delays connections at random; every write is applied exactly once, in
    /// each client's order. 4 × 250 writes by default, 4 × 2,500 with LISTD_LONG_TESTS=1
    /// (Benchmarks/RetryBenchmarks runs the 10,000 in release).
    @Test func manyClientsThroughAFaultyProxy() async throws {
        let clients = 4
        let perClient = SeededGenerator.cases(normal: 250, long: 2_500)
        let seed = SeededGenerator.seed(for: "manyClientsThroughAFaultyProxy")
        let server = try await TestServer()
        defer { server.stop() }
        let proxy = try FaultProxy(upstreamPort: server.port, seed: seed)
        defer { proxy.stop() }
        let report = try await WriteStorm.run(
            server: server.baseURL, proxy: proxy.baseURL, clients: clients, writesPerClient: perClient)
        print(
            "manyClientsThroughAFaultyProxy: \(clients * perClient) writes, lost \(report.lost), duplicated "
                + "\(report.duplicated), out of order \(report.outOfOrder), retries \(report.retries), "
                + "fates \(proxy.fates.sorted { $0.key < $1.key }), \(report.seconds) s")
        #expect(report.lost == 0)
        #expect(report.duplicated == 0)
        #expect(report.outOfOrder == 0)
        #expect(report.retries > 0)
    }
}
