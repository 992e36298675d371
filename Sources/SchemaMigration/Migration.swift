import Crypto

/// One schema change: a numbered SQL script, applied once per database.
///
/// On disk a migration is `Migrations/NNNN_name.sql`: at least four digits
/// (the id), an underscore, then a name of letters, digits, `_` or `-`.
/// The checksum fingerprints the exact file bytes so an applied migration that
/// was edited afterwards is refused instead of silently diverging.
public struct Migration: Sendable, Hashable {
    /// The number that orders migrations; ids run 1, 2, 3… without gaps.
    public var id: Int
    /// The descriptive part of the file name, such as `create_lists`.
    public var name: String
    /// The SQL script.
    public var sql: String
    /// SHA-256 of the file's bytes, as 64 lowercase hex digits.
    public var checksum: String

    /// A migration whose checksum is computed from `sql`'s UTF-8 bytes, which
    /// equals the checksum of a file holding exactly that text.
    public init(id: Int, name: String, sql: String) {
        self.init(id: id, name: name, sql: sql, checksum: Migration.checksum(of: Array(sql.utf8)))
    }

    /// A migration with a checksum computed elsewhere.
    public init(id: Int, name: String, sql: String, checksum: String) {
        self.id = id
        self.name = name
        self.sql = sql
        self.checksum = checksum
    }

    /// `NNNN_name`, the file name without `.sql`, for messages and logs.
    public var identifier: String { Migration.identifier(id: id, name: name) }

    /// The file name this migration has on disk.
    public var fileName: String { identifier + ".sql" }

    static func identifier(id: Int, name: String) -> String {
        let digits = String(id)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits + "_" + name
    }

    /// Parses `NNNN_name.sql` into an id and a name, or `nil` when the name
    /// does not have that shape.
    static func parse(fileName: String) -> (id: Int, name: String)? {
        guard fileName.hasSuffix(".sql") else { return nil }
        let stem = fileName.dropLast(4)
        guard let underscore = stem.firstIndex(of: "_") else { return nil }
        let digits = stem[..<underscore]
        let name = stem[stem.index(after: underscore)...]
        guard digits.count >= 4, digits.count <= 18, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
            let id = Int(digits), id >= 1,
            !name.isEmpty,
            name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") })
        else { return nil }
        return (id, String(name))
    }
}

/// A migration as the database recorded it in `schema_migrations`.
public struct AppliedMigration: Sendable, Hashable {
    /// The migration's id.
    public var id: Int
    /// Its name when it was applied.
    public var name: String
    /// The checksum of the file that was applied.
    public var checksum: String
    /// When it was applied, as ISO 8601 UTC text (`2025-01-31T12:00:00.000Z`).
    public var appliedAt: String

    /// A recorded row, as a target reads it back.
    public init(id: Int, name: String, checksum: String, appliedAt: String) {
        self.id = id
        self.name = name
        self.checksum = checksum
        self.appliedAt = appliedAt
    }
}

extension Migration {
    /// The fingerprint recorded for a migration file: SHA-256 of its bytes as
    /// 64 lowercase hex digits, so a file edited after it was applied is caught.
    public static func checksum(of bytes: [UInt8]) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in SHA256.hash(data: bytes) {
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
