import Crypto
import CryptoExtras
import Foundation
import Testing

@testable import Tokens

/// Key files in each form the contract takes, and the ones it refuses.
@Suite struct TokenKeyTests {
    typealias F = TokenFixtures

    @Test func anHS256SecretLosesOneTrailingNewline() async throws {
        let secret = Array("0123456789abcdef0123456789abcdef-secret".utf8)
        let bare = try await TokenKey(contents: secret)
        #expect(bare.algorithm == .hs256 && bare.canMint)
        let token = try TokenMinter(key: bare).mint(F.fullClaims, issuedAt: F.now)
        for file in [secret + Array("\n".utf8), secret + Array("\r\n".utf8)] {
            let key = try await TokenKey(contents: file)
            #expect(TokenVerifier(key: key).verify(token, now: F.now).success == F.fullClaims)
        }
        // Only one: a second newline is part of the secret, so the key differs.
        let twice = try await TokenKey(contents: secret + Array("\n\n".utf8))
        #expect(TokenVerifier(key: twice).verify(token, now: F.now).failure == .signature)
    }

    @Test func anHS256SecretShorterThan32BytesIsRefused() async throws {
        for (file, length) in [("too-short-secret\n", 16), (String(repeating: "s", count: 31) + "\r\n", 31), ("", 0)] {
            await #expect(throws: TokenKeyError(.secretTooShort(bytes: length))) {
                try await TokenKey(contents: Array(file.utf8))
            }
        }
        let error = await #expect(throws: TokenKeyError.self) {
            try await TokenKey(contents: Array(String(repeating: "s", count: 12).utf8))
        }
        #expect(error?.description.contains("an HS256 secret must be at least 32 bytes; this one is 12") == true)
        #expect(try await TokenKey(contents: Array(String(repeating: "s", count: 32).utf8)).algorithm == .hs256)
    }

    @Test func anEd25519PublicKeyVerifiesOnly() async throws {
        let privateKey = Curve25519.Signing.PrivateKey()
        let key = try await TokenKey(contents: Array(privateKey.publicKey.pemRepresentation.utf8))
        #expect(key.algorithm == .eddsa)
        #expect(!key.canMint)
        #expect(throws: TokenKeyError(.publicKeyOnly)) { try TokenMinter(key: key) }
        let error = #expect(throws: TokenKeyError.self) { try TokenMinter(key: key) }
        #expect(error?.description.contains("private key") == true)
    }

    @Test func anEd25519PrivateKeyVerifiesAndMints() async throws {
        let privateKey = Curve25519.Signing.PrivateKey()
        let key = try await TokenKey(contents: Array(privateKey.pemRepresentation.utf8))
        #expect(key.algorithm == .eddsa && key.canMint)
        let token = try TokenMinter(key: key).mint(F.fullClaims, issuedAt: F.now)
        // The public half, loaded on its own, accepts what the private key minted.
        let publicKey = try await TokenKey(contents: Array(privateKey.publicKey.pemRepresentation.utf8))
        #expect(TokenVerifier(key: publicKey).verify(token, now: F.now).success == F.fullClaims)
        #expect(TokenVerifier(key: key).verify(token, now: F.now).success == F.fullClaims)
    }

    @Test func aPEMWithCRLFAndBlankSpaceAroundItLoads() async throws {
        let pem = Curve25519.Signing.PrivateKey().publicKey.pemRepresentation
        let file = "\n  " + pem.replacingOccurrences(of: "\n", with: "\r\n") + "\r\n\r\n"
        #expect(try await TokenKey(contents: Array(file.utf8)).algorithm == .eddsa)
    }

    @Test func anRSAKeyIsRefusedByName() async throws {
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        for pem in [
            rsa.publicKey.pemRepresentation, rsa.pemRepresentation, rsa.pkcs8PEMRepresentation,
            rsa.publicKey.pkcs1PEMRepresentation,
        ] {
            let error = await #expect(throws: TokenKeyError.self) { try await TokenKey(contents: Array(pem.utf8)) }
            #expect(error?.reason == .unsupportedKeyType("an RSA key"), "\(pem.prefix(40))")
            #expect(error?.description.contains("RSA") == true)
        }
    }

    @Test func anECKeyIsRefusedByName() async throws {
        let ec = P256.Signing.PrivateKey()
        for pem in [ec.publicKey.pemRepresentation, ec.pemRepresentation] {
            let error = await #expect(throws: TokenKeyError.self) { try await TokenKey(contents: Array(pem.utf8)) }
            #expect(error?.reason == .unsupportedKeyType("an EC (ECDSA) key"), "\(pem.prefix(40))")
        }
    }

    @Test func otherPEMsAreRefusedWithWordsForEach() async throws {
        let x25519 = Curve25519.KeyAgreement.PrivateKey().publicKey.pemRepresentation
        let cases: [(String, String)] = [
            (x25519, "X25519"),
            ("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "certificate"),
            ("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n", "encrypted"),
            ("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n", "OpenSSH"),
            ("-----BEGIN SOMETHING-----\nAAAA\n-----END SOMETHING-----\n", "SOMETHING"),
        ]
        for (pem, word) in cases {
            let error = await #expect(throws: TokenKeyError.self) { try await TokenKey(contents: Array(pem.utf8)) }
            #expect(error?.description.contains(word) == true, "\(error?.description ?? "no error")")
        }
    }

    @Test(arguments: [
        "-----BEGIN PUBLIC KEY-----\nnot base64!\n-----END PUBLIC KEY-----\n",
        "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n",
        "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAAAAA\n-----END PUBLIC KEY-----\n",
        "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n",
        "-----BEGIN \u{FF}",
    ])
    func aBrokenPEMIsRefused(_ pem: String) async throws {
        let error = await #expect(throws: TokenKeyError.self) { try await TokenKey(contents: Array(pem.utf8)) }
        guard case .malformedPEM = error?.reason else {
            Issue.record("\(pem.debugDescription): \(String(describing: error))")
            return
        }
    }

    @Test func loadReadsAFileAndNamesItInErrors() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokens-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let good = directory.appendingPathComponent("hs256.key")
        try Data((String(repeating: "k", count: 40) + "\n").utf8).write(to: good)
        let key = try await TokenKey.load(path: good.path)
        #expect(key.algorithm == .hs256)

        let short = directory.appendingPathComponent("short.key")
        try Data("short\n".utf8).write(to: short)
        let tooShort = await #expect(throws: TokenKeyError.self) { try await TokenKey.load(path: short.path) }
        #expect(tooShort?.reason == .secretTooShort(bytes: 5))
        #expect(tooShort?.path == short.path)
        #expect(tooShort?.description.hasPrefix(short.path + ": ") == true)

        let missing = directory.appendingPathComponent("missing.key").path
        let unreadable = await #expect(throws: TokenKeyError.self) { try await TokenKey.load(path: missing) }
        guard case .unreadable = unreadable?.reason else {
            Issue.record("a missing file: \(String(describing: unreadable))")
            return
        }
        #expect(unreadable?.description.hasPrefix(missing) == true)

        let large = directory.appendingPathComponent("large.key")
        try Data(repeating: 65, count: TokenKey.maximumFileBytes + 1).write(to: large)
        await #expect(throws: TokenKeyError(.tooLarge, path: large.path)) { try await TokenKey.load(path: large.path) }
    }

    @Test func noDescriptionShowsKeyMaterial() async throws {
        let marker = "SECRET-MARKER-0123456789-0123456789"
        let secret = try await TokenKey(contents: Array(marker.utf8))
        let privateKey = Curve25519.Signing.PrivateKey()
        let pem = privateKey.pemRepresentation
        let body = try #require(pem.split(separator: "\n").dropFirst().first)
        let signing = try await TokenKey(contents: Array(pem.utf8))
        for (key, hidden) in [(secret, marker), (signing, String(body))] {
            var dumped = ""
            dump(key, to: &dumped)
            var dumpedMinter = ""
            dump(try TokenMinter(key: key), to: &dumpedMinter)
            var dumpedVerifier = ""
            dump(TokenVerifier(key: key), to: &dumpedVerifier)
            for text in [
                String(describing: key), String(reflecting: key), "\(key)", dumped, dumpedMinter, dumpedVerifier,
            ] {
                #expect(!text.contains(hidden), "\(text)")
                #expect(!text.contains(hidden.prefix(12)), "\(text)")
            }
        }
        #expect(String(describing: secret) == "TokenKey(HS256, verify and mint)")
    }

    @Test(arguments: TokenAlgorithm.allCases)
    func generatedKeysLoadAndWork(_ algorithm: TokenAlgorithm) async throws {
        let files = try TokenKey.generate(algorithm)
        let key = try await TokenKey(contents: files.keyFile)
        #expect(key.algorithm == algorithm && key.canMint)
        #expect(!String(describing: files).contains(String(decoding: files.keyFile.prefix(20), as: UTF8.self)))
        let token = try TokenMinter(key: key).mint(F.fullClaims, issuedAt: F.now)
        switch algorithm {
        case .hs256:
            #expect(files.publicKeyFile == nil)
            #expect(files.keyFile.count == 44 && files.keyFile.last == UInt8(ascii: "\n"))
            #expect(files.keyFile.dropLast().allSatisfy(Base64URL.isAlphabet))
            #expect(try TokenKey.generate(.hs256).keyFile != files.keyFile)
        case .eddsa:
            let publicFile = try #require(files.publicKeyFile)
            #expect(String(decoding: files.keyFile, as: UTF8.self).hasPrefix("-----BEGIN PRIVATE KEY-----"))
            #expect(String(decoding: publicFile, as: UTF8.self).hasPrefix("-----BEGIN PUBLIC KEY-----"))
            let publicKey = try await TokenKey(contents: publicFile)
            #expect(!publicKey.canMint)
            #expect(TokenVerifier(key: publicKey).verify(token, now: F.now).success == F.fullClaims)
        }
    }
}
