import Foundation
import ListModel
import ListStore
import Testing

@testable import PostgresStore

/// ``PublishOrder`` on its own: a session's commits wait for this instance's
/// earlier registered versions of the same list, not for later ones, other
/// lists, or commits already published.
@Suite struct PublishOrderTests {
    static let list = Identifier("groceries")
    static let other = Identifier("todo")

    static func commit(_ list: Identifier, _ version: Int64) -> Commit {
        Commit(list: list, epoch: "e", version: version, deleted: false)
    }

    @Test func laterVersionsAndOtherListsDoNotWait() {
        let order = PublishOrder(patience: 30)
        order.register([Self.commit(Self.list, 7)])
        // A later version of another list, and an earlier version than any registered.
        #expect(order.waitForEarlier([Self.commit(Self.other, 9)]) == false)
        #expect(order.waitForEarlier([Self.commit(Self.list, 7)]) == false)
        #expect(order.waitForEarlier([Self.commit(Self.list, 3)]) == false)
    }

    @Test func aBatchDoesNotWaitForItsOwnCommits() {
        let order = PublishOrder(patience: 30)
        let batch = [Self.commit(Self.list, 7), Self.commit(Self.other, 2), Self.commit(Self.list, 8)]
        order.register(batch)
        #expect(order.waitForEarlier(batch) == false)
    }

    @Test func anUnpublishedEarlierVersionIsWaitedFor() {
        let order = PublishOrder(patience: 0.05)
        order.register([Self.commit(Self.list, 7)])
        // Nobody publishes 7: the wait gives up and says so.
        #expect(order.waitForEarlier([Self.commit(Self.list, 8)]) == true)
        order.unregister([Self.commit(Self.list, 7)])
        #expect(order.waitForEarlier([Self.commit(Self.list, 8)]) == false)
    }

    @Test func aWaitEndsWhenTheEarlierCommitIsPublished() async {
        let order = PublishOrder(patience: 60)
        order.register([Self.commit(Self.list, 7), Self.commit(Self.list, 8)])
        let waited = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            Thread {
                continuation.resume(returning: order.waitForEarlier([Self.commit(Self.list, 9)]))
            }.start()
            // Published in two steps, from another thread than the waiter's.
            Thread {
                order.unregister([Self.commit(Self.list, 7)])
                order.unregister([Self.commit(Self.list, 8)])
            }.start()
        }
        #expect(waited == false)
    }
}
