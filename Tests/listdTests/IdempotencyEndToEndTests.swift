import Foundation
import ListdTestSupport
import Synchronization
import Testing
import Tokens

/// `Idempotency-Key` through the real binary (API.md, Retries), on SQLite and,
/// when `LISTD_TEST_POSTGRES_URL` is set, on PostgreSQL: every write route
/// applied once and its retry replayed byte for byte, a key reused for another
/// request refused, keys kept apart per caller, concurrent duplicates applied
/// once, an answer the client never read replayed, and a retry on another
/// instance of one database replayed.
/// Serialized: each PostgreSQL case runs one or two listd instances, and the
/// suite's PostgreSQL server allows 300 connections for every suite at once.
@Suite(.serialized) struct IdempotencyEndToEndTests {
    enum Backend: String, CustomStringConvertible, Sendable {
        case sqlite, postgres
        var description: String { rawValue }
        static var all: [Backend] { TestPostgres.enabled ? [.sqlite, .postgres] : [.sqlite] }
    }

    /// A server on `backend`, stopped (and its database dropped) by `stop`.
    struct Fixture {
        let servers: [ListdServer]
        let stop: @Sendable () -> Void
        var server: ListdServer { servers[0] }
    }

    static func start(
        _ backend: Backend, instances: Int = 1, arguments: [String] = [], environment: [String: String] = [:]
    ) async throws -> Fixture {
        switch backend {
        case .sqlite:
            let server = try await ListdServer(arguments, environment: environment)
            return Fixture(servers: [server], stop: { _ = server.stop() })
        case .postgres:
            let database = try await TestPostgres.createDatabase()
            var servers: [ListdServer] = []
            for _ in 0..<instances {
                servers.append(
                    try await ListdServer(arguments, environment: environment, store: database.url))
            }
            let started = servers
            return Fixture(
                servers: started,
                stop: {
                    for server in started { _ = server.stop() }
                    database.drop()
                })
        }
    }

    /// The list's version, or nil when it is gone.
    static func version(_ server: ListdServer, _ list: String, headers: [String: String] = [:]) async throws -> Int? {
        let reply = try await server.get("/lists/\(list)", headers: headers)
        guard reply.status == 200 else { return nil }
        return try reply.object()["version"] as? Int
    }

    /// One write route with its body, as a client would send it.
    struct Write: Sendable {
        let method: String
        let path: String
        let body: String?
        /// Whether the write moves the list's version (index declarations do not).
        var bumps = true
    }

    static let writes: [Write] = [
        Write(method: "POST", path: "/lists", body: #"{"id":"idem","name":"Idem"}"#),
        Write(
            method: "PUT", path: "/lists/idem",
            body: #"{"name":"Idem","sections":[{"id":"s1","model":{"t":1},"items":[{"id":"i1","model":{"n":1}}]}]}"#),
        Write(
            method: "PATCH", path: "/lists/idem",
            body: #"{"ops":[{"op":"insertItem","section":"s1","item":{"id":"i2","model":{"n":2}}}]}"#),
        Write(method: "POST", path: "/lists/idem/sections", body: #"{"id":"s2","model":{"t":2}}"#),
        Write(method: "PUT", path: "/lists/idem/sections/s2", body: #"{"model":{"t":22}}"#),
        Write(method: "PATCH", path: "/lists/idem/sections/s2", body: #"{"to":0}"#),
        Write(method: "POST", path: "/lists/idem/sections/s2/items", body: #"{"id":"i3","model":{"n":3}}"#),
        Write(method: "PUT", path: "/lists/idem/items/i3", body: #"{"model":{"n":33}}"#),
        Write(method: "PATCH", path: "/lists/idem/items/i3", body: #"{"section":"s1","to":0}"#),
        Write(method: "DELETE", path: "/lists/idem/items/i3", body: nil),
        Write(method: "DELETE", path: "/lists/idem/sections/s2", body: nil),
        Write(method: "PUT", path: "/lists/idem/indexes/n", body: nil, bumps: false),
        Write(method: "DELETE", path: "/lists/idem/indexes/n", body: nil, bumps: false),
        Write(method: "PUT", path: "/lists/idem/text-index", body: nil, bumps: false),
        Write(method: "DELETE", path: "/lists/idem/text-index", body: nil, bumps: false),
        Write(method: "DELETE", path: "/lists/idem", body: nil),
    ]

    @Test(arguments: Backend.all)
    func everyWriteRouteIsAppliedOnceAndItsRetryReplayed(_ backend: Backend) async throws {
        let fixture = try await Self.start(backend)
        defer { fixture.stop() }
        let server = fixture.server
        for (index, write) in Self.writes.enumerated() {
            let label = "\(write.method) \(write.path)"
            let key = ["Idempotency-Key": "key \(index) of \(backend)"]
            let first = try await server.request(write.method, write.path, body: write.body, headers: key)
            #expect((200..<300).contains(first.status), "\(label): \(first.status) \(first.text)")
            #expect(first.header("Idempotent-Replayed") == nil, "\(label)")
            let after = try await Self.version(server, "idem")
            let retry = try await server.request(write.method, write.path, body: write.body, headers: key)
            #expect(retry.header("Idempotent-Replayed") == "true", "\(label)")
            #expect(retry.status == first.status, "\(label)")
            #expect(retry.body == first.body, "\(label): \(retry.text) vs \(first.text)")
            for name in ["ETag", "Location", "Content-Type"] {
                #expect(retry.header(name) == first.header(name), "\(label): \(name)")
            }
            #expect(try await Self.version(server, "idem") == after, "\(label): the retry applied nothing")
            if write.bumps, write.method != "DELETE" || write.path != "/lists/idem" {
                // The first request did apply: its answer names the version it made.
                if let etag = first.header("ETag"), let after {
                    #expect(etag.hasSuffix("-\(after)\""), "\(label): \(etag) at v\(after)")
                }
            }
        }
        #expect(try await Self.version(server, "idem") == nil, "the list was deleted once, and stays deleted")
    }

    @Test(arguments: Backend.all)
    func aKeyReusedForAnotherRequestIs422AndAppliesNothing(_ backend: Backend) async throws {
        let fixture = try await Self.start(backend)
        defer { fixture.stop() }
        let server = fixture.server
        let key = ["Idempotency-Key": "reused"]
        #expect(try await server.request("POST", "/lists", body: #"{"id":"a"}"#, headers: key).status == 201)
        for (method, path, body) in [
            ("POST", "/lists", #"{"id":"b"}"#), ("POST", "/lists?pretty", #"{"id":"a"}"#),
            ("PUT", "/lists/a", #"{"sections":[]}"#),
        ] {
            let reused = try await server.request(method, path, body: body, headers: key)
            #expect(reused.status == 422, "\(method) \(path): \(reused.text)")
            #expect(reused.header("Content-Type") == "application/problem+json")
            let problem = try reused.object()
            #expect((problem["type"] as? String)?.hasSuffix("/idempotency-key-reused") == true)
            #expect((problem["detail"] as? String)?.contains("\"reused\"") == true, "\(reused.text)")
        }
        #expect(try await server.get("/lists/b").status == 404, "the reused key applied nothing")
        #expect(try await Self.version(server, "a") == 1)
    }

    @Test func badKeysAre400NamingTheHeaderAndAGetIgnoresAKey() async throws {
        let fixture = try await Self.start(.sqlite)
        defer { fixture.stop() }
        let server = fixture.server
        for bad in [String(repeating: "k", count: 256), "caf\u{E9}"] {
            let reply = try await server.request(
                "POST", "/lists", body: #"{"id":"x"}"#, headers: ["Idempotency-Key": bad])
            #expect(reply.status == 400, "\(reply.text)")
            #expect((try reply.object()["detail"] as? String)?.contains("Idempotency-Key") == true, "\(reply.text)")
        }
        #expect(try await server.get("/lists/x").status == 404)
        let longest = String(repeating: "k", count: 255) + ""
        #expect(
            try await server.request(
                "POST", "/lists", body: #"{"id":"x"}"#, headers: ["Idempotency-Key": longest]
            ).status == 201)
        let read = try await server.get("/lists/x", headers: ["Idempotency-Key": "caf\u{E9}"])
        #expect(read.status == 200 && read.header("Idempotent-Replayed") == nil)
    }

    @Test func keysBelongToTheirCaller() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("idem-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("hs256.key")
        try Data("idempotency-e2e-secret-of-at-least-thirty-two-bytes".utf8).write(to: keyFile)
        let minter = try TokenMinter(key: try await TokenKey.load(path: keyFile.path))
        func bearer(_ subject: String) throws -> String {
            "Bearer "
                + (try minter.mint(
                    TokenClaims(
                        subject: subject, lists: ["*"].compactMap(ListPattern.init), rights: [.write, .admin],
                        expires: Date().addingTimeInterval(3600)),
                    issuedAt: Date()))
        }
        let server = try await ListdServer(
            ["--token-key", keyFile.path], environment: ["LISTD_WRITE_TOKEN": "static-write-token"])
        defer { _ = server.stop() }
        let callers = [
            try bearer("alice"), try bearer("bob"), "Bearer static-write-token",
        ]
        let patch = #"{"ops":[{"op":"insertSection","section":{"id":"s"},"at":0}]}"#
        #expect(
            try await server.request(
                "POST", "/lists", body: #"{"id":"shared"}"#, headers: ["Authorization": callers[0]]
            ).status == 201)
        var versions: [Int] = []
        for (index, caller) in callers.enumerated() {
            let body = patch.replacingOccurrences(of: "\"s\"", with: "\"s\(index)\"")
            let headers = ["Authorization": caller, "Idempotency-Key": "same key"]
            let reply = try await server.request("PATCH", "/lists/shared", body: body, headers: headers)
            #expect(reply.status == 200, "\(reply.text)")
            #expect(reply.header("Idempotent-Replayed") == nil, "caller \(index) has its own keys")
            versions.append(try await Self.version(server, "shared", headers: ["Authorization": caller]) ?? -1)
        }
        #expect(versions == [2, 3, 4])
        // And each caller's retry is its own answer.
        let retry = try await server.request(
            "PATCH", "/lists/shared", body: patch.replacingOccurrences(of: "\"s\"", with: "\"s1\""),
            headers: ["Authorization": callers[1], "Idempotency-Key": "same key"])
        #expect(retry.header("Idempotent-Replayed") == "true")
        #expect(retry.header("ETag")?.hasSuffix("-3\"") == true, "\(retry.headers)")
    }

    @Test(arguments: Backend.all)
    func concurrentDuplicatesApplyOnceAndGetOneAnswer(_ backend: Backend) async throws {
        let fixture = try await Self.start(backend, instances: backend == .postgres ? 2 : 1)
        defer { fixture.stop() }
        let servers = fixture.servers
        #expect(try await fixture.server.request("POST", "/lists", body: #"{"id":"c"}"#).status == 201)
        let body = #"{"ops":[{"op":"insertSection","section":{"id":"once"},"at":0}]}"#
        let replies = try await withThrowingTaskGroup(of: ListdServer.Reply.self) { group in
            for index in 0..<16 {
                let server = servers[index % servers.count]
                group.addTask {
                    try await server.request(
                        "PATCH", "/lists/c", body: body, headers: ["Idempotency-Key": "concurrent"])
                }
            }
            var replies: [ListdServer.Reply] = []
            for try await reply in group { replies.append(reply) }
            return replies
        }
        #expect(replies.allSatisfy { $0.status == 200 }, "\(replies.map { "\($0.status) \($0.text)" })")
        #expect(Set(replies.map(\.body)).count == 1, "one answer for all")
        #expect(replies.filter { $0.header("Idempotent-Replayed") == nil }.count == 1, "one applied it")
        #expect(try await Self.version(fixture.server, "c") == 2)
    }

    @Test(arguments: Backend.all)
    func anAnswerTheClientNeverReadIsReplayed(_ backend: Backend) async throws {
        let fixture = try await Self.start(backend)
        defer { fixture.stop() }
        let server = fixture.server
        #expect(try await server.request("POST", "/lists", body: #"{"id":"lost"}"#).status == 201)
        let body = #"{"ops":[{"op":"insertSection","section":{"id":"s"},"at":0}]}"#
        // Sent on a raw socket, closed once the write has committed, its answer never read.
        let request =
            "PATCH /lists/lost HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "Idempotency-Key: lost answer\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        let socket = try RawSocket.send(port: server.port, Array(request.utf8))
        let deadline = ContinuousClock.now + .seconds(20)
        while try await Self.version(server, "lost") != 2, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        close(socket)
        let retry = try await server.request(
            "PATCH", "/lists/lost", body: body, headers: ["Idempotency-Key": "lost answer"])
        #expect(retry.status == 200, "\(retry.text)")
        #expect(retry.header("Idempotent-Replayed") == "true")
        #expect(retry.header("ETag")?.hasSuffix("-2\"") == true)
        #expect(try await Self.version(server, "lost") == 2)
    }

    @Test(.enabled(if: TestPostgres.enabled, Comment(rawValue: TestPostgres.skipReason)))
    func aRetryOnAnotherInstanceIsReplayed() async throws {
        let fixture = try await Self.start(.postgres, instances: 2)
        defer { fixture.stop() }
        let (a, b) = (fixture.servers[0], fixture.servers[1])
        let key = ["Idempotency-Key": "across instances"]
        let create = try await a.request("POST", "/lists", body: #"{"id":"x","name":"X"}"#, headers: key)
        #expect(create.status == 201)
        let retry = try await b.request("POST", "/lists", body: #"{"id":"x","name":"X"}"#, headers: key)
        #expect(retry.status == 201, "\(retry.text)")
        #expect(retry.header("Idempotent-Replayed") == "true")
        #expect(retry.body == create.body)
        #expect(retry.header("ETag") == create.header("ETag"))
        let body = #"{"ops":[{"op":"insertSection","section":{"id":"s"},"at":0}]}"#
        let patch = try await b.request("PATCH", "/lists/x", body: body, headers: ["Idempotency-Key": "p"])
        let replayed = try await a.request("PATCH", "/lists/x", body: body, headers: ["Idempotency-Key": "p"])
        #expect(patch.status == 200 && replayed.status == 200)
        #expect(replayed.header("Idempotent-Replayed") == "true")
        #expect(replayed.body == patch.body)
        #expect(try await Self.version(a, "x") == 2)
    }
}

/// A client that sends a request on a socket of its own, and may go away
/// without reading the answer.
enum RawSocket {
    /// Connects to `port` on loopback and sends `bytes`; returns the socket, for the caller to close.
    static func send(port: Int, _ bytes: [UInt8]) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ServerFailure(description: "socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }
        guard connected == 0, sent == bytes.count else {
            close(fd)
            throw ServerFailure(description: "connect or send: \(errno)")
        }
        return fd
    }
}
