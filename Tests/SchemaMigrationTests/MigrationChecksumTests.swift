import Foundation
import ListdTestSupport
import Testing

@testable import SchemaMigration

/// Migration checksums are SHA-256 hex digests; databases already record them,
/// so the digest of a given file must never change.
@Suite struct MigrationChecksumTests {
    /// FIPS 180-4 / NIST example vectors.
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
    ])
    func nistVectors(message: String, digest: String) {
        #expect(Migration.checksum(of: Array(message.utf8)) == digest)
    }

    /// Lengths around the 55/56/64-byte padding boundaries (digests from coreutils `sha256sum`).
    @Test(arguments: [
        (55, "595615dbe4f0f407ae397d08b4c2cb870cb9b0e11937416f950c5160acf9c005"),
        (56, "784f623b787495078e93ff28a25b581df0584055a7e71d8cd90c454716b92f51"),
        (64, "2fcd5a0d60e4c941381fcc4e00a4bf8be422c3ddfafb93c809e8d1e2bfffae8e"),
        (65, "1b3cd1877ab2f2f19f7be001722554f336cb799df0329de0bb4c118dc6abc06d"),
    ])
    func paddingBoundaries(length: Int, digest: String) {
        let message = (0..<length).map { UInt8(ascii: "a") + UInt8($0 % 26) }
        #expect(Migration.checksum(of: message) == digest)
    }

    /// The checksums deployed databases hold for the shipped migrations, as the
    /// hand-written SHA-256 computed them before swift-crypto replaced it.
    static let recorded: [String: String] = [
        "0001_initial.sql": "752529be9cfb51b76020a1017d3f1bd705b3b7ff58aae6de3d995333593f8f59",
        "0002_item_indexes.sql": "27e5090425e0a051d9d3e1118081e297c150861e2e13e05e028383ce30b20a34",
    ]

    @Test func shippedMigrationsKeepTheChecksumsDatabasesRecorded() throws {
        let migrator = try Migrator(directory: ListdProcess.migrations)
        let files = try FileManager.default.contentsOfDirectory(atPath: ListdProcess.migrations.path)
            .filter { $0.hasSuffix(".sql") }
        #expect(migrator.migrations.count == files.count)
        for fileName in Self.recorded.keys {
            let (id, _) = try #require(Migration.parse(fileName: fileName))
            let migration = try #require(migrator.migrations.first { $0.id == id })
            #expect(migration.checksum == Self.recorded[fileName], "\(fileName)")
        }
    }

    /// Every shipped migration's checksum agrees with coreutils' `sha256sum`,
    /// an implementation independent of ours.
    @Test func shippedMigrationsAgreeWithSha256sum() throws {
        let migrator = try Migrator(directory: ListdProcess.migrations)
        for fileName in try FileManager.default.contentsOfDirectory(atPath: ListdProcess.migrations.path)
        where fileName.hasSuffix(".sql") {
            let path = ListdProcess.migrations.appendingPathComponent(fileName).path
            let (process, reader) = try ChildProcess.piped(URL(fileURLWithPath: "/usr/bin/sha256sum"), [path])
            let output = reader.readDataToEndOfFile()
            process.waitUntilExit()
            let expected = String(decoding: output.prefix(64), as: UTF8.self)
            let (id, _) = try #require(Migration.parse(fileName: fileName))
            #expect(migrator.migrations.first { $0.id == id }?.checksum == expected, "\(fileName)")
        }
    }
}
