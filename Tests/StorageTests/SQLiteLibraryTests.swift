import Testing

@testable import Storage

@Suite struct SQLiteLibraryTests {
    @Test func reportsAThreadSafeSQLite3() {
        #expect(SQLiteLibrary.version.hasPrefix("3."))
        #expect(SQLiteLibrary.isThreadSafe)
    }
}
