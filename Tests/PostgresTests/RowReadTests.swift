import ListdTestSupport
import Testing

@testable import Postgres

/// Integers read from libpq's bytes (`Rows.decimal`) accept exactly what
/// `Int64(_: String)` accepts and give the same value: the oracle is Swift's own parser.
struct DecimalParseTests {
    static let edges = [
        "", "-", "+", "0", "-0", "+0", "+5", "-5", "007", "-007", "9223372036854775807", "9223372036854775808",
        "-9223372036854775808", "-9223372036854775809", "99999999999999999999", "1 ", " 1", "1-", "--1", "+-1",
        "1.0", "1e3", "0x10", "١٢", "12a",
    ]

    @Test(arguments: edges)
    func edgeCasesReadAsSwiftReadsThem(_ text: String) {
        #expect(Self.parse(text) == Int64(text), "\"\(text)\"")
    }

    @Test func randomDigitStringsReadAsSwiftReadsThem() {
        var generator = SeededGenerator(seed: SeededGenerator.seed(for: "Postgres.decimal"))
        let alphabet = Array("0123456789-+ .x".utf8)
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...21, using: &generator)
            let bytes = (0..<length).map { _ in
                // Mostly digits, so most strings are numbers and many overflow.
                Bool.random(using: &generator) || Int.random(in: 0..<8, using: &generator) > 0
                    ? UInt8(ascii: "0") + UInt8.random(in: 0...9, using: &generator)
                    : alphabet.randomElement(using: &generator) ?? UInt8(ascii: "0")
            }
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(Self.parse(text) == Int64(text), "\"\(text)\"")
        }
        for _ in 0..<2_000 {
            let value = Int64.random(in: .min ... .max, using: &generator)
            #expect(Self.parse(String(value)) == value)
        }
    }

    static func parse(_ text: String) -> Int64? {
        Array(text.utf8).withUnsafeBufferPointer { Rows.decimal($0) }
    }
}

@Suite(.enabled(if: TestPostgres.enabled, Comment(rawValue: TestPostgres.skipReason)))
struct RowFastReadTests {
    @Test func integersAndTextReadStraightFromTheResult() async throws {
        try await withDatabase { db, _ throws in
            let row = try db.query(
                """
                SELECT 7::int2, -8::int4, (-9223372036854775807 - 1)::int8, 12::oid, NULL::int8, 'x'::text,
                    1.5::float8, true, '\\x00ff'::bytea, NULL::text, '{"a":1}'::jsonb
                """)[0]
            #expect(row.integerIfPresent(0) == 7)
            #expect(row.integerIfPresent(1) == -8)
            #expect(row.integerIfPresent(2) == .min)
            #expect(row.integerIfPresent(3) == 12)
            #expect(row.integerIfPresent(4) == nil)
            // Not integer columns, or no such column: nil, and value(_:) says what they hold.
            #expect(row.integerIfPresent(5) == nil)
            #expect(row.integerIfPresent(6) == nil)
            #expect(row.integerIfPresent(99) == nil)
            #expect(row.integerIfPresent(-1) == nil)
            #expect(try row.value(2) == .integer(.min))
            // Plain text is what PostgreSQL sends for anything but numbers, booleans and bytea.
            let plain = (0...8).map { row.isPlainText($0) }
            #expect(plain == [false, false, false, false, false, true, false, false, false])
            #expect(row.isPlainText(9))
            #expect(row.isPlainText(10))
            #expect(!row.isPlainText(11))
            #expect(try row.optionalText(9) == nil)
        }
    }
}
