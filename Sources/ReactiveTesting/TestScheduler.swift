import ReactiveCore
import Synchronization

/// A virtual-time scheduler with the tools of marble tests, after RxTest.
///
/// Time is counted in integer ticks; one tick is `resolution` of `Duration` for the
/// time-based operators (one second by default, so `debounce(.seconds(20), …)`
/// waits 20 ticks).
///
/// ```swift
/// let scheduler = TestScheduler()
/// let xs = scheduler.createHotObservable([.next(210, 1), .completed(300)])
/// let result = scheduler.start { xs.map { $0 * 2 } }
/// #expect(result.events == [.next(210, 2), .completed(300)])
/// ```
public final class TestScheduler: Scheduler {
    /// The virtual clock and queue this scheduler drives.
    public let virtual: VirtualTimeScheduler
    /// The duration of one tick.
    public let resolution: Duration

    /// Defaults of `start`: create the observable at 100, subscribe at 200, dispose at 1000.
    public enum Defaults {
        /// When `start` creates the observable.
        public static let created: TestTime = 100
        /// When `start` subscribes.
        public static let subscribed: TestTime = 200
        /// When `start` disposes the subscription.
        public static let disposed: TestTime = 1000
    }

    /// Creates a scheduler whose clock starts at `initialClock` ticks.
    public init(initialClock: TestTime = 0, resolution: Duration = .seconds(1)) {
        self.resolution = resolution
        virtual = VirtualTimeScheduler(initialClock: resolution * initialClock)
    }

    /// The virtual time as a `Duration` (for the operators).
    public var now: Duration { virtual.now }

    /// The virtual time in ticks.
    public var clock: TestTime { ticks(virtual.now) }

    func ticks(_ duration: Duration) -> TestTime {
        Int((duration / resolution).rounded(.up))
    }

    /// Schedules at the current time.
    @discardableResult
    public func schedule(_ action: @escaping @Sendable () -> Void) -> any Disposable {
        virtual.schedule(action)
    }

    /// Schedules after `delay`.
    @discardableResult
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Disposable {
        virtual.schedule(after: delay, action)
    }

    /// Schedules `action` at tick `time`.
    @discardableResult
    public func scheduleAt(_ time: TestTime, _ action: @escaping @Sendable () -> Void) -> any Disposable {
        virtual.schedule(at: resolution * time, action)
    }

    /// Runs everything scheduled.
    public func start() { virtual.start() }

    /// Runs what is due up to tick `time`.
    public func advance(to time: TestTime) { virtual.advance(to: resolution * time) }

    /// Stops a running `start()` after the current action.
    public func stop() { virtual.stop() }

    /// An observable that emits `events` at their absolute times to whoever is subscribed then.
    public func createHotObservable<Element: Sendable>(_ events: [Recorded<Event<Element>>]) -> TestableObservable<
        Element
    > {
        TestableObservable(scheduler: self, events: events, hot: true)
    }

    /// An observable that emits `events` at times relative to each subscription.
    public func createColdObservable<Element: Sendable>(_ events: [Recorded<Event<Element>>]) -> TestableObservable<
        Element
    > {
        TestableObservable(scheduler: self, events: events, hot: false)
    }

    /// An observer that records what it receives with the tick it arrived at.
    public func createObserver<Element: Sendable>(_ type: Element.Type = Element.self) -> TestableObserver<Element> {
        TestableObserver(scheduler: self)
    }

    /// Creates the observable at `created`, subscribes at `subscribed`, disposes at `disposed`,
    /// runs the scheduler and returns what the observer recorded.
    public func start<Element: Sendable>(
        created: TestTime = Defaults.created,
        subscribed: TestTime = Defaults.subscribed,
        disposed: TestTime = Defaults.disposed,
        _ create: @escaping @Sendable () -> Observable<Element>
    ) -> TestableObserver<Element> {
        let observer = createObserver(Element.self)
        let source = Mutex<Observable<Element>?>(nil)
        let subscription = SingleAssignmentDisposable()
        scheduleAt(created) { source.withLock { $0 = create() } }
        scheduleAt(subscribed) {
            guard let observable = source.withLock({ $0 }) else { return }
            subscription.setDisposable(observable.subscribe(observer))
        }
        scheduleAt(disposed) { subscription.dispose() }
        start()
        return observer
    }
}

/// An observer that records events with their virtual time.
public final class TestableObserver<Element: Sendable>: ObserverType {
    private let scheduler: TestScheduler
    private let recorded = Mutex<[Recorded<Event<Element>>]>([])

    init(scheduler: TestScheduler) { self.scheduler = scheduler }

    /// Everything received so far, in order.
    public var events: [Recorded<Event<Element>>] { recorded.withLock { $0 } }

    /// Records the event at the current tick.
    public func on(_ event: Event<Element>) {
        let time = scheduler.clock
        recorded.withLock { $0.append(Recorded(time: time, value: event)) }
    }
}

/// A scripted observable for marble tests that records its subscriptions.
public final class TestableObservable<Element: Sendable>: ObservableType {
    private let scheduler: TestScheduler
    /// The script.
    public let recordedEvents: [Recorded<Event<Element>>]
    private let hot: Bool
    private let core = PublishSubject<Element>()
    private let log = Mutex<[Subscription]>([])

    init(scheduler: TestScheduler, events: [Recorded<Event<Element>>], hot: Bool) {
        self.scheduler = scheduler
        self.recordedEvents = events
        self.hot = hot
        if hot {
            let core = self.core
            for recorded in events {
                scheduler.scheduleAt(recorded.time) { core.on(recorded.value) }
            }
        }
    }

    /// Every subscription so far, with its subscribe and unsubscribe ticks.
    public var subscriptions: [Subscription] { log.withLock { $0 } }

    /// Subscribes; hot: to the shared script; cold: to a fresh run of the script.
    public func asObservable() -> Observable<Element> {
        Observable.create { observer in self.subscribe(observer) }
    }

    private func subscribe(_ observer: AnyObserver<Element>) -> any Disposable {
        let scheduler = self.scheduler
        let index = log.withLock { log -> Int in
            log.append(Subscription(scheduler.clock))
            return log.count - 1
        }
        let inner: any Disposable
        if hot {
            inner = core.asObservable().subscribe(observer)
        } else {
            let guarded = ScriptObserver(observer)
            let group = CompositeDisposable()
            let start = scheduler.clock
            for recorded in recordedEvents {
                group.insert(scheduler.scheduleAt(start + recorded.time) { guarded.on(recorded.value) })
            }
            group.insert(guarded)
            inner = group
        }
        return Disposables.create {
            inner.dispose()
            self.recordUnsubscribe(index)
        }
    }

    private func recordUnsubscribe(_ index: Int) {
        let time = scheduler.clock
        log.withLock { log in
            log[index] = Subscription(log[index].subscribe, time)
        }
    }
}

/// Delivers a cold script's events to one observer until it is disposed or
/// the script ends; events after that are dropped, as the contract requires.
private final class ScriptObserver<Element: Sendable>: Disposable {
    private let observer: Mutex<AnyObserver<Element>?>

    init(_ observer: AnyObserver<Element>) { self.observer = Mutex(observer) }

    func on(_ event: Event<Element>) {
        let target = observer.withLock { current -> AnyObserver<Element>? in
            defer { if event.isStopEvent { current = nil } }
            return current
        }
        target?.on(event)
    }

    func dispose() { observer.withLock { $0 = nil } }
}
