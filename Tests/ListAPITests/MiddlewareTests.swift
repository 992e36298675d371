import HTTP
import JSON
import ListStore
import ListWire
import ListdTestSupport
import MetricsTestKit
import Server
import Synchronization
import Testing

@testable import ListAPI

/// The request pipeline: CORS, access control, metrics, logging and
/// problem rendering are done once, around every route, for answers sent at
/// once and for those sent much later (parked long-polls, event streams).
@Suite(.serialized) struct MiddlewareTests {
    static let origin = "https://app.example"
    static let createBody = #"{"id":"l","name":"L","sections":[{"id":"s","model":{},"items":[{"id":"a","model":1}]}]}"#
    static let insertB = #"{"ops":[{"op":"insertItem","section":"s","item":{"id":"b","model":0}}]}"#

    static func headers(_ fields: [(String, String)]) -> HTTPHeaders {
        var headers = HTTPHeaders()
        for (name, value) in fields { headers.add(name: name, value: value) }
        return headers
    }

    static let fromOrigin = headers([("Origin", origin)])

    /// A service with CORS for ``origin`` whose metrics go to `backend`, and list `l` at version 1.
    static func make(
        _ backend: TestMetrics, accessPolicy: AccessPolicy = AccessPolicy(writeToken: nil, readToken: nil)
    ) async throws -> InProcessService {
        let app = try await InProcessService.make(
            cors: CORSPolicy(origins: [origin]), accessPolicy: accessPolicy,
            metrics: ServiceMetrics(factory: backend))
        let created = app.send(
            .post, "/lists", json: createBody, headers: headers([("Authorization", "Bearer write-token")]))
        #expect(try await created.response().status.code == 201)
        return app
    }

    /// How many answers `listd_http_requests_total` counted for the route, method and status.
    static func counted(_ backend: TestMetrics, _ route: String, _ method: String, _ status: Int) -> Int64 {
        let counter = try? backend.expectCounter(
            "listd_http_requests_total", [("route", route), ("method", method), ("status", String(status))])
        return counter?.totalValue ?? 0
    }

    static func timed(_ backend: TestMetrics, _ route: String) -> Int {
        (try? backend.expectTimer("listd_http_request_duration_seconds", [("route", route)]))?.values.count ?? 0
    }

    // MARK: - Answers sent later

    @Test func anEventStreamsHeadGetsCORSAndIsCounted() async throws {
        let backend = TestMetrics()
        let app = try await Self.make(backend)
        let stream = app.send(.get, "/lists/l/events?since=1", headers: Self.fromOrigin)
        try await waitUntil("the stream is open") { app.service.eventStreams == 1 }
        let head = try #require(stream.streamHead)
        #expect(head.status.code == 200)
        #expect(head.headers["Content-Type"] == "text/event-stream")
        #expect(head.headers["Access-Control-Allow-Origin"] == Self.origin)
        #expect(head.headers["Access-Control-Expose-Headers"] == CORSPolicy.exposedHeaders)
        #expect(Self.counted(backend, "/lists/{list}/events", "GET", 200) == 1)
        #expect(Self.timed(backend, "/lists/{list}/events") == 1)
        stream.disconnect()
        try await waitUntil("the stream is closed") { app.service.eventStreams == 0 }
        await app.close()
    }

    @Test func aParkedLongPollAnsweredByACommitGetsCORSAndIsCounted() async throws {
        let backend = TestMetrics()
        let app = try await Self.make(backend)
        let poll = app.send(.get, "/lists/l/changes?since=1&timeout=30", headers: Self.fromOrigin)
        try await waitUntil("the poll is parked") { app.service.parkedWaiters == 1 }
        #expect(Self.counted(backend, "/lists/{list}/changes", "GET", 200) == 0, "counted only once answered")
        _ = try await app.json(.patch, "/lists/l", json: Self.insertB)
        let response = try await poll.response()
        #expect(response.status.code == 200)
        #expect(response.headers["Access-Control-Allow-Origin"] == Self.origin)
        #expect(response.headers["Vary"] == "Origin")
        #expect(response.headers["Cache-Control"] == "no-store")
        #expect(Self.counted(backend, "/lists/{list}/changes", "GET", 200) == 1)
        #expect(Self.timed(backend, "/lists/{list}/changes") == 1)
        await app.close()
    }

    @Test func aParkedLongPollThatTimesOutGetsCORSAndIsCounted() async throws {
        let backend = TestMetrics()
        let app = try await Self.make(backend)
        let poll = app.send(.get, "/lists/l/changes?since=1&timeout=0.05", headers: Self.fromOrigin)
        let response = try await poll.response()
        let answer = try ChangeAnswer(json: try JSONValue(parsing: response.body))
        #expect(answer.from == 1 && answer.to == 1)
        #expect(response.headers["Access-Control-Allow-Origin"] == Self.origin)
        #expect(Self.counted(backend, "/lists/{list}/changes", "GET", 200) == 1)
        await app.close()
    }

    @Test func aParkedPostChangesGetsCORSAndIsCounted() async throws {
        let backend = TestMetrics()
        let app = try await Self.make(backend)
        let poll = app.send(.post, "/changes", json: #"{"lists":{"l":1},"timeout":30}"#, headers: Self.fromOrigin)
        try await waitUntil("the poll is parked") { app.service.parkedWaiters == 1 }
        _ = try await app.json(.patch, "/lists/l", json: Self.insertB)
        let response = try await poll.response()
        #expect(response.status.code == 200)
        #expect(response.headers["Access-Control-Allow-Origin"] == Self.origin)
        #expect(Self.counted(backend, "/changes", "POST", 200) == 1)
        await app.close()
    }

    @Test func aParkedLongPollOfADeletedListGetsAProblemWithCORS() async throws {
        let backend = TestMetrics()
        let app = try await Self.make(backend)
        let poll = app.send(.get, "/lists/l/changes?since=1&timeout=30", headers: Self.fromOrigin)
        try await waitUntil("the poll is parked") { app.service.parkedWaiters == 1 }
        _ = try await app.send(.delete, "/lists/l").response()
        let response = try await poll.response()
        #expect(response.status.code == 404)
        #expect(response.headers["Content-Type"] == "application/problem+json")
        #expect(response.headers["Access-Control-Allow-Origin"] == Self.origin)
        #expect(Self.counted(backend, "/lists/{list}/changes", "GET", 404) == 1)
        await app.close()
    }

    // MARK: - Problems

    struct Failing: Sendable, CustomTestStringConvertible {
        var method: HTTPMethod
        var target: String
        var body: String?
        var status: Int
        /// The label metrics count it under.
        var route: String

        var testDescription: String { "\(method) \(target) → \(status)" }
    }

    /// One failing request of every kind of route: synchronous, in a task,
    /// answered through the exchange (custom), an event stream, and none.
    static let failing: [Failing] = [
        Failing(method: .get, target: "/ui/nope.js", status: 404, route: "/ui/{file}"),
        Failing(method: .get, target: "/lists/nope", status: 404, route: "/lists/{list}"),
        Failing(method: .get, target: "/lists/nope/sections", status: 404, route: "/lists/{list}/sections"),
        Failing(method: .patch, target: "/lists/l", body: "{", status: 400, route: "/lists/{list}"),
        Failing(
            method: .get, target: "/lists/l/items?where=nocolon", status: 400, route: "/lists/{list}/items"),
        Failing(method: .put, target: "/lists/l/indexes/a..b", status: 400, route: "/lists/{list}/indexes/{path}"),
        Failing(method: .get, target: "/lists/l/changes?since=x", status: 400, route: "/lists/{list}/changes"),
        Failing(method: .post, target: "/changes", body: "{}", status: 400, route: "/changes"),
        Failing(method: .get, target: "/lists/nope/events?since=1", status: 404, route: "/lists/{list}/events"),
        Failing(method: .get, target: "/events", status: 400, route: "/events"),
        Failing(method: .get, target: "/nowhere", status: 404, route: "unmatched"),
        Failing(method: .delete, target: "/healthz", status: 405, route: "unmatched"),
    ]

    @Test(arguments: failing) func aProblemFromAnyRouteIsProblemJSONWithCORSAndCounted(_ request: Failing) async throws
    {
        let backend = TestMetrics()
        let app = try await Self.make(backend)
        let response = try await app.send(
            request.method, request.target, json: request.body, headers: Self.fromOrigin
        ).response()
        #expect(response.status.code == request.status)
        #expect(response.headers["Content-Type"] == "application/problem+json")
        let problem = try JSONValue(parsing: response.body)
        #expect(problem["status"]?.int64Value == Int64(request.status))
        #expect(problem["type"]?.stringValue?.hasPrefix(Problem.typePrefix) == true)
        #expect(problem["detail"]?.stringValue?.isEmpty == false)
        #expect(response.headers["Access-Control-Allow-Origin"] == Self.origin)
        #expect(Self.counted(backend, request.route, request.method.rawValue, request.status) == 1)
        await app.close()
    }

    @Test func accessControlRefusesBeforeTheRouteWithAProblem() async throws {
        let backend = TestMetrics()
        let app = try await Self.make(
            backend, accessPolicy: AccessPolicy(writeToken: "write-token", readToken: "read-token"))
        let anonymous = try await app.send(.get, "/lists/l", headers: Self.fromOrigin).response()
        #expect(anonymous.status.code == 401)
        #expect(anonymous.headers["Content-Type"] == "application/problem+json")
        #expect(anonymous.headers["WWW-Authenticate"] == "Bearer realm=\"listd\"")
        #expect(anonymous.headers["Access-Control-Allow-Origin"] == Self.origin)
        #expect(Self.counted(backend, "/lists/{list}", "GET", 401) == 1)

        var reader = Self.fromOrigin
        reader.add(name: "Authorization", value: "Bearer read-token")
        let write = try await app.send(.delete, "/lists/l", headers: reader).response()
        #expect(write.status.code == 403)
        #expect(write.headers["Content-Type"] == "application/problem+json")
        #expect(Self.counted(backend, "/lists/{list}", "DELETE", 403) == 1)
        #expect(try await app.send(.get, "/lists/l", headers: reader).response().status.code == 200)

        // Open routes and paths no route serves are not checked.
        #expect(try await app.send(.get, "/healthz").response().status.code == 200)
        #expect(try await app.send(.get, "/nowhere").response().status.code == 404)
        await app.close()
    }

    @Test func aPreflightIsAnsweredByCORSAndCountedAsPreflight() async throws {
        let backend = TestMetrics()
        let app = try await Self.make(
            backend, accessPolicy: AccessPolicy(writeToken: "write-token", readToken: nil))
        let allowed = try await app.send(.options, "/lists/l", headers: Self.fromOrigin).response()
        #expect(allowed.status.code == 204)
        #expect(allowed.headers["Access-Control-Allow-Methods"] == CORSPolicy.allowedMethods)
        #expect(allowed.headers["Access-Control-Expose-Headers"] == nil, "a preflight gets no answer's fields")
        let other = try await app.send(
            .options, "/lists/l", headers: Self.headers([("Origin", "https://evil.example")])
        )
        .response()
        #expect(other.status.code == 403)
        #expect(other.headers["Content-Type"] == "application/problem+json")
        #expect(other.headers["Access-Control-Allow-Origin"] == nil)
        #expect(Self.counted(backend, "preflight", "OPTIONS", 204) == 1)
        #expect(Self.counted(backend, "preflight", "OPTIONS", 403) == 1)
        await app.close()
    }

    // MARK: - The pipeline

    /// Records what it sees, and refuses when told.
    struct Recording: Middleware {
        let name: String
        let log: Log
        var refuses = false

        func admit(_ context: inout Context) -> Admission {
            log.entries.withLock { $0.append("admit \(name)") }
            return refuses ? .refuse(.forbidden("\(name) says no")) : .proceed
        }

        func answering(_ response: inout Response, to context: Context, after elapsed: Duration) {
            let contentType = response.headers["Content-Type"] ?? "-"
            log.entries.withLock { $0.append("answer \(name) \(response.status.code) \(contentType)") }
            response.headers.add(name: "X-Seen-By", value: name)
        }
    }

    final class Log: Sendable {
        let entries = Mutex<[String]>([])
    }

    static func pipeline(_ log: Log, refusing: String? = nil) -> RequestPipeline {
        var table = RouteTable()
        table.add(.get, "/fails", .read, .sync { _ in throw Problem.invalidRequest("no good") })
        table.add(.get, "/later", .read, .async { context in context.json { $0.string("ok") } })
        table.add(
            .get, "/stream", .read,
            .custom { exchange in
                let stream = exchange.startStream(Response(status: .ok))
                stream.finish()
            })
        return RequestPipeline(
            middleware: ["outer", "inner"].map { Recording(name: $0, log: log, refuses: $0 == refusing) },
            routes: table)
    }

    static func run(_ pipeline: RequestPipeline, _ target: String) async throws -> Response {
        let delivered = Mutex<Response?>(nil)
        let responder = Responder(delivering: { delivery in
            switch delivery {
            case .response(let response, _), .streamHead(let response): delivered.withLock { $0 = response }
            case .streamChunk, .streamEnd: break
            }
        })
        pipeline.handle(
            Request(
                head: RequestHead(method: .get, target: target, headers: HTTPHeaders()), body: [], remoteAddress: "t"),
            responder: responder)
        try await waitUntil("\(target) is answered") { delivered.withLock { $0 != nil } }
        return try #require(delivered.withLock { $0 })
    }

    @Test func middlewareAdmitsInOrderAndAnswersInReverseWithProblemsRendered() async throws {
        let log = Log()
        let response = try await Self.run(Self.pipeline(log), "/fails")
        #expect(response.status.code == 400)
        #expect(response.headers.values(for: "X-Seen-By") == ["inner", "outer"])
        #expect(
            log.entries.withLock { $0 } == [
                "admit outer", "admit inner",
                "answer inner 400 application/problem+json", "answer outer 400 application/problem+json",
            ])
    }

    @Test func aRefusalStopsTheChainAndTheRouteButItsAnswerPassesEveryMiddleware() async throws {
        let log = Log()
        let response = try await Self.run(Self.pipeline(log, refusing: "outer"), "/later")
        #expect(response.status.code == 403)
        #expect(
            log.entries.withLock { $0 } == [
                "admit outer", "answer inner 403 application/problem+json",
                "answer outer 403 application/problem+json",
            ])
    }

    @Test func answersFromTasksAndStreamHeadsPassTheMiddleware() async throws {
        let log = Log()
        let pipeline = Self.pipeline(log)
        #expect(try await Self.run(pipeline, "/later").headers.values(for: "X-Seen-By") == ["inner", "outer"])
        #expect(try await Self.run(pipeline, "/stream").headers.values(for: "X-Seen-By") == ["inner", "outer"])
        let notFound = try await Self.run(pipeline, "/nowhere")
        #expect(notFound.status.code == 404)
        #expect(notFound.headers["Content-Type"] == "application/problem+json")
        #expect(notFound.headers.values(for: "X-Seen-By") == ["inner", "outer"])
    }
}
