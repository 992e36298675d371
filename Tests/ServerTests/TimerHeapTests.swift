import ListdTestSupport
import Testing

@testable import Server

@Suite struct TimerHeapTests {
    @Test func popsInDeadlineOrder() {
        var heap = TimerHeap()
        heap.schedule(3, at: 30)
        heap.schedule(1, at: 10)
        heap.schedule(2, at: 20)
        #expect(heap.nextDeadline == 10)
        #expect(heap.popExpired(now: 25) == 1)
        #expect(heap.popExpired(now: 25) == 2)
        #expect(heap.popExpired(now: 25) == nil)
        #expect(heap.count == 1)
    }

    @Test func reschedulingMovesTheOneEntry() {
        var heap = TimerHeap()
        heap.schedule(0, at: 100)
        heap.schedule(0, at: 5)
        heap.schedule(0, at: 50)
        #expect(heap.count == 1)
        #expect(heap.deadline(of: 0) == 50)
        heap.cancel(0)
        #expect(heap.count == 0)
        #expect(heap.popExpired(now: .max) == nil)
    }

    /// Random schedule/cancel/pop sequences against a dictionary model.
    @Test func matchesAModel() {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("TimerHeapTests.matchesAModel seed \(seed)")
        var random = SeededGenerator(seed: seed)
        for _ in 0..<200 {
            var heap = TimerHeap()
            var model: [Int: UInt64] = [:]
            var now: UInt64 = 0
            for _ in 0..<300 {
                switch random.next() % 4 {
                case 0, 1:
                    let slot = Int(random.next() % 40)
                    let deadline = now + random.next() % 100
                    heap.schedule(slot, at: deadline)
                    model[slot] = deadline
                case 2:
                    let slot = Int(random.next() % 40)
                    heap.cancel(slot)
                    model[slot] = nil
                default:
                    now += random.next() % 30
                    var popped: [Int] = []
                    var previous: UInt64 = 0
                    while let slot = heap.popExpired(now: now) {
                        let deadline = model[slot] ?? .max
                        #expect(deadline <= now, "seed \(seed)")
                        #expect(previous <= deadline, "seed \(seed)")
                        previous = deadline
                        popped.append(slot)
                    }
                    let expected = Set(model.filter { $0.value <= now }.keys)
                    #expect(Set(popped) == expected, "seed \(seed)")
                    for slot in popped { model[slot] = nil }
                }
                #expect(heap.count == model.count, "seed \(seed)")
                #expect(heap.nextDeadline == model.values.min(), "seed \(seed)")
            }
        }
    }
}
