import Foundation
import ListdTestSupport
import Synchronization
import Testing

@testable import Storage

/// ``Connection/handOffCheckpoints(atPages:backstopPages:due:)``: the
/// committing connection asks for a checkpoint instead of making it, and makes
/// it only past the backstop.
@Suite struct CheckpointHandOffTests {
    /// The WAL file's size in pages (its 32-byte header, then frames of a
    /// 24-byte header and a page each).
    static func logFrames(_ path: String, pageSize: Int) throws -> Int {
        let size = (try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
        return max(0, size - 32) / (pageSize + 24)
    }

    @Test func aCommitPastThePagesAsksAndOnlyTheBackstopCheckpoints() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("a.sqlite")
        let db = try Connection(path: path)
        let asked = Atomic<Int>(0)
        try db.handOffCheckpoints(atPages: 20, backstopPages: 200, due: { asked.add(1, ordering: .relaxed) })
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB) STRICT")
        guard case .integer(let size) = try db.scalar("PRAGMA page_size") else {
            Issue.record("no page size")
            return
        }
        let pageSize = Int(size)
        // Each commit writes two new pages or more (a 5,000-byte row).
        for n in 0..<15 { try db.run("INSERT INTO t (id, body) VALUES (?, zeroblob(5000))", n) }
        #expect(asked.load(ordering: .relaxed) > 0, "no checkpoint asked for past 20 pages")
        // SQLite's own autocheckpoint would have restarted the log at 20 pages.
        #expect(try Self.logFrames(path, pageSize: pageSize) > 20)
        // Past the backstop the connection checkpoints, and the log restarts
        // from its beginning instead of growing.
        for n in 15..<400 { try db.run("INSERT INTO t (id, body) VALUES (?, zeroblob(5000))", n) }
        #expect(try Self.logFrames(path, pageSize: pageSize) < 300)
        // Another connection's checkpoint is what the hand-off is for.
        let other = try Connection(path: path)
        let result = try other.checkpoint(.passive)
        #expect(result.checkpointedFrames == result.logFrames)
        other.close()
        db.close()
    }
}
