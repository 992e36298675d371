import Foundation
import ListdTestSupport
import Synchronization
import Testing

@testable import ReactiveCore

@Suite struct PropertyTests {
    @Test func mutablePropertyProducerStartsWithTheCurrentValue() {
        let property = MutableProperty(1)
        let producer = EventLog<Int>()
        let signal = EventLog<Int>()
        _ = property.producer.subscribe(producer)
        _ = property.signal.subscribe(signal)
        property.value = 2
        property.value = 3
        #expect(producer.elements == [1, 2, 3])
        #expect(signal.elements == [2, 3])
        #expect(property.value == 3)
    }

    @Test func modifyIsAtomicAcrossThreads() {
        let property = MutableProperty(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<500 { property.modify { $0 += 1 } }
        }
        #expect(property.value == 4000)
    }

    @Test func observersCompleteWhenThePropertyIsReleased() {
        var property: MutableProperty<Int>? = MutableProperty(1)
        let log = EventLog<Int>()
        _ = property?.producer.subscribe(log)
        property = nil
        #expect(log.events == [.next(1), .completed])
    }

    @Test func readOnlyPropertyFollowsItsSource() {
        let subject = PublishSubject<Int>()
        let property = Property(initial: 0, then: subject)
        let log = EventLog<Int>()
        _ = property.producer.subscribe(log)
        subject.onNext(5)
        #expect(property.value == 5)
        #expect(log.elements == [0, 5])
        let constant = Property(value: "x")
        #expect(constant.value == "x")
        let mutable = MutableProperty(1)
        let view = Property(mutable)
        mutable.value = 2
        #expect(view.value == 2)
    }
}

@Suite struct ObservableCollectionTests {
    @Test func mutationsEmitGroupedChanges() {
        let collection = ObservableCollection([1, 2, 3])
        let changes = EventLog<CollectionChange<Int>>()
        _ = collection.changes.subscribe(changes)
        collection.append(4)
        collection.remove(at: 0)
        collection.move(from: 0, to: 2)
        let described = changes.elements.map { "\($0)" }
        #expect(
            described == [
                "beginUpdates", "insert(4, at: 3)", "endUpdates",
                "beginUpdates", "delete(1, at: 0)", "endUpdates",
                "beginUpdates", "move(from: 0, to: 2)", "endUpdates",
            ])
        #expect(collection.array == [3, 4, 2])
    }

    @Test func elementsStartsWithTheCurrentArray() {
        let collection = ObservableCollection(["a"])
        let log = EventLog<[String]>()
        _ = collection.elements.subscribe(log)
        collection.append("b")
        collection.removeAll()
        collection.removeAll()
        #expect(log.elements == [["a"], ["a", "b"], []])
    }

    /// Replaying every group on a copy of the old array must give the new array.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5])
    func replayingChangesReproducesTheArray(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let collection = ObservableCollection<Int>()
        let mirror = Mutex<[Int]>([])
        let consistent = Atomic<Bool>(true)
        _ = collection.changes.subscribe(onNext: { change in
            mirror.withLock { if !change.apply(to: &$0) { consistent.store(false, ordering: .relaxed) } }
        })
        for step in 0..<400 {
            let count = collection.count
            switch random.next() % 7 {
            case 0: collection.append(step)
            case 1: collection.insert(step, at: Int(random.next() % UInt64(count + 1)))
            case 2 where count > 0: collection.remove(at: Int(random.next() % UInt64(count)))
            case 3 where count > 0: collection[Int(random.next() % UInt64(count))] = step
            case 4 where count > 1:
                collection.move(from: Int(random.next() % UInt64(count)), to: Int(random.next() % UInt64(count)))
            case 5:
                let lower = Int(random.next() % UInt64(count + 1))
                let upper = lower + Int(random.next() % UInt64(count - lower + 1))
                let replacement = (0..<Int(random.next() % 4)).map { step * 10 + $0 }
                collection.replace(subrange: lower..<upper, with: replacement)
            case 6 where random.next() % 10 == 0: collection.removeAll()
            default: collection.append(contentsOf: [step, step + 1])
            }
            #expect(mirror.withLock { $0 } == collection.array, "seed \(seed) step \(step)")
        }
        let wasConsistent = consistent.load(ordering: .relaxed)
        #expect(wasConsistent, "seed \(seed)")
    }

    @Test func concurrentMutationsKeepGroupsWhole() {
        let collection = ObservableCollection<Int>()
        let depth = Mutex(0)
        let wellNested = Atomic<Bool>(true)
        _ = collection.changes.subscribe(onNext: { change in
            depth.withLock { depth in
                switch change {
                case .beginUpdates:
                    if depth != 0 { wellNested.store(false, ordering: .relaxed) }
                    depth += 1
                case .endUpdates: depth -= 1
                default: if depth != 1 { wellNested.store(false, ordering: .relaxed) }
                }
            }
        })
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for value in 0..<250 { collection.append(contentsOf: [worker, value]) }
        }
        let nested = wellNested.load(ordering: .relaxed)
        #expect(nested)
        #expect(collection.count == 2000)
    }
}
