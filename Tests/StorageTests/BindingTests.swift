import CSQLite
import ListdTestSupport
import Testing

@testable import Storage

@Suite struct BindingTests {
    static let edgeValues: [SQLValue] = [
        .null,
        .integer(0), .integer(1), .integer(-1), .integer(.max), .integer(.min),
        .real(0), .real(1.5), .real(-2.25), .real(.infinity), .real(-.infinity),
        .real(.greatestFiniteMagnitude), .real(-.greatestFiniteMagnitude),
        .real(.leastNonzeroMagnitude), .real(.leastNormalMagnitude), .real(0.1), .real(1e300),
        .text(""), .text("hello"), .text("a\u{0}b"), .text("\u{0}"), .text("emoji 🧺 and ü"),
        .text(String(repeating: "x", count: 100_000)),
        .blob([]), .blob([0]), .blob([0, 1, 2, 255]), .blob([UInt8](repeating: 7, count: 70_000)),
    ]

    @Test(arguments: edgeValues)
    func roundTripsThroughAParameter(value: SQLValue) throws {
        let db = try Connection(path: ":memory:")
        let read = try db.query("SELECT ?, typeof(?1)", value) { row in (row.value(0), row.text(1)) }
        #expect(read.count == 1)
        #expect(read.first?.0 == value)
        #expect(read.first?.1 == Self.typeName(value))
    }

    @Test(arguments: edgeValues)
    func roundTripsThroughAStrictAnyColumnOnDisk(value: SQLValue) throws {
        let dir = try TemporaryDirectory()
        do {
            let db = try Connection(path: dir.path("v.sqlite"))
            try db.execute("CREATE TABLE t(v ANY) STRICT")
            try db.run("INSERT INTO t(v) VALUES (?)", value)
        }
        let db = try Connection(path: dir.path("v.sqlite"))
        #expect(try db.scalar("SELECT v FROM t") == value)
    }

    @Test func typedReadersSeeWhatWasBound() throws {
        let db = try Connection(path: ":memory:")
        let row = try #require(
            try db.queryFirst(
                "SELECT ?, ?, ?, ?, ?, ?, ?, ?", Int.max, Int64.min, 2.5, "a\u{0}z", true, [UInt8](), nil as Int?,
                Int32(-7)
            ) { row in
                (
                    row.int(0), row.int64(1), row.double(2), row.text(3), row.bool(4), row.blob(5),
                    row.isNull(6), row.int64(7), row.columnCount
                )
            })
        #expect(row.0 == Int.max)
        #expect(row.1 == Int64.min)
        #expect(row.2 == 2.5)
        #expect(row.3 == "a\u{0}z")
        #expect(row.3.utf8.count == 3)
        #expect(row.4)
        #expect(row.5 == [])
        #expect(row.6)
        #expect(row.7 == -7)
        #expect(row.8 == 8)
    }

    @Test func emptyBlobAndEmptyTextAreNotNull() throws {
        let db = try Connection(path: ":memory:")
        let types = try db.query("SELECT typeof(?), typeof(?), length(?1), length(?2)", [UInt8](), "") { row in
            [row.text(0), row.text(1), row.text(2), row.text(3)]
        }
        #expect(types == [["blob", "text", "0", "0"]])
    }

    @Test func negativeZeroKeepsItsSignAsAParameter() throws {
        let db = try Connection(path: ":memory:")
        let value = try #require(try db.queryFirst("SELECT ?", -0.0) { $0.double(0) })
        #expect(value == 0)
        #expect(value.sign == .minus)
    }

    @Test func nanIsRefusedRatherThanStoredAsNull() throws {
        let db = try Connection(path: ":memory:")
        let error = try #require(sqliteError { _ = try db.scalar("SELECT ?", Double.nan) })
        #expect(error.code == SQLITE_MISMATCH)
        #expect(error.message.contains("NaN"))
        #expect(error.sql == "SELECT ?")
    }

    @Test func wrongParameterCountIsAnError() throws {
        let db = try Connection(path: ":memory:")
        let tooFew = try #require(sqliteError { _ = try db.scalar("SELECT ?, ?", 1) })
        #expect(tooFew.code == SQLITE_RANGE)
        #expect(tooFew.message.contains("2 parameter(s) but 1"))
        let tooMany = try #require(sqliteError { try db.run("SELECT 1", 1) })
        #expect(tooMany.code == SQLITE_RANGE)

        let statement = try db.prepare("SELECT ?")
        let outside = try #require(sqliteError { try statement.bind(.integer(1), at: 2) })
        #expect(outside.code == SQLITE_RANGE)
        #expect(outside.message.contains("outside 1...1"))
    }

    @Test func namedAndNumberedParametersBindByPosition() throws {
        let db = try Connection(path: ":memory:")
        let statement = try db.prepare("SELECT :a || :b")
        #expect(statement.parameterCount == 2)
        try statement.bind([.text("x"), .text("y")])
        #expect(try statement.step())
        #expect(statement.row.text(0) == "xy")
        #expect(statement.row.columnName(0) == ":a || :b")
    }

    @Test func rowExposesValuesAndColumnNames() throws {
        let db = try Connection(path: ":memory:")
        let rows = try db.query("SELECT 1 AS one, 'two' AS two, NULL AS three") { row in
            (
                row.values, (0..<row.columnCount).map(row.columnName), row.columnIndex(named: "two"),
                row.optionalText(2), row.optionalInt64(0)
            )
        }
        #expect(rows.count == 1)
        #expect(rows[0].0 == [.integer(1), .text("two"), .null])
        #expect(rows[0].1 == ["one", "two", "three"])
        #expect(rows[0].2 == 1)
        #expect(rows[0].3 == nil)
        #expect(rows[0].4 == 1)
    }

    /// Random values of every kind, bound in random-width rows and read back
    /// exactly, through a table on disk.
    @Test func seededRandomValuesRoundTrip() throws {
        let seed = SeededGenerator.seed(for: "seededRandomValuesRoundTrip")
        var random = SeededGenerator(seed: seed)
        let cases = SeededGenerator.cases(normal: 2_000, long: 100_000)
        let dir = try TemporaryDirectory()
        let db = try Connection(path: dir.path("p.sqlite"), options: .init(synchronous: .off))
        try db.execute("CREATE TABLE t(k INTEGER PRIMARY KEY, a ANY, b ANY, c ANY) STRICT")
        var expected: [Int64: [SQLValue]] = [:]
        try db.transaction(.immediate) {
            for key in 0..<Int64(cases) {
                let values = (0..<3).map { _ in Self.randomValue(using: &random) }
                try db.run("INSERT INTO t(k, a, b, c) VALUES (?, ?, ?, ?)", key, values[0], values[1], values[2])
                expected[key] = values
            }
        }
        let rows = try db.query("SELECT k, a, b, c FROM t ORDER BY k") { row in
            (row.int64(0), [row.value(1), row.value(2), row.value(3)])
        }
        #expect(rows.count == cases)
        for (key, values) in rows where expected[key] != values {
            Issue.record("seed \(seed): row \(key) read \(values), wrote \(expected[key] ?? [])")
            break
        }
    }

    static func randomValue(using random: inout SeededGenerator) -> SQLValue {
        switch Int.random(in: 0..<5, using: &random) {
        case 0:
            return .null
        case 1:
            return .integer(
                Bool.random(using: &random)
                    ? Int64.random(in: .min ... .max, using: &random) : Int64.random(in: -3...3, using: &random))
        case 2:
            var value: Double
            repeat {
                value = Double(bitPattern: random.next())
            } while value.isNaN
            // SQLite's ANY column keeps a negative zero as 0.0 only by value; compare by value.
            return .real(value == 0 ? 0 : value)
        case 3:
            let scalars = (0..<Int.random(in: 0..<40, using: &random)).map { _ -> Character in
                let choices: [UInt32] = [0, 0x41, 0x7A, 0xE9, 0x4E2D, 0x1F9FA]
                let base = choices[Int.random(in: 0..<choices.count, using: &random)]
                return Character(Unicode.Scalar(base + UInt32.random(in: 0..<3, using: &random)) ?? "?")
            }
            return .text(String(scalars))
        default:
            return .blob(
                (0..<Int.random(in: 0..<64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
        }
    }

    static func typeName(_ value: SQLValue) -> String {
        switch value {
        case .null: "null"
        case .integer: "integer"
        case .real: "real"
        case .text: "text"
        case .blob: "blob"
        }
    }
}
