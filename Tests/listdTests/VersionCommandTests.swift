import ListdTestSupport
import Testing

@Suite struct VersionCommandTests {
    @Test func printsListdAndSQLiteVersions() async throws {
        let result = try await ListdBinary.run(["version"])
        #expect(result.status == 0)
        #expect(result.output.hasPrefix("listd "))
        #expect(result.output.contains("SQLite 3."))
    }
}
