import Foundation
import ListdTestSupport
import Testing
import Tokens

/// `listd token keygen` and `listd token mint`, run as the real binary, checked with the Tokens module.
@Suite struct TokenCommandTests {
    @Test(arguments: ["--hs256", "--ed25519"])
    func keygenThenMintMakesATokenTheVerifierAccepts(_ algorithm: String) async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyPath = directory.appendingPathComponent("token.key").path

        let keygen = try await ListdBinary.run(["token", "keygen", algorithm, "--out", keyPath], stderr: true)
        #expect(keygen.status == 0, "\(keygen.output)")
        #expect(try Self.mode(keyPath) == 0o600)
        let verifyingPath = algorithm == "--ed25519" ? keyPath + ".pub" : keyPath
        #expect(FileManager.default.fileExists(atPath: keyPath + ".pub") == (algorithm == "--ed25519"))

        let before = Date()
        let mint = try await ListdBinary.run([
            "token", "mint", "--key", keyPath, "--lists", "u42-*", "--lists", "shared,team", "--rights", "read,write",
            "--ttl", "1h", "--view", "where=owner:u42", "--sub", "u42",
        ])
        #expect(mint.status == 0, "\(mint.output)")
        let token = mint.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(TokenVerifier.looksLikeJWT(token))

        let key = try await TokenKey.load(path: verifyingPath)
        let claims = try TokenVerifier(key: key).verify(token, now: Date()).get()
        #expect(claims.subject == "u42")
        #expect(claims.lists.map(\.description) == ["u42-*", "shared", "team"])
        #expect(claims.rights == [.read, .write])
        #expect(claims.view == "where=owner:u42")
        #expect(claims.notBefore == nil)
        #expect(abs(claims.expires.timeIntervalSince(before) - 3600) < 120)
        // Not valid an hour and two minutes later (past the minute of leeway).
        #expect(TokenVerifier(key: key).verify(token, now: before + 3720).failure == .expired)
    }

    @Test func keygenNeverOverwrites() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyPath = directory.appendingPathComponent("token.key").path
        try Data("keep me\n".utf8).write(to: URL(fileURLWithPath: keyPath))
        for algorithm in ["--hs256", "--ed25519"] {
            let again = try await ListdBinary.run(["token", "keygen", algorithm, "--out", keyPath], stderr: true)
            #expect(again.status != 0)
            #expect(again.output.contains("exists"), "\(again.output)")
        }
        #expect(try String(contentsOfFile: keyPath, encoding: .utf8) == "keep me\n")
        #expect(!FileManager.default.fileExists(atPath: keyPath + ".pub"))

        // An Ed25519 pair whose .pub is taken is refused before the private key is written.
        let pairPath = directory.appendingPathComponent("pair.key").path
        try Data("taken\n".utf8).write(to: URL(fileURLWithPath: pairPath + ".pub"))
        let pair = try await ListdBinary.run(["token", "keygen", "--ed25519", "--out", pairPath], stderr: true)
        #expect(pair.status != 0)
        #expect(!FileManager.default.fileExists(atPath: pairPath))
    }

    @Test func mintRefusesWhatItCannotMakeWithWords() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyPath = directory.appendingPathComponent("token.key").path
        let keygen = try await ListdBinary.run(["token", "keygen", "--ed25519", "--out", keyPath], stderr: true)
        try #require(keygen.status == 0, "\(keygen.output)")
        let shortPath = directory.appendingPathComponent("short.key").path
        try Data("short\n".utf8).write(to: URL(fileURLWithPath: shortPath))

        let good = ["--lists", "u42-*", "--rights", "read", "--ttl", "10m"]
        let cases: [(arguments: [String], says: String)] = [
            (["--key", keyPath + ".pub"] + good, "public key"),
            (["--key", shortPath] + good, "at least 32 bytes"),
            (["--key", directory.appendingPathComponent("missing").path] + good, "cannot read"),
            (["--key", keyPath, "--lists", "u42-*", "--rights", "read,delete", "--ttl", "1h"], "delete"),
            (["--key", keyPath, "--lists", "u42-*", "--rights", "", "--ttl", "1h"], "rights"),
            (["--key", keyPath, "--lists", "u42-*", "--rights", "read", "--ttl", "1y"], "ttl"),
            (["--key", keyPath, "--lists", "u42-*", "--rights", "read", "--ttl", "0s"], "ttl"),
            (["--key", keyPath, "--lists", "a*b", "--rights", "read", "--ttl", "1h"], "a*b"),
            (["--key", keyPath, "--rights", "read", "--ttl", "1h"], "lists"),
            (["--key", keyPath, "--lists", "x", "--rights", "read", "--ttl", "1h", "--view", "nope=1"], "view"),
            (["--key", keyPath, "--lists", "x", "--rights", "read", "--ttl", "1h", "--view", "limit=0"], "limit"),
        ]
        for (arguments, says) in cases {
            let result = try await ListdBinary.run(["token", "mint"] + arguments, stderr: true)
            #expect(result.status != 0, "\(arguments)")
            #expect(result.output.contains(says), "\(arguments): \(result.output)")
            #expect(!result.output.contains("eyJ"), "\(arguments) printed a token")
        }
    }

    static func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "listd-token-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    static func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return try #require(attributes[.posixPermissions] as? Int) & 0o777
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
