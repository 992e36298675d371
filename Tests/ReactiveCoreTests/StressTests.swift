import Foundation
import ListdTestSupport
import Synchronization
import Testing

@testable import ReactiveCore

/// Concurrency stress; `LISTD_LONG_TESTS=1` makes it ten times bigger.
@Suite struct StressTests {
    static let scale = ProcessInfo.processInfo.environment["LISTD_LONG_TESTS"] == "1" ? 10 : 1

    struct Tagged: Sendable {
        let emitter: Int
        let sequence: Int
    }

    /// Records one observer's events and checks, as they arrive, that deliveries
    /// never overlap and nothing follows a terminal event.
    final class CheckingObserver: ObserverType {
        private let inFlight = Atomic<Int>(0)
        private let violations = Atomic<Int>(0)
        private let log = Mutex<[Event<Tagged>]>([])

        var events: [Event<Tagged>] { log.withLock { $0 } }
        var violationCount: Int { violations.load(ordering: .relaxed) }

        func on(_ event: Event<Tagged>) {
            if inFlight.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue != 1 {
                violations.wrappingAdd(1, ordering: .relaxed)
            }
            log.withLock { log in
                if log.last?.isStopEvent == true { violations.wrappingAdd(1, ordering: .relaxed) }
                log.append(event)
            }
            inFlight.wrappingSubtract(1, ordering: .acquiringAndReleasing)
        }

        /// Elements from each emitter arrive in increasing sequence order without duplicates.
        var perEmitterOrderHolds: Bool {
            var last: [Int: Int] = [:]
            for case .next(let tagged) in events {
                if let previous = last[tagged.emitter], previous >= tagged.sequence { return false }
                last[tagged.emitter] = tagged.sequence
            }
            return true
        }
    }

    @Test func publishSubjectUnderConcurrentEmittersAndChurningSubscribers() async throws {
        let emitters = 4
        let perEmitter = 2_000 * Self.scale
        let subject = PublishSubject<Tagged>()
        let permanent = (0..<32).map { _ in CheckingObserver() }
        for observer in permanent { _ = subject.subscribe(observer) }
        let churned = Mutex<[CheckingObserver]>([])
        let running = Atomic<Bool>(true)

        let group = onThreads(2) { churner in
            var round = 0
            while running.load(ordering: .relaxed) || round < 10 {
                let observer = CheckingObserver()
                let subscription = subject.subscribe(observer)
                if (round + churner) % 3 == 0 { Thread.sleep(forTimeInterval: 0.0001) }
                subscription.dispose()
                churned.withLock { $0.append(observer) }
                round += 1
            }
        }
        let emitting = onThreads(emitters) { emitter in
            for sequence in 0..<perEmitter {
                subject.onNext(Tagged(emitter: emitter, sequence: sequence))
            }
        }
        try await blocking { emitting.wait() }
        running.store(false, ordering: .relaxed)
        // Waited for on a thread of its own: blocking here would hold one of
        // Swift's cooperative threads (two on a two-core machine) from every other suite.
        try await blocking { group.wait() }
        subject.onCompleted()
        subject.onNext(Tagged(emitter: -1, sequence: 0))

        for observer in permanent {
            let events = observer.events
            #expect(observer.violationCount == 0)
            #expect(events.count == emitters * perEmitter + 1)
            #expect(events.last?.isCompleted == true)
            #expect(observer.perEmitterOrderHolds)
        }
        let others = churned.withLock { $0 }
        #expect(others.count >= 20)
        for observer in others {
            #expect(observer.violationCount == 0)
            #expect(obeysGrammar(observer.events))
            #expect(observer.perEmitterOrderHolds)
        }
        #expect(!subject.hasObservers)
    }

    // The emitting runs on threads of its own (`onThreads`, waited for in
    // `blocking`), not on the cooperative thread running the test, nor on
    // Dispatch's global queue or `concurrentPerform`: on Linux those share their
    // worker threads with Swift's cooperative pool, and seconds of CPU there held
    // the pool's two threads from every other suite (stack samples of a full
    // run showed both in this test while other suites' 10 s deadlines passed).

    @Test func createSerializesConcurrentEmission() async throws {
        let emitters = 4
        let perEmitter = 2_000 * Self.scale
        let observer = CheckingObserver()
        let source = Observable<Tagged>.create { sink in
            onThreads(emitters) { emitter in
                for sequence in 0..<perEmitter { sink.onNext(Tagged(emitter: emitter, sequence: sequence)) }
                if emitter == 0 { sink.onCompleted() }
            }.wait()
            return Disposables.create()
        }
        try await blocking { _ = source.subscribe(observer) }
        let events = observer.events
        #expect(observer.violationCount == 0)
        #expect(obeysGrammar(events))
        #expect(events.last?.isCompleted == true)
        #expect(observer.perEmitterOrderHolds)
        #expect(events.count >= perEmitter + 1)
    }

    @Test func mergeAndShareUnderConcurrentSources() async throws {
        let perSource = 2_000 * Self.scale
        let subjects = (0..<4).map { _ in PublishSubject<Tagged>() }
        let merged = Observable.merge(subjects.map { $0.asObservable() }).share()
        let observers = (0..<8).map { _ in CheckingObserver() }
        for observer in observers { _ = merged.subscribe(observer) }
        let emitting = onThreads(subjects.count) { index in
            for sequence in 0..<perSource { subjects[index].onNext(Tagged(emitter: index, sequence: sequence)) }
            subjects[index].onCompleted()
        }
        try await blocking { emitting.wait() }
        for observer in observers {
            #expect(observer.violationCount == 0)
            #expect(observer.events.count == subjects.count * perSource + 1)
            #expect(observer.events.last?.isCompleted == true)
            #expect(observer.perEmitterOrderHolds)
        }
    }

    @Test func disposingFromManyThreadsIsSafeAndIdempotent() async throws {
        let subject = PublishSubject<Int>()
        let disposals = Counter()
        let subscriptions = (0..<200).map { _ in
            subject.subscribe(onNext: { _ in }, onDisposed: { disposals.increment() })
        }
        let disposing = onThreads(4) { worker in
            for (index, subscription) in subscriptions.enumerated() where index % 2 == worker % 2 {
                subscription.dispose()
            }
            subject.onNext(worker)
        }
        try await blocking { disposing.wait() }
        #expect(disposals.count == 200)
        #expect(!subject.hasObservers)
    }
}

/// Runs `body(0..<count)` on `count` threads of their own; the group is left when all have returned.
private func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) -> DispatchGroup {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread.detachNewThread {
            body(index)
            group.leave()
        }
    }
    return group
}
