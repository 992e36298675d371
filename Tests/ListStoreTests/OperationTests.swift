import Foundation
import JSON
import ListModel
import ListStore
import Synchronization
import Testing

@Suite struct OperationTests {
    /// groceries: fruit[apple,pear] veg[leek]
    private func makeGroceries(_ store: any Store) async throws -> ListSnapshot {
        try await store.createList(
            id: id("groceries"), name: "Groceries",
            sections: [
                NewSection(
                    id: id("fruit"), model: model(#"{"title":"Fruit"}"#),
                    items: [NewItem(id: id("apple"), model: model(#"{"qty":3}"#)), NewItem(id: id("pear"))]),
                NewSection(id: id("veg"), items: [NewItem(id: id("leek"))]),
            ])
    }

    @Test(arguments: StoreKind.tested) func createReadAndListLists(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let created = try await makeGroceries(store)
            #expect(created.version == 1)
            #expect(created.outline == "fruit[apple,pear] veg[leek]")
            let read = try await store.snapshot(of: id("groceries"))
            #expect(read == created)
            #expect(read.sections[0].model.canonicalText == #"{"title":"Fruit"}"#)
            #expect(try await store.head(of: id("groceries")) == created.head)

            let generated = try await store.createList(id: nil, name: "", sections: [NewSection(items: [NewItem()])])
            #expect(generated.id.rawValue.count == 26)
            #expect(generated.sections[0].items.count == 1)

            let all = try await store.lists(limit: 10, after: nil)
            #expect(all.count == 2)
            let groceries = try #require(all.first { $0.head.id == id("groceries") })
            #expect(groceries.sectionCount == 2 && groceries.itemCount == 3 && groceries.name == "Groceries")
            let page = try await store.lists(limit: 1, after: all[0].head.id)
            #expect(page.map(\.head.id) == [all[1].head.id])
        }
    }

    @Test(arguments: StoreKind.tested) func everyOpChangesTheSnapshotAndBumpsTheVersion(_ kind: StoreKind) async throws
    {
        try await withStore(kind) { store in
            _ = try await makeGroceries(store)
            let list = id("groceries")
            let steps: [(ListOperation, String)] = [
                (
                    .insertSection(NewSection(id: id("dairy"), items: [NewItem(id: id("milk"))]), at: 0),
                    "dairy[milk] fruit[apple,pear] veg[leek]"
                ),
                (
                    .updateSection(id: id("veg"), model: model(#"{"title":"Veg"}"#)),
                    "dairy[milk] fruit[apple,pear] veg[leek]"
                ),
                (.moveSection(id: id("dairy"), to: 2), "fruit[apple,pear] veg[leek] dairy[milk]"),
                (
                    .insertItem(section: id("veg"), item: NewItem(id: id("kale")), at: 0),
                    "fruit[apple,pear] veg[kale,leek] dairy[milk]"
                ),
                (
                    .insertItem(section: id("veg"), item: NewItem(id: id("bean")), at: nil),
                    "fruit[apple,pear] veg[kale,leek,bean] dairy[milk]"
                ),
                (
                    .updateItem(id: id("leek"), model: model(#"{"qty":2}"#)),
                    "fruit[apple,pear] veg[kale,leek,bean] dairy[milk]"
                ),
                (
                    .moveItem(id: id("leek"), section: id("fruit"), to: 2),
                    "fruit[apple,pear,leek] veg[kale,bean] dairy[milk]"
                ),
                (.moveItem(id: id("apple"), section: nil, to: 2), "fruit[pear,leek,apple] veg[kale,bean] dairy[milk]"),
                (.deleteItem(id: id("pear")), "fruit[leek,apple] veg[kale,bean] dairy[milk]"),
                (.deleteSection(id: id("veg")), "fruit[leek,apple] dairy[milk]"),
            ]
            var version: Int64 = 1
            for (op, outline) in steps {
                let result = try await store.apply([op], to: list, expectedVersion: version)
                #expect(result.changed && result.previousVersion == version && result.version == version + 1)
                version += 1
                let snapshot = try await store.snapshot(of: list)
                #expect(snapshot.outline == outline, "after \(op.name)")
                #expect(snapshot.version == version)
            }
            let snapshot = try await store.snapshot(of: list)
            #expect(snapshot.sections[0].items[0].model.canonicalText == #"{"qty":2}"#)
            // Deleting a section deleted its items: their ids are free again.
            _ = try await store.apply(
                [.insertItem(section: id("dairy"), item: NewItem(id: id("kale")), at: 0)], to: list,
                expectedVersion: nil)
        }
    }

    @Test(arguments: StoreKind.tested) func noOpWritesDoNotBumpTheVersion(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let created = try await makeGroceries(store)
            let list = id("groceries")
            let noOps: [ListOperation] = [
                .updateSection(id: id("fruit"), model: model(#"{ "title" : "Fruit" }"#)),
                .updateItem(id: id("apple"), model: model(#"{"qty":3}"#)),
                .moveItem(id: id("pear"), section: nil, to: 1),
                .moveItem(id: id("pear"), section: id("fruit"), to: 1),
                .moveSection(id: id("veg"), to: 1),
            ]
            let result = try await store.apply(noOps, to: list, expectedVersion: 1)
            #expect(!result.changed && result.version == 1)
            let replaced = try await store.replace(
                list, name: "Groceries", sections: created.sections.map(\.asNew), expectedVersion: 1)
            #expect(!replaced.changed && replaced.version == 1)
            #expect(try await store.snapshot(of: list) == created)
        }
    }

    /// A write's result holds the very commit its store announced, with the
    /// recorded change; a write that changed nothing holds none and announces none.
    @Test(arguments: StoreKind.tested) func aWritesResultHoldsTheCommitObserversHear(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let created = try await makeGroceries(store)
            let list = id("groceries")
            let commits = CommitRecorder()
            let subscription = store.onCommit { commits.append($0) }
            defer { subscription.cancel() }
            let applied = try await store.apply([.deleteItem(id: id("pear"))], to: list, expectedVersion: 1)
            let unchanged = try await store.apply([.moveSection(id: id("veg"), to: 1)], to: list, expectedVersion: 2)
            let replaced = try await store.replace(
                list, name: "Groceries", sections: created.sections.map(\.asNew), expectedVersion: 2)
            let appliedCommit = try #require(applied.commit)
            let replacedCommit = try #require(replaced.commit)
            #expect(commits.all == [appliedCommit, replacedCommit])
            #expect(appliedCommit.list == list && appliedCommit.epoch == created.epoch && !appliedCommit.deleted)
            #expect(applied.previousVersion == 1 && applied.version == 2 && appliedCommit.version == 2)
            let change = try #require(applied.change, "the write recorded its net change")
            #expect(change == appliedCommit.change && change.from == 1 && change.to == 2)
            #expect(replaced.previousVersion == 2 && replaced.version == 3 && replaced.change?.to == 3)
            #expect(unchanged.commit == nil && !unchanged.changed && unchanged.change == nil)
            #expect(unchanged.list == list && unchanged.epoch == created.epoch)
            #expect(unchanged.previousVersion == 2 && unchanged.version == 2)
        }
    }

    @Test(arguments: StoreKind.tested) func everyErrorKindIsPreciseAndWritesNothing(_ kind: StoreKind) async throws {
        var configuration = StoreConfiguration(fullSync: false, maxModelBytes: 16, maxNameBytes: 8, maxOpsPerWrite: 4)
        configuration.maxPageSize = 5
        try await withStore(kind, configuration) { store in
            _ = try await store.createList(
                id: id("l"), name: "L",
                sections: [NewSection(id: id("fruit"), items: [NewItem(id: id("apple")), NewItem(id: id("pear"))])])
            let list = id("l")
            let big = model(#"{"text":"much more than sixteen bytes"}"#)
            let cases: [([ListOperation], StoreError.Kind, String)] = [
                ([.deleteItem(id: id("leek"))], .itemNotFound, #"op 0 (deleteItem): item "leek" not found"#),
                (
                    [.deleteItem(id: id("apple")), .moveItem(id: id("leek"), section: nil, to: 0)], .itemNotFound,
                    #"op 1 (moveItem): item "leek" not found"#
                ),
                (
                    [.updateSection(id: id("veg"), model: .emptyObject)], .sectionNotFound,
                    #"op 0 (updateSection): section "veg" not found"#
                ),
                (
                    [.insertItem(section: id("veg"), item: NewItem(id: id("x")), at: nil)], .sectionNotFound,
                    #"op 0 (insertItem): section "veg" not found"#
                ),
                (
                    [.moveItem(id: id("apple"), section: id("veg"), to: 0)], .sectionNotFound,
                    #"op 0 (moveItem): section "veg" not found"#
                ),
                (
                    [.insertItem(section: id("fruit"), item: NewItem(id: id("pear")), at: 0)], .duplicateId,
                    #"op 0 (insertItem): item "pear" already exists"#
                ),
                (
                    [.insertSection(NewSection(id: id("fruit")), at: nil)], .duplicateId,
                    #"op 0 (insertSection): section "fruit" already exists"#
                ),
                (
                    [.insertSection(NewSection(id: id("veg"), items: [NewItem(id: id("apple"))]), at: nil)],
                    .duplicateId,
                    #"op 0 (insertSection): item "apple" already exists"#
                ),
                (
                    [.insertItem(section: id("fruit"), item: NewItem(id: id("kiwi")), at: 7)], .positionOutOfRange,
                    #"op 0 (insertItem): position 7 is out of range 0...2 for section "fruit""#
                ),
                (
                    [.moveItem(id: id("apple"), section: nil, to: 2)], .positionOutOfRange,
                    #"op 0 (moveItem): position 2 is out of range 0...1 for section "fruit""#
                ),
                (
                    [.moveSection(id: id("fruit"), to: 1)], .positionOutOfRange,
                    "op 0 (moveSection): position 1 is out of range 0...0 for sections"
                ),
                (
                    [.insertSection(NewSection(id: id("veg")), at: -1)], .positionOutOfRange,
                    "op 0 (insertSection): position -1 is out of range 0...1 for sections"
                ),
                (
                    [.updateItem(id: id("apple"), model: big)], .modelTooLarge,
                    "op 0 (updateItem): item model has 39 bytes, more than the limit of 16"
                ),
                (
                    Array(repeating: .deleteItem(id: id("apple")), count: 5), .limitExceeded,
                    "a write holds at most 4 ops, this one has 5"
                ),
            ]
            for (ops, kind, detail) in cases {
                let error = await storeError { () async throws(StoreError) in
                    _ = try await store.apply(ops, to: list, expectedVersion: nil)
                }
                #expect(error?.kind == kind, "\(detail)")
                #expect(error?.detail == detail)
            }
            let mismatch = await storeError { () async throws(StoreError) in
                _ = try await store.apply([.deleteItem(id: id("apple"))], to: list, expectedVersion: 5)
            }
            #expect(mismatch?.kind == .versionMismatch(expected: 5, actual: 1))
            #expect(
                await storeError { () async throws(StoreError) in
                    _ = try await store.apply([], to: id("nope"), expectedVersion: nil)
                }?.kind == .listNotFound)
            #expect(
                await storeError { () async throws(StoreError) in
                    _ = try await store.createList(id: list, name: "again", sections: [])
                }?.kind == .listAlreadyExists)
            #expect(
                await storeError { () async throws(StoreError) in
                    _ = try await store.createList(id: nil, name: "far too long", sections: [])
                }?.kind == .invalidName)
            #expect(
                await storeError { () async throws(StoreError) in
                    _ = try await store.createList(
                        id: nil, name: "", sections: [NewSection(id: id("a")), NewSection(id: id("a"))])
                }?.kind == .duplicateId)
            #expect(
                await storeError { () async throws(StoreError) in
                    _ = try await store.replace(
                        list, name: nil,
                        sections: [
                            NewSection(id: id("a"), items: [NewItem(id: id("x"))]),
                            NewSection(id: id("b"), items: [NewItem(id: id("x"))]),
                        ], expectedVersion: nil)
                }?.kind == .duplicateId)
            #expect(
                await storeError { () async throws(StoreError) in
                    _ = try await store.items(of: list, query: ItemQuery(limit: 2, after: "garbage"))
                }?.kind == .invalidCursor)
            #expect(
                await storeError { () async throws(StoreError) in
                    _ = try await store.items(of: list, query: ItemQuery(limit: 6))
                }?.kind == .limitExceeded)
            #expect(
                await storeError { () async throws(StoreError) in
                    _ = try Identifier.validated("a b", field: "section")
                }?.kind == .invalidId)
            #expect(
                await storeError { () async throws(StoreError) in
                    _ = try Model(parsing: Array(#"{"a":}"#.utf8))
                }?.kind == .invalidModel)
            #expect(
                await storeError { () async throws(StoreError) in
                    _ = try Model(
                        parsing: Array(String(repeating: "[", count: 65).utf8)
                            + Array(String(repeating: "]", count: 65).utf8))
                }?.kind == .invalidModel)
            #expect(
                await storeError { () async throws(StoreError) in
                    _ = try Model(parsing: [0x22, 0xFF, 0x22])
                }?.kind == .invalidModel)
            // Nothing above was written.
            let snapshot = try await store.snapshot(of: list)
            #expect(snapshot.version == 1 && snapshot.outline == "fruit[apple,pear]")
        }
    }

    @Test(arguments: StoreKind.tested) func replaceMatchesById(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            _ = try await makeGroceries(store)
            let list = id("groceries")
            let result = try await store.replace(
                list, name: "Shopping",
                sections: [
                    NewSection(
                        id: id("veg"), items: [NewItem(id: id("apple")), NewItem(id: id("leek"), model: model("2"))]),
                    NewSection(id: id("bakery"), items: [NewItem(id: id("bread"))]),
                ], expectedVersion: 1)
            #expect(result.changed && result.version == 2)
            let snapshot = try await store.snapshot(of: list)
            #expect(snapshot.name == "Shopping")
            #expect(snapshot.outline == "veg[apple,leek] bakery[bread]")
            #expect(snapshot.sections[0].items[1].model.canonicalText == "2")
            let old = try await store.snapshots(of: list, at: [1])
            #expect(old.atVersion[1]?.outline == "fruit[apple,pear] veg[leek]")
            #expect(old.atVersion[1]?.name == "Groceries")
        }
    }

    @Test(arguments: StoreKind.tested) func deleteListAndRecreateGetsANewEpoch(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let first = try await makeGroceries(store)
            let commits = CommitRecorder()
            let subscription = store.onCommit { commits.append($0) }
            try await store.deleteList(id("groceries"), expectedVersion: 1)
            #expect(
                await storeError { () async throws(StoreError) in
                    _ = try await store.snapshot(of: id("groceries"))
                }?.kind == .listNotFound)
            let second = try await makeGroceries(store)
            #expect(second.epoch != first.epoch && second.version == 1)
            subscription.cancel()
            _ = try await store.apply([.deleteItem(id: id("leek"))], to: id("groceries"), expectedVersion: nil)
            #expect(
                commits.all == [
                    Commit(list: id("groceries"), epoch: first.epoch, version: 1, deleted: true),
                    Commit(list: id("groceries"), epoch: second.epoch, version: 1, deleted: false),
                ])
        }
    }

    @Test(arguments: StoreKind.tested) func itemsQueryFiltersAndPagesAcrossWrites(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let list = id("l")
            let items = (0..<10).map { index in
                NewItem(
                    id: id("i\(index)"),
                    model: model(#"{"done":\#(index % 2 == 0),"name":"Item \#(index)","tags":["t\#(index % 3)"]}"#))
            }
            _ = try await store.createList(
                id: list, name: "",
                sections: [
                    NewSection(id: id("a"), items: Array(items[0..<5])),
                    NewSection(id: id("b"), items: Array(items[5...])),
                ])
            let done = try await store.items(
                of: list, query: ItemQuery(conditions: [.init(path: ["done"], value: true)], limit: 2))
            #expect(done.entries.map(\.item.id.rawValue) == ["i0", "i2"])
            let cursor = try #require(done.nextCursor)
            // A write between pages (moving the cursor's item past i4) does not
            // break the cursor: the next page resumes at the place the page
            // ended, so i4, which stayed in place, is not skipped, and i2,
            // which moved past that place, comes again.
            _ = try await store.apply([.moveItem(id: id("i2"), section: nil, to: 4)], to: list, expectedVersion: nil)
            let next = try await store.items(
                of: list, query: ItemQuery(conditions: [.init(path: ["done"], value: true)], limit: 10, after: cursor))
            #expect(next.entries.map(\.item.id.rawValue) == ["i4", "i2", "i6", "i8"])
            #expect(next.nextCursor == nil)
            let tagged = try await store.items(
                of: list, query: ItemQuery(section: id("b"), conditions: [.init(path: ["tags", "0"], value: "t0")]))
            #expect(tagged.entries.map(\.item.id.rawValue) == ["i6", "i9"])
            #expect(tagged.entries.allSatisfy { $0.section == id("b") })
            let text = try await store.items(of: list, query: ItemQuery(text: "ITEM 7"))
            #expect(text.entries.map(\.item.id.rawValue) == ["i7"])
            #expect(
                await storeError { () async throws(StoreError) in
                    _ = try await store.items(of: list, query: ItemQuery(section: id("zzz")))
                }?.kind == .sectionNotFound)
        }
    }

    @Test func aSecondStoreOnTheSameFileIsRefusedUntilTheFirstCloses() async throws {
        let directory = try TemporaryDirectory()
        let configuration = StoreConfiguration(migrationsDirectory: migrationsDirectory, fullSync: false)
        let first = try await SQLiteStore(path: directory.databasePath, configuration: configuration)
        let refusal = await storeError { () async throws(StoreError) in
            let second = try await SQLiteStore(path: directory.databasePath, configuration: configuration)
            await second.close()
        }
        #expect(refusal?.kind == .storageFailure)
        #expect(refusal?.detail.contains(directory.databasePath) == true)
        #expect(refusal?.detail.contains("in use by process \(getpid())") == true)
        _ = try await first.createList(id: id("still-served"), name: "", sections: [])
        await first.close()
        let reopened = try await SQLiteStore(path: directory.databasePath, configuration: configuration)
        #expect(try await reopened.head(of: id("still-served")).version == 1)
        await reopened.close()
    }

    @Test func storeOpensWithTheRealMigrationsTwice() async throws {
        let directory = try TemporaryDirectory()
        let configuration = StoreConfiguration(migrationsDirectory: migrationsDirectory, fullSync: false)
        let first = try await SQLiteStore(path: directory.databasePath, configuration: configuration)
        _ = try await first.createList(id: id("kept"), name: "", sections: [])
        await first.close()
        let second = try await SQLiteStore(path: directory.databasePath, configuration: configuration)
        #expect(try await second.head(of: id("kept")).version == 1)
        let check = try await second.integrityCheck()
        #expect(check.isEmpty)
        await second.close()
        #expect(
            await storeError { () async throws(StoreError) in
                _ = try await second.head(of: id("kept"))
            }?.kind == .closed)
    }
}

extension SectionSnapshot {
    var asNew: NewSection {
        NewSection(id: id, model: model, items: items.map { NewItem(id: $0.id, model: $0.model) })
    }
}

/// Collects commits from the writer thread for a test to read.
final class CommitRecorder: Sendable {
    private let commits = Mutex<[Commit]>([])
    func append(_ commit: Commit) { commits.withLock { $0.append(commit) } }
    var all: [Commit] { commits.withLock { $0 } }
}
