import Foundation
import ListdTestSupport
import Testing
import Tokens

/// Signed tokens through the real binary beyond the matrix: creating lists
/// inside a token's scope, `GET /lists` showing only the token's lists, a
/// forced view narrowed (never widened) by the client, and the limit on one
/// caller's streams and long-polls.
@Suite struct SignedTokenEndToEndTests {
    struct Fixture {
        let server: ListdServer
        let minter: TokenMinter
        let directory: URL

        func token(_ lists: [String], _ rights: TokenRights, view: String? = nil, subject: String = "u42") throws
            -> String
        {
            try minter.mint(
                TokenClaims(
                    subject: subject, lists: lists.compactMap(ListPattern.init), rights: rights, view: view,
                    expires: Date().addingTimeInterval(3600)),
                issuedAt: Date())
        }

        func stop() {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    static func start(_ arguments: [String] = []) async throws -> Fixture {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("signed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let keyFile = directory.appendingPathComponent("hs256.key")
        try Data("signed-e2e-secret-of-at-least-thirty-two-bytes".utf8).write(to: keyFile)
        let minter = try TokenMinter(key: try await TokenKey.load(path: keyFile.path))
        let server = try await ListdServer(["--token-key", keyFile.path] + arguments)
        return Fixture(server: server, minter: minter, directory: directory)
    }

    @Test func aWriteTokenCreatesOnlyInsideItsListsAndSeesOnlyThem() async throws {
        let fixture = try await Self.start()
        defer { fixture.stop() }
        let admin = ["Authorization": "Bearer " + (try fixture.token(["*"], [.write, .admin], subject: "ops"))]
        let user = ["Authorization": "Bearer " + (try fixture.token(["u42-*", "shared"], [.write]))]
        let server = fixture.server
        #expect(try await server.request("POST", "/lists", body: ["id": "u42-a"], headers: user).status == 201)
        #expect(try await server.request("POST", "/lists", body: ["id": "u7-a"], headers: user).status == 403)
        #expect(try await server.request("POST", "/lists", body: ["name": "no id"], headers: user).status == 403)
        for id in ["u7-b", "shared", "u42", "u43-a", "u42-b"] {
            #expect(try await server.request("POST", "/lists", body: ["id": id], headers: admin).status == 201)
        }
        let page = try await server.get("/lists", headers: user).object()
        let ids = (page["lists"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
        #expect(ids == ["shared", "u42-a", "u42-b"])
        // Paging through the scope: one at a time, in id order.
        var seen: [String] = []
        var after = ""
        while true {
            let reply = try await server.get("/lists?limit=1" + (after.isEmpty ? "" : "&after=\(after)"), headers: user)
                .object()
            guard let lists = reply["lists"] as? [[String: Any]], let id = lists.first?["id"] as? String else { break }
            seen.append(id)
            guard let next = reply["next"] as? String else { break }
            after = next
        }
        #expect(seen == ["shared", "u42-a", "u42-b"])
        #expect(try await server.get("/lists/u7-b", headers: user).status == 404)
        #expect(try await server.get("/lists/u7-nothing", headers: user).status == 404)
    }

    @Test func aForcedViewIsNarrowedNeverWidened() async throws {
        let fixture = try await Self.start()
        defer { fixture.stop() }
        let admin = ["Authorization": "Bearer " + (try fixture.token(["*"], [.write, .admin], subject: "ops"))]
        let viewer = ["Authorization": "Bearer " + (try fixture.token(["team-*"], [.read], view: "where=owner:u42"))]
        let server = fixture.server
        let items = (0..<6).map { index in
            ["id": "i\(index)", "model": ["owner": index % 2 == 0 ? "u42" : "u7", "done": index < 3, "rank": index]]
        }
        let created = try await server.request(
            "POST", "/lists", body: ["id": "team-a", "sections": [["id": "s", "model": [:], "items": items]]],
            headers: admin)
        #expect(created.status == 201)
        func ids(_ reply: ListdServer.Reply) throws -> [String] {
            let sections = try reply.object()["sections"] as? [[String: Any]] ?? []
            return sections.flatMap { ($0["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String } }
        }
        #expect(try ids(try await server.get("/lists/team-a", headers: viewer)) == ["i0", "i2", "i4"])
        #expect(try ids(try await server.get("/lists/team-a?where=done:true", headers: viewer)) == ["i0", "i2"])
        // A client's where=owner:u7 adds to the forced one: nothing matches both.
        #expect(try ids(try await server.get("/lists/team-a?where=owner:u7", headers: viewer)) == [])
        let items42 = try await server.get("/lists/team-a/items", headers: viewer).object()["items"] as? [[String: Any]]
        #expect(items42?.compactMap { $0["id"] as? String } == ["i0", "i2", "i4"])
        #expect(try await server.get("/lists/team-a/sections", headers: viewer).status == 403)
        #expect(
            try await server.request("PATCH", "/lists/team-a", body: ["ops": []], headers: viewer).status == 403)
        let windowed = [
            "Authorization": "Bearer "
                + (try fixture.token(["team-*"], [.read], view: "where=owner:u42&order=-rank&limit=2"))
        ]
        #expect(try ids(try await server.get("/lists/team-a", headers: windowed)) == ["i4", "i2"])
        #expect(try ids(try await server.get("/lists/team-a?limit=1", headers: windowed)) == ["i4"])
        #expect(try await server.get("/lists/team-a?order=rank", headers: windowed).status == 403)
        #expect(try await server.get("/lists/team-a?where=done:true", headers: windowed).status == 403)
        // The long-poll follows the forced view: a change outside it does not answer.
        let since = try await server.get("/lists/team-a", headers: viewer).object()["version"] as? Int ?? -1
        let outside = try await server.request(
            "PATCH", "/lists/team-a",
            body: ["ops": [["op": "updateItem", "id": "i1", "model": ["owner": "u7", "rank": 9]]]],
            headers: admin)
        #expect(outside.status == 200)
        let quiet = try await server.get("/lists/team-a/changes?since=\(since)&timeout=0", headers: viewer).object()
        #expect((quiet["stages"] as? [Any])?.isEmpty ?? true)
    }

    @Test func oneCallersStreamsAndLongPollsAreLimited() async throws {
        let fixture = try await Self.start(["--max-waits-per-caller", "2"])
        defer { fixture.stop() }
        let server = fixture.server
        let admin = ["Authorization": "Bearer " + (try fixture.token(["*"], [.write, .admin], subject: "ops"))]
        let token = try fixture.token(["*"], [.read])
        #expect(try await server.request("POST", "/lists", body: ["id": "l"], headers: admin).status == 201)
        let version = try await server.get("/lists/l", headers: admin).object()["version"] as? Int ?? -1
        var parked: [RawConnection] = []
        for _ in 0..<2 {
            let connection = try RawConnection(port: server.port)
            try connection.send(
                "GET /lists/l/changes?since=\(version)&timeout=60 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    + "Authorization: Bearer \(token)\r\n\r\n")
            parked.append(connection)
        }
        // Both parked (the metrics say so), a third is turned away with a Retry-After.
        #expect(
            await eventually(10) {
                let metrics = (try? await server.get("/metrics", headers: admin).text) ?? ""
                return metrics.contains("listd_parked_waiters 2")
            })
        let refused = try await server.get(
            "/lists/l/changes?since=\(version)&timeout=0", headers: ["Authorization": "Bearer \(token)"])
        #expect(refused.status == 429)
        let retryAfter = Int(refused.header("Retry-After") ?? "") ?? 0
        #expect((1...10).contains(retryAfter))
        // Another caller is not counted with this one.
        let other = try fixture.token(["*"], [.read], subject: "u7")
        #expect(
            try await server.get(
                "/lists/l/changes?since=\(version)&timeout=0", headers: ["Authorization": "Bearer \(other)"]
            ).status == 200)
        // One client leaves: its place is given back.
        parked[0].close()
        #expect(
            await eventually(10) {
                (try? await server.get(
                    "/lists/l/changes?since=\(version)&timeout=0", headers: ["Authorization": "Bearer \(token)"]
                ).status)
                    == 200
            })
        withExtendedLifetime(parked) {}
    }
}
