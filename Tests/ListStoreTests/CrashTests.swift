import Foundation
import ListStore
import ListdTestSupport
import PostgresStore
import Synchronization
import Testing

/// Serialized: each case blocks a cooperative thread reading the child's pipe, and the pool has two.
@Suite(.serialized) struct CrashTests {
    /// The `StoreCrashWriter` executable that `swift build` put beside this test bundle.
    static func writerURL() throws -> URL {
        let executable = URL(
            fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        var directory = executable.deletingLastPathComponent()
        for _ in 0..<3 {
            let candidate = directory.appendingPathComponent("StoreCrashWriter")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "StoreCrashWriter next to \(executable.path)"])
    }

    /// SIGKILL a process writing through the store; reopen; every write it
    /// acknowledged is there. (For PostgreSQL: the server outlives the killed
    /// client, so this proves acknowledgement only follows a durable COMMIT.)
    @Test(arguments: StoreKind.tested) func everyAcknowledgedWriteSurvivesSIGKILL(_ kind: StoreKind) async throws {
        try await killWriter(kind, idempotent: false)
    }

    /// The same with an idempotency key on every write: after SIGKILL, an
    /// item is there exactly when its key's record is, and every record
    /// holds its answer (record and answer commit with the write, never
    /// apart from it).
    @Test(arguments: StoreKind.tested) func idempotencyRecordsCommitWithTheirWrites(_ kind: StoreKind) async throws {
        try await killWriter(kind, idempotent: true)
    }

    func killWriter(_ kind: StoreKind, idempotent: Bool) async throws {
        let directory = try TemporaryDirectory()
        let database: TestDatabase? = kind == .postgres ? try await TestPostgres.createDatabase() : nil
        defer { database?.drop() }
        let (process, reader) = try ChildProcess.piped(
            try Self.writerURL(),
            [database?.url ?? directory.databasePath, migrationsDirectory.path] + (idempotent ? ["idempotent"] : []))

        // Read acknowledgements until enough have arrived, then kill mid-stream.
        // On a thread of its own: these reads block, and on one of Swift's
        // cooperative threads (two on a two-core machine) they would hold up every other suite.
        let text = try await blocking { () -> String in
            var text = ""
            let deadline = Date().addingTimeInterval(20)
            while text.split(separator: "\n").count < 1_500 && Date() < deadline {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            // Whatever was already in the pipe was acknowledged before the kill.
            text += String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
            return text
        }
        #expect(process.wasSignaled)
        var lines = text.split(separator: "\n").map(String.init)
        if text.last != "\n", !lines.isEmpty { lines.removeLast() }  // a line cut in half proves nothing
        #expect(lines.first == "ready")
        let acknowledged = Set(lines.dropFirst())
        #expect(acknowledged.count > 100)

        let configuration = StoreConfiguration(migrationsDirectory: migrationsDirectory)
        let store: any TestedStore
        if let database {
            store = try await PostgresStore(url: database.url, configuration: configuration)
        } else {
            let sqlite = try await SQLiteStore(path: directory.databasePath, configuration: configuration)
            #expect(try await sqlite.integrityCheck().isEmpty)
            store = sqlite
        }
        let snapshot = try await store.snapshot(of: id("crash"))
        let present = Set(snapshot.sections[0].items.map(\.id.rawValue))
        #expect(acknowledged.isSubset(of: present), "lost: \(acknowledged.subtracting(present).sorted().prefix(10))")
        #expect(snapshot.version == Int64(present.count) + 1)
        if idempotent {
            // Every id a writer may have tried: w<writer>-<n> up to a few past the highest acknowledged.
            var highest = [Int](repeating: -1, count: 16)
            for item in acknowledged.union(present) {
                let parts = item.dropFirst().split(separator: "-")
                if parts.count == 2, let writer = Int(parts[0]), let count = Int(parts[1]),
                    highest.indices.contains(writer)
                {
                    highest[writer] = max(highest[writer], count)
                }
            }
            var separated: [String] = []
            var unanswered: [String] = []
            var recorded = 0
            for (writer, top) in highest.enumerated() {
                for count in 0...(top + 4) {
                    let item = "w\(writer)-\(count)"
                    let record = try await store.idempotencyRecord(caller: "crash", key: item)
                    if let record {
                        recorded += 1
                        let answer = record.answer.map { String(decoding: $0.body, as: UTF8.self) }
                        if answer?.hasPrefix("\(item) v") != true { unanswered.append(item) }
                    }
                    if (record != nil) != present.contains(item) { separated.append(item) }
                }
            }
            #expect(
                separated.isEmpty,
                "an effect without its record, or a record without its effect: \(separated.prefix(10))")
            #expect(recorded == present.count)
            #expect(unanswered.isEmpty, "a record committed without its answer: \(unanswered.prefix(10))")
        }
        await store.close()
    }
}
