import Testing

@Suite struct VersionCommandTests {
    @Test func printsListdAndSQLiteVersions() throws {
        let result = try ListdBinary.run(["version"])
        #expect(result.status == 0)
        #expect(result.output.hasPrefix("listd "))
        #expect(result.output.contains("SQLite 3."))
    }
}
