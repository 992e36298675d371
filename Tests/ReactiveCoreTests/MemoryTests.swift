import ReactiveTesting
import Testing

@testable import ReactiveCore

/// Weak references show that finished chains release what they captured.
@Suite struct MemoryTests {
    /// Runs `body` with a token that only `body`'s chain may retain; returns whether it was freed.
    private func isReleased(after body: (Token) -> Void) -> Bool {
        weak var weakToken: Token?
        do {
            let token = Token()
            weakToken = token
            body(token)
        }
        return weakToken == nil
    }

    @Test func disposedChainIsFreed() {
        let subject = PublishSubject<Int>()
        let released = isReleased { token in
            let subscription = subject.map { [token] in $0 + (token === token ? 1 : 0) }
                .filter { _ in true }
                .subscribe(onNext: { _ in })
            subject.onNext(1)
            subscription.dispose()
        }
        #expect(released)
        #expect(!subject.hasObservers)
    }

    @Test func completedChainIsFreedWithoutDispose() {
        let subject = PublishSubject<Int>()
        let released = isReleased { token in
            _ = subject.map { [token] value in withExtendedLifetime(token) { value } }
                .scan(0, accumulator: +)
                .distinctUntilChanged()
                .subscribe(onNext: { _ in })
            subject.onNext(1)
            subject.onCompleted()
        }
        #expect(released)
    }

    @Test func observerSubscriptionIsFreedAfterTerminal() {
        let subject = PublishSubject<Int>()
        let released = isReleased { token in
            let log = EventLog<Int>()
            _ = subject.map { [token] value in withExtendedLifetime(token) { value } }.subscribe(log)
            subject.onError(TestError())
        }
        #expect(released)
    }

    @Test func createResourcesAreFreedOnDispose() {
        let released = isReleased { token in
            let subscription = Observable<Int>.create { observer in
                // The resource captures the observer: a cycle that dispose must break.
                Disposables.create { withExtendedLifetime(token) { observer.onCompleted() } }
            }.subscribe(onNext: { _ in })
            subscription.dispose()
        }
        #expect(released)
    }

    @Test func multiSourceOperatorsAreFreedAfterCompletion() {
        let first = PublishSubject<Int>()
        let second = PublishSubject<Int>()
        let released = isReleased { token in
            _ = Observable.combineLatest(first, second) { a, b in withExtendedLifetime(token) { a + b } }
                .flatMap { Observable.just($0) }
                .flatMapLatest { Observable.just($0) }
                .merge(with: .never())
                .take(until: Observable<Int>.never())
                .take(1)
                .subscribe(onNext: { _ in })
            first.onNext(1)
            second.onNext(2)
        }
        #expect(released)
        #expect(!first.hasObservers)
        #expect(!second.hasObservers)
    }

    @Test func timeOperatorsAreFreedOnDispose() {
        let scheduler = TestScheduler()
        let subject = PublishSubject<Int>()
        let released = isReleased { token in
            let subscription = subject.map { [token] value in withExtendedLifetime(token) { value } }
                .debounce(.seconds(5), scheduler: scheduler)
                .throttle(.seconds(5), scheduler: scheduler)
                .timeout(.seconds(50), scheduler: scheduler)
                .observe(on: scheduler)
                .subscribe(on: scheduler)
                .subscribe(onNext: { _ in })
            scheduler.advance(to: 1)
            subject.onNext(1)
            scheduler.advance(to: 20)
            subscription.dispose()
            scheduler.start()
        }
        #expect(released)
        #expect(!subject.hasObservers)
    }

    @Test func shareReleasesTheSourceWithTheLastSubscriber() {
        let subject = PublishSubject<Int>()
        let released = isReleased { token in
            let shared = subject.map { [token] value in withExtendedLifetime(token) { value } }.share(replay: 1)
            let a = shared.subscribe(onNext: { _ in })
            let b = shared.subscribe(onNext: { _ in })
            subject.onNext(1)
            a.dispose()
            b.dispose()
        }
        #expect(released)
        #expect(!subject.hasObservers)
    }

    @Test func disposeBagReleaseEndsSubscriptions() {
        let subject = PublishSubject<Int>()
        let released = isReleased { token in
            let bag = DisposeBag()
            subject.map { [token] value in withExtendedLifetime(token) { value } }
                .subscribe(onNext: { _ in })
                .disposed(by: bag)
            #expect(subject.hasObservers)
        }
        #expect(released)
        #expect(!subject.hasObservers)
    }

    @Test func retryAndCatchAreFreedAfterCompletion() {
        let released = isReleased { token in
            _ = Observable<Int>.error(TestError())
                .catchError { _ in Observable.just(withExtendedLifetime(token) { 1 }) }
                .retry(2)
                .subscribe(onNext: { _ in })
        }
        #expect(released)
    }

    @Test func releasedSubjectFreesItsObservers() {
        let released = isReleased { token in
            let subject = PublishSubject<Int>()
            _ = subject.subscribe(onNext: { _ in withExtendedLifetime(token) {} })
        }
        #expect(released)
    }
}
