import Synchronization
import Testing

@testable import ReactiveCore

@Suite struct CoreTests {
    @Test func justEmitsOneElementThenCompletes() {
        let log = EventLog<Int>()
        _ = Observable.just(7).subscribe(log)
        #expect(log.events == [.next(7), .completed])
    }

    @Test func emptyNeverAndErrorFactories() {
        let empty = EventLog<Int>()
        _ = Observable<Int>.empty().subscribe(empty)
        #expect(empty.events == [.completed])

        let never = EventLog<Int>()
        let subscription = Observable<Int>.never().subscribe(never)
        subscription.dispose()
        #expect(never.events.isEmpty)

        let failing = EventLog<Int>()
        _ = Observable<Int>.error(TestError(1)).subscribe(failing)
        #expect(failing.events == [.error(TestError(1))])
    }

    @Test func fromEmitsTheSequenceInOrder() {
        let log = EventLog<Int>()
        _ = Observable.from([1, 2, 3]).subscribe(log)
        #expect(log.events == [.next(1), .next(2), .next(3), .completed])
    }

    @Test func fromStopsAnEndlessSequenceWhenTakeIsSatisfied() {
        let log = EventLog<Int>()
        _ = Observable.from(1...).map { $0 * 10 }.take(3).subscribe(log)
        #expect(log.events == [.next(10), .next(20), .next(30), .completed])
    }

    @Test func deferredRunsTheFactoryPerSubscription() {
        let calls = Counter()
        let source = Observable<Int>.deferred {
            calls.increment()
            return .just(calls.count)
        }
        let first = EventLog<Int>()
        let second = EventLog<Int>()
        _ = source.subscribe(first)
        _ = source.subscribe(second)
        #expect(first.elements == [1])
        #expect(second.elements == [2])

        let failing = EventLog<Int>()
        _ = Observable<Int>.deferred { throw TestError(2) }.subscribe(failing)
        #expect(failing.events == [.error(TestError(2))])
    }

    @Test func createDropsEverythingAfterATerminalEvent() {
        let log = EventLog<Int>()
        _ = Observable<Int>.create { observer in
            observer.onNext(1)
            observer.onCompleted()
            observer.onNext(2)
            observer.onError(TestError())
            observer.onCompleted()
            return Disposables.create()
        }.subscribe(log)
        #expect(log.events == [.next(1), .completed])
    }

    @Test func createDeliversNothingAfterDispose() {
        let captured = Mutex<AnyObserver<Int>?>(nil)
        let log = EventLog<Int>()
        let subscription = Observable<Int>.create { observer in
            captured.withLock { $0 = observer }
            return Disposables.create()
        }.subscribe(log)
        let observer = captured.withLock { $0 }
        observer?.onNext(1)
        subscription.dispose()
        observer?.onNext(2)
        observer?.onCompleted()
        #expect(log.events == [.next(1)])
    }

    @Test func createRunsTheDisposeActionOnceWhenDisposedTwice() {
        let disposals = Counter()
        let subscription = Observable<Int>.create { _ in
            Disposables.create { disposals.increment() }
        }.subscribe { _ in }
        subscription.dispose()
        subscription.dispose()
        #expect(disposals.count == 1)
    }

    @Test func createSerializesReentrantEmission() {
        // The observer emits into its own source while handling an event: the
        // nested event is delivered after the current one returns, never inside it.
        let captured = Mutex<AnyObserver<Int>?>(nil)
        let depth = Atomic<Int>(0)
        let maxDepth = Atomic<Int>(0)
        let log = EventLog<Int>()
        let source = Observable<Int>.create { observer in
            captured.withLock { $0 = observer }
            return Disposables.create()
        }
        _ = source.subscribe(onNext: { value in
            let now = depth.wrappingAdd(1, ordering: .relaxed).newValue
            if now > maxDepth.load(ordering: .relaxed) { maxDepth.store(now, ordering: .relaxed) }
            log.onNext(value)
            if value < 3 { captured.withLock { $0 }?.onNext(value + 1) }
            depth.wrappingSubtract(1, ordering: .relaxed)
        })
        captured.withLock { $0 }?.onNext(1)
        #expect(log.elements == [1, 2, 3])
        let deepest = maxDepth.load(ordering: .relaxed)
        #expect(deepest == 1)
    }

    @Test func onDisposedRunsOnceAfterCompletionOrDispose() {
        let disposed = Counter()
        _ = Observable.just(1).subscribe(onDisposed: { disposed.increment() })
        #expect(disposed.count == 1)

        let subject = PublishSubject<Int>()
        let subscription = subject.subscribe(onDisposed: { disposed.increment() })
        subscription.dispose()
        subscription.dispose()
        subject.onCompleted()
        #expect(disposed.count == 2)
    }

    @Test func closureSubscriptionRoutesEachKindOfEvent() {
        let nexts = Mutex<[Int]>([])
        let errors = Counter()
        let completions = Counter()
        let subject = PublishSubject<Int>()
        subject.subscribe(
            onNext: { value in nexts.withLock { $0.append(value) } },
            onError: { _ in errors.increment() },
            onCompleted: { completions.increment() })
        subject.onNext(1)
        subject.onNext(2)
        subject.onError(TestError())
        #expect(nexts.withLock { $0 } == [1, 2])
        #expect(errors.count == 1)
        #expect(completions.count == 0)
    }

    @Test func eventEqualityComparesErrorsByTypeAndDescription() {
        #expect(Event<Int>.error(TestError(1)) == .error(TestError(1)))
        #expect(Event<Int>.error(TestError(1)) != .error(TestError(2)))
        #expect(Event<Int>.next(1) != .completed)
        #expect(Event<Int>.next(2).map { $0 * 2 } == .next(4))
        #expect(Event<Int>.completed.isCompleted)
    }
}

@Suite struct DisposableTests {
    @Test func compositeDisposesEverythingOnceAndLateInsertionsAtOnce() {
        let count = Counter()
        let composite = CompositeDisposable()
        composite.insert(Disposables.create { count.increment() })
        let key = composite.insert(Disposables.create { count.increment() })
        #expect(composite.count == 2)
        if let key { composite.remove(for: key) }
        #expect(count.count == 1)
        composite.dispose()
        composite.dispose()
        #expect(count.count == 2)
        #expect(composite.insert(Disposables.create { count.increment() }) == nil)
        #expect(count.count == 3)
        #expect(composite.isDisposed)
    }

    @Test func serialDisposesThePreviousOnReplacement() {
        let first = Counter()
        let second = Counter()
        let serial = SerialDisposable()
        serial.disposable = Disposables.create { first.increment() }
        serial.disposable = Disposables.create { second.increment() }
        #expect(first.count == 1)
        #expect(second.count == 0)
        serial.dispose()
        #expect(second.count == 1)
        let late = Counter()
        serial.disposable = Disposables.create { late.increment() }
        #expect(late.count == 1)
    }

    @Test func singleAssignmentDisposesALateAssignment() {
        let count = Counter()
        let slot = SingleAssignmentDisposable()
        slot.dispose()
        slot.setDisposable(Disposables.create { count.increment() })
        #expect(count.count == 1)
        #expect(slot.isDisposed)

        let parent = SingleAssignmentDisposable()
        let child = SingleAssignmentDisposable(parent: parent)
        parent.dispose()
        #expect(child.isDisposed)
    }

    @Test func disposeBagDisposesOnRelease() {
        let count = Counter()
        var bag: DisposeBag? = DisposeBag()
        if let bag {
            Disposables.create { count.increment() }.disposed(by: bag)
            Disposables.create { count.increment() }.disposed(by: bag)
        }
        #expect(count.count == 0)
        bag = nil
        #expect(count.count == 2)

        let emptied = DisposeBag()
        emptied.dispose()
        emptied.insert(Disposables.create { count.increment() })
        #expect(count.count == 3)
    }

    @Test func binaryAndAnonymousDisposablesAreIdempotent() {
        let count = Counter()
        let pair = Disposables.create(
            Disposables.create { count.increment() }, Disposables.create { count.increment() })
        pair.dispose()
        pair.dispose()
        #expect(count.count == 2)
        #expect(pair.isDisposed)
    }
}
