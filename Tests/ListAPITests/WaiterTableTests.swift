import ListdTestSupport
import Testing

@testable import ListAPI

@Suite struct WaiterTableTests {
    @Test func aCommitWakesOnlyItsOwnListsWaitersBelowTheNewVersion() {
        var table = WaiterTable<String>()
        let a5 = table.park(watches: ["a": 5], deadline: 100, payload: "a5")
        let a5bis = table.park(watches: ["a": 5], deadline: 100, payload: "a5bis")
        _ = table.park(watches: ["a": 6], deadline: 100, payload: "a6")
        _ = table.park(watches: ["b": 5], deadline: 100, payload: "b5")

        let woken = table.wake(list: "a", version: 6)
        #expect(woken.count == 1)
        #expect(woken.first?.since == 5)
        #expect(woken.first?.waiters.map(\.id) == [a5, a5bis])
        #expect(table.count == 2)
        #expect(table.isWatched("a"))
        #expect(table.wake(list: "a", version: 6).isEmpty)
        #expect(table.wake(list: "a", version: 7).first?.waiters.map(\.payload) == ["a6"])
        #expect(!table.isWatched("a"))
    }

    @Test func aWaiterOnSeveralListsIsWokenOnceAndLeavesEveryGroup() {
        var table = WaiterTable<String>()
        let many = table.park(watches: ["a": 1, "b": 2], deadline: 50, payload: "many")
        #expect(table.wake(list: "b", version: 3).first?.waiters.map(\.id) == [many])
        #expect(table.wake(list: "a", version: 9).isEmpty)
        #expect(table.count == 0)
        #expect(!table.isWatched("a") && !table.isWatched("b"))
    }

    @Test func removedWaitersNeitherWakeNorExpire() {
        var table = WaiterTable<String>()
        let id = table.park(watches: ["a": 1], deadline: 10, payload: "gone")
        #expect(table.remove(id)?.payload == "gone")
        #expect(table.remove(id) == nil)
        #expect(table.wake(list: "a", version: 2).isEmpty)
        #expect(table.expire(through: 100).isEmpty)
    }

    @Test func expiryTakesExactlyTheDueWaitersInParkingOrder() {
        var table = WaiterTable<Int>()
        let first = table.park(watches: ["a": 1], deadline: 10, payload: 1)
        let second = table.park(watches: ["b": 1], deadline: 10, payload: 2)
        let later = table.park(watches: ["a": 1], deadline: 20, payload: 3)
        #expect(table.expire(through: 9).isEmpty)
        #expect(table.expire(through: 10).map(\.id) == [first, second])
        #expect(table.count == 1)
        #expect(table.expire(through: 19).isEmpty)
        #expect(table.expire(through: 25).map(\.id) == [later])
    }

    @Test func deletingAListTakesAllItsWaiters() {
        var table = WaiterTable<Int>()
        _ = table.park(watches: ["a": 1], deadline: 10, payload: 1)
        _ = table.park(watches: ["a": 4], deadline: 10, payload: 2)
        _ = table.park(watches: ["b": 4], deadline: 10, payload: 3)
        #expect(table.removeAll(watching: "a").map(\.payload) == [1, 2])
        #expect(table.removeAll().map(\.payload) == [3])
        #expect(table.count == 0)
    }

    @Test func randomOperationsKeepTheIndexesConsistent() {
        var generator = SeededGenerator(seed: 0x5EED)
        var table = WaiterTable<Int>()
        var live: [UInt64: [String: Int64]] = [:]
        let lists = ["a", "b", "c"]
        for step in 0..<5_000 {
            switch generator.next() % 4 {
            case 0, 1:
                var watches: [String: Int64] = [:]
                for list in lists where generator.next() % 2 == 0 { watches[list] = Int64(generator.next() % 5) }
                if watches.isEmpty { watches["a"] = 0 }
                let id = table.park(watches: watches, deadline: UInt64(step) + generator.next() % 50, payload: step)
                live[id] = watches
            case 2:
                let list = lists[Int(generator.next() % 3)]
                let version = Int64(generator.next() % 6)
                for group in table.wake(list: list, version: version) {
                    for waiter in group.waiters {
                        #expect(live.removeValue(forKey: waiter.id)?[list] == group.since)
                        #expect(group.since < version)
                    }
                }
                #expect(!live.values.contains { ($0[list] ?? .max) < version })
            default:
                for waiter in table.expire(through: UInt64(step)) {
                    #expect(waiter.deadline <= UInt64(step))
                    #expect(live.removeValue(forKey: waiter.id) != nil)
                }
            }
            #expect(table.count == live.count)
        }
    }
}
