import CSQLite
import Foundation
import Testing

@testable import Storage

@Suite struct ConnectionTests {
    @Test func opensWithWALForeignKeysAndFullSync() throws {
        let dir = try TemporaryDirectory()
        let db = try Connection(path: dir.path("a.sqlite"))
        #expect(try db.scalar("PRAGMA journal_mode") == .text("wal"))
        #expect(try db.scalar("PRAGMA foreign_keys") == .integer(1))
        #expect(try db.scalar("PRAGMA synchronous") == .integer(2))
        #expect(try db.scalar("PRAGMA busy_timeout") == .integer(5000))
        #expect(try db.scalar("PRAGMA temp_store") == .integer(2))
        #expect(try db.scalar("PRAGMA cache_size") == .integer(-8192))
        #expect(!db.isInMemory)
    }
}
