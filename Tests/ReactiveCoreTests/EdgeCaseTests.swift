import ReactiveTesting
import Synchronization
import Testing

@testable import ReactiveCore

/// Edge cases every operator must handle: dispose mid-stream, an empty source, a failing source.
@Suite struct EdgeCaseTests {
    typealias Build = @Sendable (TestScheduler, Observable<Int>) -> Observable<Int>

    static let operators: [(String, Build)] = [
        ("map", { _, xs in xs.map { $0 } }),
        ("compactMap", { _, xs in xs.compactMap { $0 } }),
        ("filter", { _, xs in xs.filter { _ in true } }),
        ("scan", { _, xs in xs.scan(0) { _, value in value } }),
        ("distinctUntilChanged", { _, xs in xs.distinctUntilChanged() }),
        ("take", { _, xs in xs.take(100) }),
        ("takeUntil", { _, xs in xs.take(until: Observable<Int>.never()) }),
        ("skip", { _, xs in xs.skip(0) }),
        ("merge", { _, xs in xs.merge(with: .never()) }),
        ("combineLatest", { _, xs in Observable.combineLatest(xs, Observable.just(0)) { a, _ in a } }),
        ("flatMap", { _, xs in xs.flatMap { Observable.just($0) } }),
        ("flatMapLatest", { _, xs in xs.flatMapLatest { Observable.just($0) } }),
        ("debounce", { s, xs in xs.debounce(.zero, scheduler: s) }),
        ("throttle", { s, xs in xs.throttle(.zero, scheduler: s) }),
        ("timeout", { s, xs in xs.timeout(.seconds(500), scheduler: s) }),
        ("catchError", { _, xs in xs.catchError { (_: any Error) -> Observable<Int> in Observable<Int>.never() } }),
        ("retry", { _, xs in xs.retry(1) }),
        ("share", { _, xs in xs.share(replay: 1) }),
        ("observeOn", { s, xs in xs.observe(on: s) }),
        ("subscribeOn", { s, xs in xs.subscribe(on: s) }),
    ]

    static var names: [String] { operators.map(\.0) }

    static func build(_ name: String) -> Build {
        let identity: Build = { _, xs in xs }
        for (candidate, build) in operators where candidate == name { return build }
        return identity
    }

    @Test(arguments: names)
    func disposeMidStreamStopsDeliveryAndUnsubscribes(name: String) {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .next(220, 2), .next(230, 3), .completed(240)] as [R])
        let build = Self.build(name)
        let result = scheduler.start(disposed: 225) { build(scheduler, xs.asObservable()) }
        #expect(result.events.allSatisfy { $0.time <= 225 }, "\(name)")
        #expect(result.events.compactMap(\.value.element).last == 2, "\(name)")
        #expect(xs.subscriptions == [Subscription(200, 225)], "\(name)")
    }

    @Test(arguments: names)
    func emptySourceKeepsTheGrammar(name: String) {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.completed(250)] as [R])
        let build = Self.build(name)
        let result = scheduler.start { build(scheduler, xs.asObservable()) }
        let events = result.events.map(\.value)
        #expect(events.allSatisfy { $0.element == nil }, "\(name)")
        #expect(obeysGrammar(events), "\(name)")
    }

    @Test(arguments: names)
    func failingSourceKeepsTheGrammar(name: String) {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotObservable([.next(210, 1), .error(250, TestError()), .next(260, 2)] as [R])
        let build = Self.build(name)
        let result = scheduler.start { build(scheduler, xs.asObservable()) }
        let events = result.events.map(\.value)
        #expect(obeysGrammar(events), "\(name)")
        #expect(!events.contains { $0.element == 2 }, "\(name)")
    }

    @Test func mergeWithReentrantEmissionIntoASource() {
        let a = PublishSubject<Int>()
        let b = PublishSubject<Int>()
        let log = EventLog<Int>()
        let depth = Atomic<Int>(0)
        let nested = Atomic<Bool>(false)
        _ = a.merge(with: b.asObservable()).subscribe(onNext: { value in
            if depth.wrappingAdd(1, ordering: .relaxed).newValue > 1 { nested.store(true, ordering: .relaxed) }
            log.onNext(value)
            if value == 1 { b.onNext(2) }
            if value == 2 { a.onNext(3) }
            depth.wrappingSubtract(1, ordering: .relaxed)
        })
        a.onNext(1)
        let wasNested = nested.load(ordering: .relaxed)
        #expect(log.elements == [1, 2, 3])
        #expect(!wasNested)
    }

    @Test func combineLatestWithReentrantEmission() {
        let a = PublishSubject<Int>()
        let b = BehaviorSubject(value: 10)
        let log = EventLog<Int>()
        _ = Observable.combineLatest(a, b) { $0 + $1 }.subscribe(onNext: { value in
            log.onNext(value)
            if value == 11 { b.onNext(20) }
        })
        a.onNext(1)
        #expect(log.elements == [11, 21])
    }
}
