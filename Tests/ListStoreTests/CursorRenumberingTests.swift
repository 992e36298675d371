import Foundation
import JSON
import ListModel
import ListStore
import Testing

/// Item-query cursors across renumberings of the sibling groups they point
/// into, cursors of the first format, and cursors whose renumbering record
/// was pruned, on both stores.
@Suite struct CursorRenumberingTests {
    /// A gap of 4: three inserts between two neighbours renumber their group.
    static let configuration = StoreConfiguration(fullSync: false, positionGap: 4)

    static func section(_ name: String, _ items: Range<Int>) -> NewSection {
        NewSection(id: id(name), items: items.map { NewItem(id: id("\(name)i\($0)")) })
    }

    static func ids(_ page: ItemPage) -> [String] { page.entries.map(\.item.id.rawValue) }

    @Test(arguments: StoreKind.tested)
    func aWalkAcrossARenumberingOfItsSectionNeitherRepeatsNorSkips(_ kind: StoreKind) async throws {
        try await withStore(kind, Self.configuration) { store in
            let list = id("l")
            _ = try await store.createList(id: list, name: "", sections: [Self.section("a", 0..<10)])
            let first = try await store.items(of: list, query: ItemQuery(limit: 3))
            #expect(Self.ids(first) == ["ai0", "ai1", "ai2"])
            // Between ai0 and ai1 (keys 4 and 8): 6, 5, then no key fits and
            // the section is renumbered, ai1 and ai2 onto larger keys.
            for n in 0..<3 {
                _ = try await store.apply(
                    [.insertItem(section: id("a"), item: NewItem(id: id("new\(n)")), at: 1)], to: list,
                    expectedVersion: nil)
            }
            let second = try await store.items(of: list, query: ItemQuery(limit: 3, after: first.nextCursor))
            #expect(Self.ids(second) == ["ai3", "ai4", "ai5"])
        }
    }

    @Test(arguments: StoreKind.tested)
    func aWalkAcrossARenumberingOfTheSectionsNeitherRepeatsNorSkips(_ kind: StoreKind) async throws {
        try await withStore(kind, Self.configuration) { store in
            let list = id("l")
            _ = try await store.createList(
                id: list, name: "",
                sections: [Self.section("a", 0..<2), Self.section("b", 0..<4), Self.section("c", 0..<2)])
            let first = try await store.items(of: list, query: ItemQuery(limit: 4))
            #expect(Self.ids(first) == ["ai0", "ai1", "bi0", "bi1"])
            // Sections between a and b until the sections are renumbered, and
            // items between bi0 and bi1 until b's items are too.
            for n in 0..<3 {
                _ = try await store.apply(
                    [.insertSection(NewSection(id: id("s\(n)")), at: 1)], to: list, expectedVersion: nil)
                _ = try await store.apply(
                    [.insertItem(section: id("b"), item: NewItem(id: id("x\(n)")), at: 1)], to: list,
                    expectedVersion: nil)
            }
            let second = try await store.items(of: list, query: ItemQuery(limit: 10, after: first.nextCursor))
            #expect(Self.ids(second) == ["bi2", "bi3", "ci0", "ci1"])
            // The cursor's own item moved away, then its group renumbered:
            // the walk goes on after the place it left (after bi1, which was
            // before it), not after that key in the new numbering.
            let third = try await store.items(of: list, query: ItemQuery(limit: 1, after: first.nextCursor))
            #expect(Self.ids(third) == ["bi2"])
            _ = try await store.apply(
                [.moveItem(id: id("bi2"), section: id("c"), to: 0)], to: list, expectedVersion: nil)
            for n in 0..<3 {
                _ = try await store.apply(
                    [.insertItem(section: id("b"), item: NewItem(id: id("z\(n)")), at: 1)], to: list,
                    expectedVersion: nil)
            }
            let rest = try await store.items(of: list, query: ItemQuery(limit: 10, after: third.nextCursor))
            #expect(Self.ids(rest) == ["bi3", "bi2", "ci0", "ci1"])
        }
    }

    @Test(arguments: StoreKind.tested)
    func aCursorOfTheFirstFormatIsStillHonoured(_ kind: StoreKind) async throws {
        try await withStore(kind, StoreConfiguration(fullSync: false)) { store in
            let list = id("l")
            _ = try await store.createList(
                id: list, name: "", sections: [Self.section("a", 0..<3), Self.section("b", 0..<2)])
            // `<section key>.<item key>.<item id>`: the first section and item have key 2^32.
            let old = "\(1 << 32).\(2 << 32).ai1"
            let page = try await store.items(of: list, query: ItemQuery(limit: 2, after: old))
            #expect(Self.ids(page) == ["ai2", "bi0"])
            let next = try await store.items(of: list, query: ItemQuery(limit: 5, after: page.nextCursor))
            #expect(Self.ids(next) == ["bi1"])
        }
    }

    @Test(arguments: StoreKind.tested)
    func aCursorOlderThanAPrunedRenumberingIsRefused(_ kind: StoreKind) async throws {
        var configuration = Self.configuration
        configuration.historyVersions = 2
        try await withStore(kind, configuration) { store in
            let list = id("l")
            _ = try await store.createList(id: list, name: "", sections: [Self.section("a", 0..<4)])
            let first = try await store.items(of: list, query: ItemQuery(limit: 1))
            for n in 0..<3 {
                _ = try await store.apply(
                    [.insertItem(section: id("a"), item: NewItem(id: id("new\(n)")), at: 1)], to: list,
                    expectedVersion: nil)
            }
            // Still recorded: followed exactly.
            #expect(
                Self.ids(try await store.items(of: list, query: ItemQuery(limit: 1, after: first.nextCursor))) == [
                    "new2"
                ])
            for n in 0..<12 {
                _ = try await store.apply(
                    [.updateItem(id: id("ai3"), model: model("\(n)"))], to: list, expectedVersion: nil)
            }
            let error = await storeError { () throws(StoreError) in
                _ = try await store.items(of: list, query: ItemQuery(limit: 1, after: first.nextCursor))
            }
            #expect(error?.kind == .invalidCursor)
            #expect(error?.detail.contains("renumbered") == true, "\(String(describing: error))")
            // A cursor made after it is fine.
            let fresh = try await store.items(of: list, query: ItemQuery(limit: 2))
            #expect(
                Self.ids(try await store.items(of: list, query: ItemQuery(limit: 9, after: fresh.nextCursor))).count
                    == 5)
        }
    }
}
