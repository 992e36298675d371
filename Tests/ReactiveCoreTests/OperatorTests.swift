import ReactiveTesting
import Synchronization
import Testing

@testable import ReactiveCore

typealias R = Recorded<Event<Int>>

@Suite struct TransformOperatorTests {
    @Test func mapTransformsAndForwardsTerminals() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(150, 1), .next(210, 2), .next(220, 3), .completed(300)] as [R])
        let result = scheduler.start { xs.map { $0 * 10 } }
        #expect(result.events == [.next(210, 20), .next(220, 30), .completed(300)])
        #expect(xs.subscriptions == [Subscription(200, 300)])
    }

    @Test func mapThatThrowsFailsOnceAndUnsubscribes() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .next(220, 2), .next(230, 3), .completed(300)] as [R])
        let result = scheduler.start {
            xs.map { value -> Int in
                if value == 2 { throw TestError(2) }
                return value
            }
        }
        #expect(result.events == [.next(210, 1), .error(220, TestError(2))])
        #expect(xs.subscriptions == [Subscription(200, 220)])
    }

    @Test func mapDisposedMidStream() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .next(220, 2), .next(240, 3)] as [R])
        let result = scheduler.start(disposed: 230) { xs.map { $0 + 1 } }
        #expect(result.events == [.next(210, 2), .next(220, 3)])
        #expect(xs.subscriptions == [Subscription(200, 230)])
    }

    @Test func compactMapDropsNil() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable(
            [.next(210, 1), .next(220, 2), .next(230, 3), .error(240, TestError())] as [R])
        let result = scheduler.start { xs.compactMap { $0 % 2 == 1 ? $0 : nil } }
        #expect(result.events == [.next(210, 1), .next(230, 3), .error(240, TestError())])
    }

    @Test func filterKeepsMatchingElements() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .next(220, 2), .next(230, 4), .completed(250)] as [R])
        let result = scheduler.start { xs.filter { $0.isMultiple(of: 2) } }
        #expect(result.events == [.next(220, 2), .next(230, 4), .completed(250)])

        let empty = TestScheduler()
        let none = empty.createHotObservable([.completed(250)] as [R])
        #expect(empty.start { none.filter { _ in true } }.events == [.completed(250)])
    }

    @Test func scanAccumulatesPerSubscription() {
        let scheduler = TestScheduler()
        let xs = scheduler.createColdObservable([.next(10, 1), .next(20, 2), .next(30, 3), .completed(40)] as [R])
        let result = scheduler.start { xs.scan(0) { $0 + $1 } }
        #expect(result.events == [.next(210, 1), .next(220, 3), .next(230, 6), .completed(240)])
        let failing = TestScheduler()
        let ys = failing.createColdObservable([.next(10, 1), .next(20, 2)] as [R])
        let failed = failing.start {
            ys.scan(0) { acc, value in
                if value == 2 { throw TestError() }
                return acc + value
            }
        }
        #expect(failed.events == [.next(210, 1), .error(220, TestError())])
    }

    @Test func distinctUntilChangedDropsRepeats() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable(
            [.next(210, 1), .next(220, 1), .next(230, 2), .next(240, 2), .next(250, 1), .completed(260)] as [R])
        let result = scheduler.start { xs.distinctUntilChanged() }
        #expect(result.events == [.next(210, 1), .next(230, 2), .next(250, 1), .completed(260)])
    }

    @Test func distinctUntilChangedByKey() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable(
            [.next(210, 10), .next(220, 11), .next(230, 20), .completed(260)] as [R])
        let result = scheduler.start { xs.distinctUntilChanged(by: { $0 / 10 }) }
        #expect(result.events == [.next(210, 10), .next(230, 20), .completed(260)])
        let custom = TestScheduler()
        let ys = custom.createHotObservable([.next(210, 1), .next(220, 2), .next(230, 5)] as [R])
        let near = custom.start { ys.distinctUntilChanged { abs($0 - $1) < 2 } }
        #expect(near.events == [.next(210, 1), .next(230, 5)])
    }

    @Test func startWithPrependsElements() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 3), .completed(220)] as [R])
        let result = scheduler.start { xs.startWith(1, 2) }
        #expect(result.events == [.next(200, 1), .next(200, 2), .next(210, 3), .completed(220)])
    }
}

@Suite struct FilteringOperatorTests {
    @Test func takeCompletesAfterCountAndUnsubscribes() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .next(220, 2), .next(230, 3), .completed(300)] as [R])
        let result = scheduler.start { xs.take(2) }
        #expect(result.events == [.next(210, 1), .next(220, 2), .completed(220)])
        #expect(xs.subscriptions == [Subscription(200, 220)])
    }

    @Test func takeEdgeCases() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .error(220, TestError())] as [R])
        #expect(scheduler.start { xs.take(5) }.events == [.next(210, 1), .error(220, TestError())])
        let zero = TestScheduler()
        let ys = zero.createHotObservable([.next(210, 1)] as [R])
        #expect(zero.start { ys.take(0) }.events == [.completed(200)])
        #expect(ys.subscriptions.isEmpty)
    }

    @Test func takeOneFromASubjectThatEmitsReentrantly() {
        let subject = PublishSubject<Int>()
        let log = EventLog<Int>()
        _ = subject.take(1).subscribe(
            onNext: { value in
                log.onNext(value)
                subject.onNext(value + 1)
            }, onCompleted: { log.onCompleted() })
        subject.onNext(1)
        #expect(log.events == [.next(1), .completed])
        #expect(!subject.hasObservers)
    }

    @Test func skipDropsTheFirstElements() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .next(220, 2), .next(230, 3), .completed(300)] as [R])
        #expect(scheduler.start { xs.skip(2) }.events == [.next(230, 3), .completed(300)])
        let empty = TestScheduler()
        let ys = empty.createHotObservable([.completed(300)] as [R])
        #expect(empty.start { ys.skip(2) }.events == [.completed(300)])
    }

    @Test func takeUntilCompletesWhenTheOtherEmits() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .next(230, 2), .next(250, 3), .completed(300)] as [R])
        let stop = scheduler.createHotObservable([.next(240, 0)] as [R])
        let result = scheduler.start { xs.take(until: stop) }
        #expect(result.events == [.next(210, 1), .next(230, 2), .completed(240)])
        #expect(xs.subscriptions == [Subscription(200, 240)])
        #expect(stop.subscriptions == [Subscription(200, 240)])
    }

    @Test func takeUntilIgnoresTheOthersCompletionAndForwardsItsError() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .next(260, 2), .completed(300)] as [R])
        let quiet = scheduler.createHotObservable([.completed(220)] as [R])
        #expect(scheduler.start { xs.takeUntil(quiet) }.events == [.next(210, 1), .next(260, 2), .completed(300)])
        let failing = TestScheduler()
        let ys = failing.createHotObservable([.next(210, 1), .next(260, 2)] as [R])
        let boom = failing.createHotObservable([.error(230, TestError(3))] as [R])
        #expect(failing.start { ys.take(until: boom) }.events == [.next(210, 1), .error(230, TestError(3))])
    }
}

@Suite struct CombiningOperatorTests {
    @Test func mergeInterleavesAndCompletesWhenAllComplete() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .next(230, 3), .completed(240)] as [R])
        let ys = scheduler.createHotObservable([.next(220, 2), .next(250, 4), .completed(260)] as [R])
        let result = scheduler.start { xs.merge(with: ys.asObservable()) }
        #expect(result.events == [.next(210, 1), .next(220, 2), .next(230, 3), .next(250, 4), .completed(260)])
    }

    @Test func mergeFailsOnFirstErrorAndUnsubscribesTheRest() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .error(220, TestError())] as [R])
        let ys = scheduler.createHotObservable([.next(215, 2), .next(230, 3)] as [R])
        let result = scheduler.start { Observable.merge(xs.asObservable(), ys.asObservable()) }
        #expect(result.events == [.next(210, 1), .next(215, 2), .error(220, TestError())])
        #expect(ys.subscriptions == [Subscription(200, 220)])
        let empty = EventLog<Int>()
        _ = Observable<Int>.merge([]).subscribe(empty)
        #expect(empty.events == [.completed])
    }

    @Test func combineLatestWaitsForAllThenEmitsOnEachChange() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .next(230, 3), .completed(260)] as [R])
        let ys = scheduler.createHotObservable([.next(220, 10), .next(240, 20), .completed(270)] as [R])
        let result = scheduler.start { Observable.combineLatest(xs, ys) { $0 + $1 } }
        #expect(result.events == [.next(220, 11), .next(230, 13), .next(240, 23), .completed(270)])
    }

    @Test func combineLatestCompletesWhenASourceEndsEmpty() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.completed(210)] as [R])
        let ys = scheduler.createHotObservable([.next(220, 10)] as [R])
        let result = scheduler.start { Observable<[Int]>.combineLatest([xs.asObservable(), ys.asObservable()]) }
        #expect(result.events == [.completed(210)])
        let failing = TestScheduler()
        let a = failing.createHotObservable([.next(210, 1)] as [R])
        let b = failing.createHotObservable([.error(220, TestError())] as [R])
        let failed = failing.start { a.combineLatest(with: b).map { $0.0 + $0.1 } }
        #expect(failed.events == [.error(220, TestError())])
    }

    @Test func flatMapMergesInnerSequences() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .next(220, 2), .completed(230)] as [R])
        let result = scheduler.start {
            xs.flatMap { value in
                scheduler.createColdObservable([.next(5, value * 10), .next(15, value * 100), .completed(20)] as [R])
            }
        }
        #expect(
            result.events == [.next(215, 10), .next(225, 100), .next(225, 20), .next(235, 200), .completed(240)])
    }

    @Test func flatMapFailsOnInnerErrorOrThrowingSelector() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .next(220, 2)] as [R])
        let result = scheduler.start {
            xs.flatMap { value -> Observable<Int> in
                if value == 2 { throw TestError(2) }
                return .never()
            }
        }
        #expect(result.events == [.error(220, TestError(2))])
        #expect(xs.subscriptions == [Subscription(200, 220)])
    }

    @Test func flatMapLatestSwitchesToTheNewestInner() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .next(230, 2), .completed(240)] as [R])
        let inners = Mutex<[TestableObservable<Int>]>([])
        let result = scheduler.start {
            xs.flatMapLatest { value in
                let inner = scheduler.createColdObservable(
                    [.next(5, value * 10), .next(25, value * 100), .completed(30)] as [R])
                inners.withLock { $0.append(inner) }
                return inner
            }
        }
        #expect(result.events == [.next(215, 10), .next(235, 20), .next(255, 200), .completed(260)])
        let subscriptions = inners.withLock { $0.map(\.subscriptions) }
        #expect(subscriptions == [[Subscription(210, 230)], [Subscription(230, 260)]])
    }
}

@Suite struct TimeOperatorTests {
    @Test func debounceEmitsAfterQuietPeriodAndFlushesOnCompletion() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable(
            [.next(210, 1), .next(215, 2), .next(240, 3), .next(290, 4), .completed(295)] as [R])
        let result = scheduler.start { xs.debounce(.seconds(20), scheduler: scheduler) }
        #expect(result.events == [.next(235, 2), .next(260, 3), .next(295, 4), .completed(295)])
    }

    @Test func debounceDropsPendingOnError() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .error(215, TestError())] as [R])
        let result = scheduler.start { xs.debounce(.seconds(20), scheduler: scheduler) }
        #expect(result.events == [.error(215, TestError())])
    }

    @Test func throttleEmitsFirstThenLatestPerWindow() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable(
            [.next(210, 1), .next(215, 2), .next(220, 3), .next(260, 4), .completed(300)] as [R])
        let latest = scheduler.start { xs.throttle(.seconds(20), scheduler: scheduler) }
        #expect(latest.events == [.next(210, 1), .next(230, 3), .next(260, 4), .completed(300)])

        let other = TestScheduler()
        let ys = other.createHotObservable(
            [.next(210, 1), .next(215, 2), .next(220, 3), .next(260, 4), .completed(300)] as [R])
        let first = other.start { ys.throttle(.seconds(20), latest: false, scheduler: other) }
        #expect(first.events == [.next(210, 1), .next(260, 4), .completed(300)])
    }

    @Test func timeoutFailsWhenNoElementArrivesInTime() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .next(260, 2)] as [R])
        let result = scheduler.start { xs.timeout(.seconds(30), scheduler: scheduler) }
        #expect(result.events == [.next(210, 1), .error(240, ReactiveError.timeout(dueTime: .seconds(30)))])
        #expect(xs.subscriptions == [Subscription(200, 240)])
    }

    @Test func timeoutSwitchesToTheFallback() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .next(260, 2)] as [R])
        let fallback = scheduler.createColdObservable([.next(5, 100), .completed(10)] as [R])
        let result = scheduler.start { xs.timeout(.seconds(30), other: fallback, scheduler: scheduler) }
        #expect(result.events == [.next(210, 1), .next(245, 100), .completed(250)])
        let quick = TestScheduler()
        let ys = quick.createHotObservable([.next(210, 1), .completed(220)] as [R])
        #expect(quick.start { ys.timeout(.seconds(30), scheduler: quick) }.events == [.next(210, 1), .completed(220)])
    }
}

@Suite struct ErrorOperatorTests {
    @Test func catchErrorContinuesWithTheRecovery() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .error(220, TestError())] as [R])
        let recovery = scheduler.createColdObservable([.next(10, 2), .completed(20)] as [R])
        let result = scheduler.start { xs.catchError { _ in recovery } }
        #expect(result.events == [.next(210, 1), .next(230, 2), .completed(240)])
        #expect(recovery.subscriptions == [Subscription(220, 240)])
    }

    @Test func catchErrorHandlerThatThrowsFails() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.error(220, TestError(1))] as [R])
        let result = scheduler.start { xs.catchError { _ -> Observable<Int> in throw TestError(2) } }
        #expect(result.events == [.error(220, TestError(2))])
        let other = TestScheduler()
        let ys = other.createHotObservable([.next(210, 1), .error(220, TestError(1))] as [R])
        #expect(other.start { ys.catchErrorJustReturn(9) }.events == [.next(210, 1), .next(220, 9), .completed(220)])
    }

    @Test func retryResubscribesUpToTheLimit() {
        let scheduler = TestScheduler()
        let xs = scheduler.createColdObservable([.next(10, 1), .error(20, TestError())] as [R])
        let result = scheduler.start { xs.retry(3) }
        #expect(
            result.events == [.next(210, 1), .next(230, 1), .next(250, 1), .error(260, TestError())])
        #expect(xs.subscriptions == [Subscription(200, 220), Subscription(220, 240), Subscription(240, 260)])
    }

    @Test func retryOfASynchronouslyFailingSourceDoesNotRecurse() {
        let attempts = Counter()
        let log = EventLog<Int>()
        _ = Observable<Int>.deferred {
            attempts.increment()
            return attempts.count < 50_000 ? .error(TestError()) : .just(1)
        }.retry().subscribe(log)
        #expect(log.events == [.next(1), .completed])
        #expect(attempts.count == 50_000)
    }
}

@Suite struct ShareTests {
    @Test func shareConnectsOnceAndDisconnectsWithTheLastSubscriber() {
        let subscriptions = Counter()
        let disposals = Counter()
        let subject = PublishSubject<Int>()
        let shared = Observable<Int>.create { observer in
            subscriptions.increment()
            let inner = subject.subscribe(observer)
            return Disposables.create {
                disposals.increment()
                inner.dispose()
            }
        }.share()
        let first = EventLog<Int>()
        let second = EventLog<Int>()
        let a = shared.subscribe(first)
        subject.onNext(1)
        let b = shared.subscribe(second)
        subject.onNext(2)
        #expect(subscriptions.count == 1)
        #expect(first.elements == [1, 2])
        #expect(second.elements == [2])
        a.dispose()
        #expect(disposals.count == 0)
        b.dispose()
        #expect(disposals.count == 1)
        _ = shared.subscribe(first)
        #expect(subscriptions.count == 2)
    }

    @Test func shareReplayReplaysToLateSubscribersAndReconnectsAfterCompletion() {
        let scheduler = TestScheduler()
        let xs = scheduler.createColdObservable([.next(10, 1), .next(20, 2), .completed(30)] as [R])
        let shared = xs.share(replay: 1)
        let early = scheduler.createObserver(Int.self)
        let late = scheduler.createObserver(Int.self)
        let again = scheduler.createObserver(Int.self)
        scheduler.scheduleAt(200) { _ = shared.subscribe(early) }
        scheduler.scheduleAt(215) { _ = shared.subscribe(late) }
        scheduler.scheduleAt(300) { _ = shared.subscribe(again) }
        scheduler.start()
        #expect(early.events == [.next(210, 1), .next(220, 2), .completed(230)])
        #expect(late.events == [.next(215, 1), .next(220, 2), .completed(230)])
        #expect(again.events == [.next(310, 1), .next(320, 2), .completed(330)])
        #expect(xs.subscriptions == [Subscription(200, 230), Subscription(300, 330)])
    }
}

@Suite struct SchedulingOperatorTests {
    @Test func observeOnDeliversInOrderOnTheScheduler() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .next(220, 2), .completed(230)] as [R])
        let result = scheduler.start { xs.observe(on: scheduler) }
        #expect(result.events == [.next(210, 1), .next(220, 2), .completed(230)])
    }

    @Test func observeOnASerialQueueKeepsOrderAndDisposes() async throws {
        let scheduler = SerialQueueScheduler(label: "test.observeOn")
        let subject = PublishSubject<Int>()
        let log = EventLog<Int>()
        let done = AsyncStream<Void>.makeStream()
        let subscription = subject.observe(on: scheduler).subscribe(
            onNext: { log.onNext($0) },
            onCompleted: {
                done.continuation.finish()
            })
        for value in 0..<1000 { subject.onNext(value) }
        subject.onCompleted()
        for await _ in done.stream {}
        #expect(log.elements == Array(0..<1000))
        subscription.dispose()
    }

    @Test func subscribeOnSubscribesOnTheScheduler() {
        let scheduler = TestScheduler()
        let xs = scheduler.createColdObservable([.next(10, 1), .completed(20)] as [R])
        let result = scheduler.start { xs.subscribe(on: scheduler) }
        #expect(result.events == [.next(210, 1), .completed(220)])
        #expect(xs.subscriptions == [Subscription(200, 220)])
    }

    @Test func virtualTimeRunsInTimeThenSchedulingOrder() {
        let scheduler = VirtualTimeScheduler()
        let order = Mutex<[String]>([])
        scheduler.schedule(after: .seconds(2)) { order.withLock { $0.append("b") } }
        scheduler.schedule(after: .seconds(1)) { order.withLock { $0.append("a") } }
        scheduler.schedule(after: .seconds(2)) { order.withLock { $0.append("c") } }
        let cancelled = scheduler.schedule(after: .seconds(3)) { order.withLock { $0.append("x") } }
        cancelled.dispose()
        scheduler.advance(to: .seconds(1))
        #expect(order.withLock { $0 } == ["a"])
        scheduler.start()
        #expect(order.withLock { $0 } == ["a", "b", "c"])
        #expect(scheduler.now == .seconds(2))
    }

    @Test func immediateSchedulerRunsInline() {
        let ran = Counter()
        ImmediateScheduler.instance.schedule { ran.increment() }
        #expect(ran.count == 1)
        let log = EventLog<Int>()
        _ = Observable.from([1, 2]).observe(on: ImmediateScheduler()).subscribe(log)
        #expect(log.events == [.next(1), .next(2), .completed])
    }
}
