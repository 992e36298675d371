import Foundation
import ListModel
import ListStore
import ListdTestSupport
import Synchronization
import Testing

/// A store call whose task is cancelled before the store starts it does
/// nothing and fails with `cancelled`; one the store has started runs to its
/// end, and a committed write is answered as committed.
@Suite(.serialized) struct CancellationTests {
    static func open(_ directory: borrowing TemporaryDirectory, gate: WriterGate) async throws -> SQLiteStore {
        var configuration = StoreConfiguration(fullSync: false, onGroupCommit: { gate.hook($0) })
        configuration.migrationsDirectory = migrationsDirectory
        return try await SQLiteStore(path: directory.databasePath, configuration: configuration)
    }

    static func insert(_ item: String) -> [ListOperation] {
        [.insertItem(section: id("s"), item: NewItem(id: id(item)), at: nil)]
    }

    @Test func aQueuedWriteWhoseClientLeftIsNotApplied() async throws {
        let directory = try TemporaryDirectory()
        let gate = WriterGate()
        let store = try await Self.open(directory, gate: gate)
        let list = try await store.createList(id: id("l"), name: "", sections: [NewSection(id: id("s"))]).id

        gate.arm()
        let first = Task { try await store.apply(Self.insert("a"), to: list, expectedVersion: nil) }
        try await waitUntil("the first write committed and the writer waits") { gate.isHolding }
        let second = Task { try await store.apply(Self.insert("b"), to: list, expectedVersion: nil) }
        try await waitUntil("the second write is queued") { store.queuedWrites == 1 }
        second.cancel()
        gate.open()

        let applied = try await first.value
        #expect(applied.version == 2)
        let error = await #expect(throws: StoreError.self) { try await second.value }
        #expect(error?.kind == .cancelled)
        let snapshot = try await store.snapshot(of: list)
        #expect(snapshot.sections[0].items.map(\.id) == [id("a")])
        #expect(snapshot.version == 2)
        // The writer goes on: the next write gets the next version.
        #expect(try await store.apply(Self.insert("c"), to: list, expectedVersion: 2).version == 3)
        await store.close()
    }

    @Test func aWriteTheStoreStartedIsAnsweredAsCommitted() async throws {
        let directory = try TemporaryDirectory()
        let gate = WriterGate()
        let store = try await Self.open(directory, gate: gate)
        let list = try await store.createList(id: id("l"), name: "", sections: [NewSection(id: id("s"))]).id

        gate.arm()
        let write = Task { try await store.apply(Self.insert("a"), to: list, expectedVersion: nil) }
        try await waitUntil("the write committed and the writer waits") { gate.isHolding }
        write.cancel()
        gate.open()
        #expect(try await write.value.version == 2)
        #expect(try await store.snapshot(of: list).sections[0].items.map(\.id) == [id("a")])
        await store.close()
    }

    /// A net-change question runs on a reader thread, never the writer's: with
    /// the writer held after a commit, it is answered from the committed state.
    @Test func aChangeQuestionDoesNotWaitForTheWriter() async throws {
        let directory = try TemporaryDirectory()
        let gate = WriterGate()
        let store = try await Self.open(directory, gate: gate)
        let list = try await store.createList(id: id("l"), name: "", sections: [NewSection(id: id("s"))]).id

        gate.arm()
        let write = Task { try await store.apply(Self.insert("a"), to: list, expectedVersion: nil) }
        try await waitUntil("the write committed and the writer waits") { gate.isHolding }
        let question = Outcome { try await store.changes(of: list, since: 1) }
        var waited: (any Error)?
        do {
            try await waitUntil("the question is answered while the writer waits") { question.isDone }
        } catch { waited = error }
        gate.open()
        if let waited { throw waited }
        guard case .change(let change) = try question.value() else {
            Issue.record("a reset for a version inside the history")
            return
        }
        #expect(change.from == 1 && change.to == 2)
        #expect(try await write.value.version == 2)
        await store.close()
    }
}
