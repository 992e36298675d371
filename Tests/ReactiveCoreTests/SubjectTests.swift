import Synchronization
import Testing

@testable import ReactiveCore

@Suite struct SubjectTests {
    @Test func publishDeliversOnlyLaterEventsToLateSubscribers() {
        let subject = PublishSubject<Int>()
        let early = EventLog<Int>()
        let late = EventLog<Int>()
        _ = subject.subscribe(early)
        subject.onNext(1)
        _ = subject.subscribe(late)
        subject.onNext(2)
        subject.onCompleted()
        subject.onNext(3)
        #expect(early.events == [.next(1), .next(2), .completed])
        #expect(late.events == [.next(2), .completed])

        let afterEnd = EventLog<Int>()
        _ = subject.subscribe(afterEnd)
        #expect(afterEnd.events == [.completed])
        #expect(!subject.hasObservers)
    }

    @Test func publishStopsDeliveringToADisposedObserver() {
        let subject = PublishSubject<Int>()
        let log = EventLog<Int>()
        let subscription = subject.subscribe(log)
        subject.onNext(1)
        subscription.dispose()
        subject.onNext(2)
        #expect(log.events == [.next(1)])
        #expect(subject.observerCount == 0)
    }

    @Test func reentrantEmissionIsDeliveredAfterTheCurrentEventToEveryone() {
        let subject = PublishSubject<Int>()
        let first = EventLog<Int>()
        let second = EventLog<Int>()
        _ = subject.subscribe(onNext: { value in
            first.onNext(value)
            if value == 1 { subject.onNext(2) }
        })
        _ = subject.subscribe(second)
        subject.onNext(1)
        // The second observer gets 1 before 2 although 2 was sent during 1's delivery.
        #expect(first.elements == [1, 2])
        #expect(second.elements == [1, 2])
    }

    @Test func reentrantSubscribeAndCompleteKeepTheGrammar() {
        let subject = PublishSubject<Int>()
        let inner = EventLog<Int>()
        let outer = EventLog<Int>()
        _ = subject.subscribe(
            onNext: { value in
                outer.onNext(value)
                if value == 1 {
                    _ = subject.subscribe(inner)
                    subject.onCompleted()
                    subject.onNext(99)
                }
            }, onCompleted: { outer.onCompleted() })
        subject.onNext(1)
        #expect(outer.events == [.next(1), .completed])
        #expect(inner.events == [.completed])
    }

    @Test func behaviorReplaysTheCurrentValue() throws {
        let subject = BehaviorSubject(value: 1)
        let log = EventLog<Int>()
        #expect(try subject.value() == 1)
        subject.onNext(2)
        _ = subject.subscribe(log)
        subject.onNext(3)
        #expect(log.elements == [2, 3])
        #expect(try subject.value() == 3)
        subject.onError(TestError())
        #expect(throws: ReactiveError.self) { try subject.value() }
        let late = EventLog<Int>()
        _ = subject.subscribe(late)
        #expect(late.events == [.next(3), .error(TestError())])
    }

    @Test func replayKeepsABoundedBuffer() {
        let subject = ReplaySubject<Int>(bufferSize: 2)
        for value in 1...5 { subject.onNext(value) }
        let log = EventLog<Int>()
        _ = subject.subscribe(log)
        #expect(log.elements == [4, 5])
        subject.onCompleted()
        let late = EventLog<Int>()
        _ = subject.subscribe(late)
        #expect(late.events == [.next(4), .next(5), .completed])
    }

    @Test func replayToASubscriberAddedDuringDeliveryIsNeitherDuplicatedNorSkipped() {
        let subject = ReplaySubject<Int>(bufferSize: 10)
        let late = EventLog<Int>()
        _ = subject.subscribe(onNext: { value in
            if value == 1 {
                _ = subject.subscribe(late)
                subject.onNext(2)
            }
        })
        subject.onNext(1)
        subject.onNext(3)
        #expect(late.elements == [1, 2, 3])
    }
}
