import HTTP
import Testing

@testable import ListAPI

/// The open loopback default against web pages (docs/API.md, "Auth"): DNS
/// rebinding is answered 403 by the `Host` check, and a foreign page's write
/// by the `Origin` check, whatever its content type.
@Suite struct BrowserGuardTests {
    static func headers(_ fields: [(String, String)]) -> HTTPHeaders {
        var headers = HTTPHeaders()
        for (name, value) in fields { headers.add(name: name, value: value) }
        return headers
    }

    @Test func aRebindingHostIsRefusedWithoutAToken() async throws {
        let app = try await InProcessService.make()
        let refused = try await app.send(.get, "/lists", headers: Self.headers([("Host", "rebind.evil.example")]))
            .response()
        #expect(refused.status.code == 403)
        #expect(String(decoding: refused.body, as: UTF8.self).contains("rebind.evil.example"))
        for host in ["127.0.0.1:8080", "localhost:8080", "LOCALHOST", "[::1]:8080", "127.1.2.3", "app.localhost:9"] {
            let answer = try await app.send(.get, "/lists", headers: Self.headers([("Host", host)])).response()
            #expect(answer.status.code == 200, "Host \(host)")
        }
        await app.close()
    }

    @Test func aPublicHostIsAnswered() async throws {
        let app = try await InProcessService.make(configure: {
            $0.hosts = HostAllowList(boundHost: "10.1.2.3", publicHosts: ["lists.example"])
        })
        for host in ["lists.example:8080", "10.1.2.3:8080"] {
            let answer = try await app.send(.get, "/lists", headers: Self.headers([("Host", host)])).response()
            #expect(answer.status.code == 200, "Host \(host)")
        }
        let refused = try await app.send(.get, "/lists", headers: Self.headers([("Host", "other.example")])).response()
        #expect(refused.status.code == 403)
        await app.close()
    }

    @Test func withATokenAnyHostIsAnswered() async throws {
        let app = try await InProcessService.make(accessPolicy: AccessPolicy(writeToken: "w-token", readToken: nil))
        let answer = try await app.send(
            .get, "/lists", headers: Self.headers([("Host", "lists.example"), ("Authorization", "Bearer w-token")])
        ).response()
        #expect(answer.status.code == 200)
        await app.close()
    }

    @Test(arguments: [
        "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json",
    ])
    func aForeignPagesWriteIsRefusedWhateverItsContentType(_ contentType: String) async throws {
        let app = try await InProcessService.make()
        let refused = app.send(
            .post, "/lists", json: #"{"id":"csrf"}"#,
            headers: Self.headers([
                ("Host", "127.0.0.1:8080"), ("Origin", "https://evil.example"), ("Content-Type", contentType),
            ]))
        let answer = try await refused.response()
        #expect(answer.status.code == 403)
        #expect(String(decoding: answer.body, as: UTF8.self).contains("https://evil.example"))
        #expect(try await app.send(.get, "/lists/csrf").response().status.code == 404)
        await app.close()
    }

    @Test func theServersOwnPagesAndCORSOriginsMayWrite() async throws {
        let app = try await InProcessService.make(cors: CORSPolicy(origins: ["https://app.example"]))
        let own = try await app.send(
            .post, "/lists", json: #"{"id":"own"}"#,
            headers: Self.headers([("Host", "127.0.0.1:8080"), ("Origin", "http://127.0.0.1:8080")])
        ).response()
        #expect(own.status.code == 201)
        let allowed = try await app.send(
            .post, "/lists", json: #"{"id":"app"}"#,
            headers: Self.headers([("Host", "127.0.0.1:8080"), ("Origin", "https://app.example")])
        ).response()
        #expect(allowed.status.code == 201)
        // Reads are not refused for their origin (a page cannot read the answer without CORS).
        let read = try await app.send(
            .get, "/lists", headers: Self.headers([("Host", "127.0.0.1:8080"), ("Origin", "https://evil.example")])
        ).response()
        #expect(read.status.code == 200)
        await app.close()
    }

    @Test func hostNames() {
        let list = HostAllowList(boundHost: "0.0.0.0", publicHosts: ["Lists.Example"])
        #expect(list.allows("lists.example"))
        #expect(list.allows("127.0.0.1"))
        #expect(!list.allows("0.0.0.0"))
        #expect(!list.allows("127.0.0.1.evil.example"))
        #expect(!list.allows("127.0.0.256"))
        #expect(!list.allows("localhost.evil.example"))
        #expect(!list.allows("[::2]:80"))
        #expect(HostAllowList.hostname("[::1]:8080") == "::1")
        #expect(HostAllowList.hostname("a.example:80") == "a.example")
    }
}
