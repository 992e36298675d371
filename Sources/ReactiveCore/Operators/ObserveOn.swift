import Synchronization

extension ObservableType {
    /// Delivers events on `scheduler`, in order.
    ///
    /// Events are queued and one scheduled drain delivers all that are waiting, so a
    /// burst costs one scheduling, not one per event. Nothing is delivered after dispose.
    public func observe(on scheduler: any Scheduler) -> Observable<Element> {
        let source = asObservable()
        return Observable { observer, cancel in
            let sink = ObserveOnSink(observer: observer, scheduler: scheduler, cancel: cancel)
            let subscription = source.run(sink, cancel)
            return Disposables.create(subscription, sink)
        }
    }
}

private final class ObserveOnSink<Element: Sendable>: ObserverType, Disposable {
    private struct State {
        var observer: AnyObserver<Element>?
        var queue: [Event<Element>] = []
        var scheduled = false
    }

    private let state: Mutex<State>
    private let scheduler: any Scheduler
    private let cancel: any Cancelable
    private let disposed = Atomic<Bool>(false)

    init(observer: AnyObserver<Element>, scheduler: any Scheduler, cancel: any Cancelable) {
        state = Mutex(State(observer: observer))
        self.scheduler = scheduler
        self.cancel = cancel
    }

    func on(_ event: Event<Element>) {
        let schedule = state.withLock { state -> Bool in
            guard state.observer != nil else { return false }
            state.queue.append(event)
            guard !state.scheduled else { return false }
            state.scheduled = true
            return true
        }
        if schedule { scheduler.schedule { self.drain() } }
    }

    private func drain() {
        while true {
            let batch = state.withLock { state -> (AnyObserver<Element>, [Event<Element>])? in
                guard let observer = state.observer, !state.queue.isEmpty else {
                    state.scheduled = false
                    return nil
                }
                let batch = state.queue
                state.queue = []
                return (observer, batch)
            }
            guard let (observer, events) = batch else { return }
            for event in events {
                if disposed.load(ordering: .acquiring) || cancel.isDisposed { return }
                observer.on(event)
                if event.isStopEvent {
                    dispose()
                    return
                }
            }
        }
    }

    func dispose() {
        disposed.store(true, ordering: .releasing)
        // Moved out so the observer is released outside the lock.
        let released = state.withLock { state -> AnyObserver<Element>? in
            let observer = state.observer
            state.observer = nil
            state.queue = []
            return observer
        }
        _ = released
    }
}
