import Foundation
import ListModel
import ListStore
import ListdTestSupport
import Testing

/// The store's side of `Idempotency-Key` on both stores: a write claims the
/// task's key in its own transaction (a failed write keeps no claim; a used
/// key applies nothing), the answer is attached once, and records older than
/// the retention are pruned in idle time.
/// Serialized: each PostgreSQL case opens a store's sessions, and the suite's
/// PostgreSQL server allows 300 connections for every suite running at once.
@Suite(.serialized) struct IdempotencyStoreTests {
    static func insert(_ name: String) -> [ListOperation] {
        [.insertSection(NewSection(id: id(name)), at: nil)]
    }

    @Test(arguments: StoreKind.tested)
    func aWriteClaimsItsKeyInItsTransactionAndAUsedKeyAppliesNothing(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let list = id("claimed")
            _ = try await store.createList(id: list, name: "", sections: [])
            let claim = IdempotencyClaim(caller: "subject a", key: "k", fingerprint: "f1")
            let result = try await IdempotencyClaim.$current.withValue(claim) {
                try await store.apply(Self.insert("s1"), to: list, expectedVersion: nil)
            }
            #expect(result.version == 2)
            #expect(claim.applied.value)
            let record = try await store.idempotencyRecord(caller: "subject a", key: "k")
            #expect(record?.fingerprint == "f1")
            #expect(record?.answer == nil, "no answer until the service attaches it")
            #expect(try await store.idempotencyRecord(caller: "subject b", key: "k") == nil, "keys are per caller")

            let again = IdempotencyClaim(caller: "subject a", key: "k", fingerprint: "f1")
            await #expect(throws: StoreError.self) {
                try await IdempotencyClaim.$current.withValue(again) {
                    try await store.apply(Self.insert("s2"), to: list, expectedVersion: nil)
                }
            }
            do {
                try await IdempotencyClaim.$current.withValue(again) {
                    try await store.deleteList(list, expectedVersion: nil)
                }
                Issue.record("a used key deleted the list")
            } catch let error as StoreError {
                #expect(error.kind == .idempotencyKeyUsed, "\(error)")
            }
            #expect(!again.applied.value)
            let snapshot = try await store.snapshot(of: list)
            #expect(snapshot.version == 2 && snapshot.sections.map(\.id) == [id("s1")], "nothing applied twice")
        }
    }

    @Test(arguments: StoreKind.tested)
    func aFailedWriteKeepsNoClaim(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let list = id("failed")
            _ = try await store.createList(id: list, name: "", sections: [])
            let claim = IdempotencyClaim(caller: "open", key: "k", fingerprint: "f")
            await #expect(throws: StoreError.self) {
                try await IdempotencyClaim.$current.withValue(claim) {
                    try await store.apply(Self.insert("s"), to: list, expectedVersion: 7)
                }
            }
            #expect(!claim.applied.value)
            #expect(try await store.idempotencyRecord(caller: "open", key: "k") == nil, "rolled back with the write")
            // So the retry applies afresh.
            let retried = try await IdempotencyClaim.$current.withValue(claim) {
                try await store.apply(Self.insert("s"), to: list, expectedVersion: 1)
            }
            #expect(retried.version == 2 && claim.applied.value)
        }
    }

    @Test(arguments: StoreKind.tested)
    func anAnswerIsAttachedOnceAndAnotherRequestSeesTheRecord(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let list = id("answered")
            _ = try await store.createList(id: list, name: "", sections: [])
            let claim = IdempotencyClaim(caller: "write-token", key: "k", fingerprint: "f")
            _ = try await IdempotencyClaim.$current.withValue(claim) {
                try await store.apply(Self.insert("s"), to: list, expectedVersion: nil)
            }
            let answer = StoredAnswer(
                status: 200,
                headers: [
                    .init(name: "ETag", value: "\"e-2\""), .init(name: "Content-Type", value: "application/json"),
                ],
                body: Array(#"{"list":"answered","version":2,"text":"é ✓"}"#.utf8))
            #expect(try await store.recordIdempotentAnswer(claim, answer) == nil)
            #expect(try await store.idempotencyRecord(caller: "write-token", key: "k")?.answer == answer)
            // A second attach keeps the first answer and returns it.
            let other = StoredAnswer(status: 500, headers: [], body: [])
            #expect(try await store.recordIdempotentAnswer(claim, other)?.answer == answer)
            // Another request's attach (a no-op request racing for the key) gets the record as it is.
            let another = IdempotencyClaim(caller: "write-token", key: "k", fingerprint: "g")
            let existing = try await store.recordIdempotentAnswer(another, other)
            #expect(existing?.fingerprint == "f" && existing?.answer == answer)
            // A request that wrote nothing records its answer under a fresh key.
            let noop = IdempotencyClaim(caller: "write-token", key: "noop", fingerprint: "n")
            #expect(try await store.recordIdempotentAnswer(noop, answer) == nil)
            #expect(try await store.idempotencyRecord(caller: "write-token", key: "noop")?.fingerprint == "n")
        }
    }

    /// A write answered with its change keeps the change itself with its
    /// commit (``StoredAnswer/change``), read back as it was on both stores;
    /// attached after the commit, a change is kept the same way.
    @Test(arguments: StoreKind.tested)
    func aKeptChangeIsReadBackAsItWas(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let list = id("change-kept")
            _ = try await store.createList(id: list, name: "", sections: [NewSection(id: id("s"))])
            let claim = IdempotencyClaim(caller: "open", key: "k", fingerprint: "f")
            claim.answer.render { (result: WriteResult) in result.change.map(StoredAnswer.init(change:)) }
            let result = try await IdempotencyClaim.$current.withValue(claim) {
                try await store.apply(
                    [.insertItem(section: id("s"), item: NewItem(id: id("e-1"), model: .emptyObject), at: nil)],
                    to: list, expectedVersion: nil)
            }
            let change = try #require(result.change)
            #expect(claim.answer.keptAnswer?.change == change)
            let record = try #require(try await store.idempotencyRecord(caller: "open", key: "k"))
            #expect(record.answer == StoredAnswer(change: change))

            let later = IdempotencyClaim(caller: "open", key: "later", fingerprint: "f")
            #expect(try await store.recordIdempotentAnswer(later, StoredAnswer(change: change)) == nil)
            #expect(try await store.idempotencyRecord(caller: "open", key: "later")?.answer?.change == change)
        }
    }

    @Test(arguments: StoreKind.tested)
    func recordsOlderThanTheRetentionArePrunedInIdleTime(_ kind: StoreKind) async throws {
        var configuration = StoreConfiguration(fullSync: false)
        configuration.idempotencyRetention = .seconds(1)
        try await withStore(kind, configuration) { store in
            let list = id("pruned")
            _ = try await store.createList(id: list, name: "", sections: [])
            for index in 0..<3 {
                let claim = IdempotencyClaim(caller: "open", key: "k\(index)", fingerprint: "f")
                _ = try await IdempotencyClaim.$current.withValue(claim) {
                    try await store.apply(Self.insert("s\(index)"), to: list, expectedVersion: nil)
                }
                // Committed with its write (a record is not checked for here: under
                // load it may be a second old, and pruned, by the time it is read).
                #expect(claim.applied.value)
            }
            let pruned = try await eventually(15) {
                for index in 0..<3 where try await store.idempotencyRecord(caller: "open", key: "k\(index)") != nil {
                    return false
                }
                return true
            }
            #expect(pruned, "records older than the retention were never pruned")
            #expect(try await store.snapshot(of: list).version == 4, "only the records went")
        }
    }

    @Test(arguments: StoreKind.tested)
    func recordsWithinTheRetentionStay(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let list = id("kept")
            _ = try await store.createList(id: list, name: "", sections: [])
            let claim = IdempotencyClaim(caller: "open", key: "k", fingerprint: "f")
            _ = try await IdempotencyClaim.$current.withValue(claim) {
                try await store.apply(Self.insert("s"), to: list, expectedVersion: nil)
            }
            // Idle pruning runs within a second or so of the last write (HistoryAgeTests waits as long).
            try await Task.sleep(for: .seconds(2))
            #expect(try await store.idempotencyRecord(caller: "open", key: "k") != nil, "24 hours by default")
        }
    }
}

/// Many keyed writes in one SQLite group commit: every write that applied
/// has its record (and its kept change), a write that failed has none,
/// whatever its place in the batch, and two writes of one key in one group
/// apply once.
@Suite struct GroupCommitClaimTests {
    @Test func claimsOfOneGroupCommitGoInTogetherAndFailedWritesLeaveNone() async throws {
        let directory = try TemporaryDirectory()
        let gate = WriterGate()
        var configuration = StoreConfiguration(fullSync: false, onGroupCommit: { gate.hook($0) })
        configuration.migrationsDirectory = migrationsDirectory
        let store = try await SQLiteStore(path: directory.databasePath, configuration: configuration)
        let list = try await store.createList(id: id("l"), name: "", sections: [NewSection(id: id("s"))]).id

        // Hold the writer after one commit, so that every write below queues for the next.
        gate.arm()
        let first = Task { try await store.apply(insert("first"), to: list, expectedVersion: nil) }
        try await waitUntil("the first write committed and the writer waits") { gate.isHolding }
        let count = 70
        let failing = Set(stride(from: 5, to: count, by: 10))
        var writes: [Task<Bool, any Error>] = []
        for index in 0..<count {
            let claim = IdempotencyClaim(caller: "open", key: "k\(index)", fingerprint: "f\(index)")
            // Every third keeps its change with its record: rows with and without one share statements.
            if index % 3 == 0 {
                claim.answer.render { (result: WriteResult) in result.change.map(StoredAnswer.init(change:)) }
            }
            // A stale expected version fails the write in the writer, after the writes before it ran.
            let expected: Int64? = failing.contains(index) ? 1 : nil
            writes.append(
                Task {
                    do {
                        _ = try await IdempotencyClaim.$current.withValue(claim) {
                            try await store.apply(insert("i\(index)"), to: list, expectedVersion: expected)
                        }
                        return true
                    } catch let error as StoreError {
                        guard case .versionMismatch(expected: 1, actual: _) = error.kind else { throw error }
                        return false
                    }
                })
            try await waitUntil("write \(index) is queued") { store.queuedWrites == index + 1 }
        }
        // Two requests with one key in the same group (the service never lets them run together; the store must not care).
        let twice = (0..<2).map { copy in
            Task {
                let claim = IdempotencyClaim(caller: "open", key: "twice", fingerprint: "t")
                do {
                    _ = try await IdempotencyClaim.$current.withValue(claim) {
                        try await store.apply(insert("twice-\(copy)"), to: list, expectedVersion: nil)
                    }
                    return true
                } catch let error as StoreError where error.kind == .idempotencyKeyUsed {
                    return false
                }
            }
        }
        try await waitUntil("every write is queued") { store.queuedWrites == count + 2 }
        let commitsBefore = store.counters.commits
        gate.open()
        _ = try await first.value

        var applied: [String] = []
        for (index, write) in writes.enumerated() {
            let succeeded = try await write.value
            #expect(succeeded == !failing.contains(index), "write \(index)")
            let record = try await store.idempotencyRecord(caller: "open", key: "k\(index)")
            if succeeded {
                applied.append("i\(index)")
                #expect(record?.fingerprint == "f\(index)", "write \(index) applied and keeps its record")
                #expect((record?.answer?.change != nil) == (index % 3 == 0), "write \(index)'s kept change")
            } else {
                #expect(record == nil, "write \(index) failed and left a record")
            }
        }
        let twiceApplied = [try await twice[0].value, try await twice[1].value]
        #expect(twiceApplied.filter { $0 }.count == 1, "one key applied \(twiceApplied)")
        if let copy = twiceApplied.firstIndex(of: true) { applied.append("twice-\(copy)") }
        #expect(try await store.idempotencyRecord(caller: "open", key: "twice")?.fingerprint == "t")
        #expect(store.counters.commits - commitsBefore == 1, "the queued writes were one group commit")

        let snapshot = try await store.snapshot(of: list)
        #expect(snapshot.sections[0].items.map(\.id) == [id("first")] + applied.map { id($0) })
        // A retry of an applied write applies nothing.
        let retry = IdempotencyClaim(caller: "open", key: "k0", fingerprint: "f0")
        let error = await #expect(throws: StoreError.self) {
            try await IdempotencyClaim.$current.withValue(retry) {
                try await store.apply(insert("i0-again"), to: list, expectedVersion: nil)
            }
        }
        #expect(error?.kind == .idempotencyKeyUsed)
        #expect(try await store.snapshot(of: list).version == snapshot.version)
        await store.close()
    }

    private func insert(_ item: String) -> [ListOperation] {
        [.insertItem(section: id("s"), item: NewItem(id: id(item)), at: nil)]
    }
}

/// Migration 0010 moves the SQLite store's records into a rowid table: a
/// store made before it keeps every record, its answer and its key's
/// uniqueness across the upgrade.
@Suite struct IdempotencyUpgradeTests {
    @Test func recordsClaimedBeforeMigration10AreKeptAndTheirKeysStayTaken() async throws {
        let directory = try TemporaryDirectory()
        let before = directory.url.appendingPathComponent("migrations-before-0010")
        try FileManager.default.createDirectory(at: before, withIntermediateDirectories: true)
        for file in try FileManager.default.contentsOfDirectory(atPath: migrationsDirectory.path)
        where file.hasSuffix(".sql") && file < "0010" {
            try FileManager.default.copyItem(
                at: migrationsDirectory.appendingPathComponent(file), to: before.appendingPathComponent(file))
        }
        var old = StoreConfiguration(fullSync: false)
        old.migrationsDirectory = before
        let list = id("upgraded")
        do {
            let store = try await SQLiteStore(path: directory.databasePath, configuration: old)
            _ = try await store.createList(id: list, name: "", sections: [])
            let claim = IdempotencyClaim(caller: "subject a", key: "k1", fingerprint: "f1")
            _ = try await IdempotencyClaim.$current.withValue(claim) {
                try await store.apply(IdempotencyStoreTests.insert("s1"), to: list, expectedVersion: nil)
            }
            let answer = StoredAnswer(
                status: 200, headers: [.init(name: "ETag", value: "\"e-2\"")], body: Array("{}".utf8))
            _ = try await store.recordIdempotentAnswer(claim, answer)
            await store.close()
        }
        var new = StoreConfiguration(fullSync: false)
        new.migrationsDirectory = migrationsDirectory
        let store = try await SQLiteStore(path: directory.databasePath, configuration: new)
        let record = try #require(try await store.idempotencyRecord(caller: "subject a", key: "k1"))
        #expect(record.fingerprint == "f1")
        #expect(record.answer?.status == 200 && record.answer?.body == Array("{}".utf8))
        #expect(record.answer?.headers.first?.value == "\"e-2\"")
        let again = IdempotencyClaim(caller: "subject a", key: "k1", fingerprint: "f1")
        do {
            _ = try await IdempotencyClaim.$current.withValue(again) {
                try await store.apply(IdempotencyStoreTests.insert("s2"), to: list, expectedVersion: nil)
            }
            Issue.record("a key claimed before the upgrade was claimed again")
        } catch let error as StoreError {
            #expect(error.kind == .idempotencyKeyUsed, "\(error)")
        }
        let fresh = IdempotencyClaim(caller: "subject a", key: "k2", fingerprint: "f2")
        _ = try await IdempotencyClaim.$current.withValue(fresh) {
            try await store.apply(IdempotencyStoreTests.insert("s3"), to: list, expectedVersion: nil)
        }
        #expect(try await store.idempotencyRecord(caller: "subject a", key: "k2")?.fingerprint == "f2")
        #expect(try await store.snapshot(of: list).sections.map(\.id) == [id("s1"), id("s3")])
        await store.close()
    }
}
