import Crypto
import Foundation
import ListdTestSupport
import Testing
import Tokens

/// The access matrix through the real binary (docs/API.md, "Auth"): every
/// route × every kind of credential gets the status the contract gives, and
/// no answer to a scoped token carries a byte of a list outside its scope.
@Suite(.serialized) struct AccessMatrixTests {
    static let writeToken = "matrix-write-token"
    static let readToken = "matrix-read-token"
    /// In the models of another user's list, which no token of u42 may see.
    static let secret = "SECRET-OF-ANOTHER-USER"
    /// In the model of an item of u42's lists that a token with the view `where=owner:u42` may not see.
    static let hidden = "HIDDEN-BY-THE-VIEW"
    /// Routes a token with a view may not call: they cannot apply a view.
    static let viewless: Set<String> = [
        "/lists/L/sections", "/lists/L/sections/s", "/lists/L/items/a", "/lists/L/indexes",
    ]

    /// What a route needs.
    enum Need { case open, read, write, admin, metrics }

    /// A credential and what the contract says it gets.
    struct Credential: CustomStringConvertible {
        var description: String
        var header: String?
        /// The status class this credential gets for a route needing `need`
        /// on a list of its user (`u42-…`): nil means success (2xx).
        var outcome: (Need) -> Int?
    }

    struct Route {
        var need: Need
        var method: String
        /// `L` stands for the cell's list.
        var path: String
        var body: String?
    }

    /// The cell's routes, destructive ones last, so each runs on a list in the shape it expects.
    static let routes: [Route] = [
        Route(need: .open, method: "GET", path: "/healthz"),
        Route(need: .read, method: "GET", path: "/lists"),
        Route(need: .read, method: "GET", path: "/lists/L"),
        Route(need: .read, method: "GET", path: "/lists/L?where=owner:u42"),
        Route(need: .read, method: "GET", path: "/lists/L/sections"),
        Route(need: .read, method: "GET", path: "/lists/L/sections/s"),
        Route(need: .read, method: "GET", path: "/lists/L/items"),
        Route(need: .read, method: "GET", path: "/lists/L/items/a"),
        Route(need: .read, method: "GET", path: "/lists/L/indexes"),
        Route(need: .read, method: "GET", path: "/lists/L/changes?since=0&timeout=0"),
        Route(need: .read, method: "POST", path: "/changes", body: #"{"lists":{"L":0},"timeout":0}"#),
        Route(need: .read, method: "HEAD", path: "/lists/L/events?since=0"),
        Route(need: .read, method: "HEAD", path: "/events?lists=L:0"),
        Route(need: .metrics, method: "GET", path: "/metrics"),
        Route(
            need: .write, method: "PATCH", path: "/lists/L",
            body: #"{"ops":[{"op":"updateItem","id":"a","model":{"owner":"u42","n":2}}]}"#),
        Route(need: .write, method: "POST", path: "/lists/L/sections", body: #"{"id":"t","model":{},"items":[]}"#),
        Route(need: .write, method: "PATCH", path: "/lists/L/sections/s", body: #"{"model":{"title":"S"}}"#),
        Route(
            need: .write, method: "POST", path: "/lists/L/sections/s/items",
            body: #"{"id":"c","model":{"owner":"u42"}}"#),
        Route(need: .write, method: "PUT", path: "/lists/L/items/c", body: #"{"model":{"owner":"u42","n":3}}"#),
        Route(need: .write, method: "PATCH", path: "/lists/L/items/c", body: #"{"model":{"owner":"u42","n":4}}"#),
        Route(need: .write, method: "DELETE", path: "/lists/L/items/c"),
        Route(need: .write, method: "DELETE", path: "/lists/L/sections/t"),
        Route(need: .admin, method: "PUT", path: "/lists/L/indexes/owner"),
        Route(need: .admin, method: "DELETE", path: "/lists/L/indexes/owner"),
        Route(need: .admin, method: "PUT", path: "/lists/L/text-index"),
        Route(need: .admin, method: "DELETE", path: "/lists/L/text-index"),
        Route(
            need: .write, method: "PUT", path: "/lists/L",
            body:
                #"{"sections":[{"id":"s","model":{},"items":[{"id":"a","model":{"owner":"u42"}},{"id":"b","model":{"owner":"u7"}}]}]}"#
        ),
        Route(need: .admin, method: "DELETE", path: "/lists/L"),
    ]

    static func base64url(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// A token signed by hand with HMAC-SHA256 over `secret`: for the attacks
    /// a minter would never make (another `alg`, a key used as the wrong kind).
    static func handMade(header: String, payload: String, hmacKey: [UInt8]?) -> String {
        let signing = base64url(Array(header.utf8)) + "." + base64url(Array(payload.utf8))
        guard let hmacKey else { return signing + "." }
        let mac = HMAC<SHA256>.authenticationCode(for: Array(signing.utf8), using: SymmetricKey(data: hmacKey))
        return signing + "." + base64url(Array(mac))
    }

    @Test func everyRouteForEveryCredentialAnswersAsTheContractSays() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("matrix-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let secretBytes = Array("matrix-hs256-secret-of-at-least-32-bytes!".utf8)
        let keyFile = directory.appendingPathComponent("hs256.key")
        try Data(secretBytes).write(to: keyFile)
        let key = try await TokenKey.load(path: keyFile.path)
        let minter = try TokenMinter(key: key)
        let other = try await TokenKey(contents: Array("another-hs256-secret-of-at-least-32-bytes".utf8))
        let now = Date()
        func mint(
            _ lists: [String], _ rights: TokenRights, view: String? = nil, expires: Date? = nil, notBefore: Date? = nil,
            with minter: TokenMinter = minter
        ) throws -> String {
            try minter.mint(
                TokenClaims(
                    subject: "u42", lists: lists.compactMap(ListPattern.init), rights: rights, view: view,
                    expires: expires ?? now.addingTimeInterval(3600), notBefore: notBefore),
                issuedAt: now)
        }
        let valid = try mint(["u42-*"], [.read])
        let parts = valid.split(separator: ".")
        let payload = String(decoding: Data(base64Encoded: Self.padded(String(parts[1]))) ?? Data(), as: UTF8.self)
        let tamperedPayload = payload.replacingOccurrences(of: "\"read\"", with: "\"admin\"")
        let tampered = String(parts[0]) + "." + Self.base64url(Array(tamperedPayload.utf8)) + "." + String(parts[2])
        let unsigned = Self.handMade(header: #"{"alg":"none","typ":"JWT"}"#, payload: payload, hmacKey: nil)

        func bearer(_ token: String) -> String { "Bearer " + token }
        let denied401: (Need) -> Int? = { $0 == .open ? nil : 401 }
        let credentials: [Credential] = [
            Credential(description: "no token", header: nil, outcome: denied401),
            Credential(description: "static read", header: bearer(Self.readToken)) { need in
                need == .write || need == .admin ? 403 : nil
            },
            Credential(description: "static write", header: bearer(Self.writeToken)) { _ in nil },
            Credential(description: "signed read on the list", header: bearer(try mint(["u42-*"], [.read]))) { need in
                need == .write || need == .admin || need == .metrics ? 403 : nil
            },
            Credential(description: "signed write on the list", header: bearer(try mint(["u42-*"], [.write]))) { need in
                need == .admin || need == .metrics ? 403 : nil
            },
            Credential(description: "signed admin on the list", header: bearer(try mint(["u42-*"], [.write, .admin]))) {
                _ in nil
            },
            Credential(
                description: "signed on another list", header: bearer(try mint(["zz-*"], [.read, .write, .admin]))
            ) { need in
                switch need {
                case .open, .metrics: nil
                case .read, .write, .admin: 404
                }
            },
            Credential(
                description: "signed with a view", header: bearer(try mint(["u42-*"], [.read], view: "where=owner:u42"))
            ) { need in
                need == .write || need == .admin || need == .metrics ? 403 : nil
            },
            Credential(
                description: "expired",
                header: bearer(try mint(["u42-*"], [.read], expires: now.addingTimeInterval(-120))), outcome: denied401),
            Credential(
                description: "not yet valid",
                header: bearer(try mint(["u42-*"], [.read], notBefore: now.addingTimeInterval(600))), outcome: denied401
            ),
            Credential(
                description: "wrong key",
                header: bearer(try mint(["u42-*"], [.read], with: try TokenMinter(key: other))), outcome: denied401),
            Credential(description: "alg none", header: bearer(unsigned), outcome: denied401),
            Credential(description: "tampered payload", header: bearer(tampered), outcome: denied401),
        ]

        let server = try await ListdServer(
            ["--token-key", keyFile.path],
            environment: ["LISTD_WRITE_TOKEN": Self.writeToken, "LISTD_READ_TOKEN": Self.readToken])
        defer { server.stop() }
        let admin = ["Authorization": bearer(Self.writeToken)]
        // Another user's list, whose bytes no scoped token may ever see.
        let secretList = try await server.request(
            "POST", "/lists",
            body:
                #"{"id":"u7-private","sections":[{"id":"s","model":{},"items":[{"id":"x","model":{"note":"\#(Self.secret)"}}]}]}"#,
            headers: admin)
        #expect(secretList.status == 201)

        var cells = 0
        var failures: [String] = []
        for (index, credential) in credentials.enumerated() {
            let list = "u42-m\(index)"
            let created = try await server.request(
                "POST", "/lists",
                body:
                    #"{"id":"\#(list)","sections":[{"id":"s","model":{},"items":[{"id":"a","model":{"owner":"u42"}},{"id":"b","model":{"owner":"u7","note":"\#(Self.hidden)"}}]}]}"#,
                headers: admin)
            #expect(created.status == 201)
            var headers: [String: String] = [:]
            if let header = credential.header { headers["Authorization"] = header }
            for route in Self.routes {
                let path = route.path.replacingOccurrences(of: "L", with: list)
                let body = route.body?.replacingOccurrences(of: "\"L\"", with: "\"\(list)\"")
                let reply = try await server.request(route.method, path, body: body, headers: headers)
                cells += 1
                let mentionsList = route.path.contains("L") || (route.body?.contains("\"L\"") ?? false)
                // A token of another user reads the routes that name no list (it sees none of u42's there).
                let expected =
                    credential.description == "signed on another list" && !mentionsList && route.need == .read
                    ? nil : credential.outcome(route.need)
                let ok: Bool
                if let expected {
                    ok = reply.status == expected
                } else if credential.description == "signed with a view", Self.viewless.contains(route.path) {
                    ok = reply.status == 403
                } else {
                    ok = (200..<300).contains(reply.status)
                }
                if !ok {
                    failures.append("\(credential) \(route.method) \(path): \(reply.status) \(reply.text.prefix(200))")
                }
                if credential.description.hasPrefix("signed") {
                    if reply.text.contains(Self.secret) || reply.text.contains("u7-private") {
                        failures.append("\(credential) \(route.method) \(path) showed another user's list")
                    }
                    if credential.description == "signed with a view", reply.text.contains(Self.hidden) {
                        failures.append("\(credential) \(route.method) \(path) showed an item outside its view")
                    }
                }
            }
        }
        print("access matrix: \(cells) cells, \(cells - failures.count) as the contract says")
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }

    static func padded(_ base64url: String) -> String {
        var text = base64url.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return text
    }

    @Test func anHS256TokenMadeWithTheEd25519PublicKeyIsRefused() async throws {
        // The classic key confusion: a server holding an Ed25519 public key is
        // sent an HS256 token whose HMAC key is that public key's PEM text.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("matrix-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let privateKey = Curve25519.Signing.PrivateKey()
        let publicPEM = privateKey.publicKey.pemRepresentation
        let keyFile = directory.appendingPathComponent("ed25519.pub")
        try Data(publicPEM.utf8).write(to: keyFile)
        let server = try await ListdServer(["--token-key", keyFile.path])
        defer { server.stop() }
        let payload =
            #"{"sub":"u42","lists":["*"],"rights":["read","write","admin"],"exp":\#(Int(Date().timeIntervalSince1970) + 3600)}"#
        for hmacKey in [Array(publicPEM.utf8), privateKey.publicKey.rawRepresentation.map { $0 }] {
            let forged = Self.handMade(header: #"{"alg":"HS256","typ":"JWT"}"#, payload: payload, hmacKey: hmacKey)
            let reply = try await server.get("/lists", headers: ["Authorization": "Bearer " + forged])
            #expect(reply.status == 401)
        }
        // And a real EdDSA token, minted with the private key, is accepted.
        let privateFile = directory.appendingPathComponent("ed25519.key")
        try Data(privateKey.pemRepresentation.utf8).write(to: privateFile)
        let minter = try TokenMinter(key: try await TokenKey.load(path: privateFile.path))
        let token = try minter.mint(
            TokenClaims(subject: "u42", lists: [.everyList], rights: [.read], expires: Date().addingTimeInterval(600)),
            issuedAt: Date())
        #expect(try await server.get("/lists", headers: ["Authorization": "Bearer " + token]).status == 200)
    }
}
