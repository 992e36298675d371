import Synchronization

extension Observable {
    /// Emits the elements of all `sources` as they arrive.
    ///
    /// Completes when every source has completed; fails, and unsubscribes from the
    /// others, on the first error. Events from different sources are serialized.
    public static func merge(_ sources: [Observable<Element>]) -> Observable<Element> {
        Observable { observer, cancel in
            guard !sources.isEmpty else {
                observer.on(.completed)
                return NopDisposable()
            }
            let output = SerializedObserver(observer, cancel: cancel)
            let group = CompositeDisposable()
            group.insert(output)
            let active = ActiveCount(sources.count)
            for source in sources {
                if group.isDisposed { break }
                group.insert(
                    source.run(
                        AnyObserver<Element> { event in
                            switch event {
                            case .next:
                                output.on(event)
                            case .error:
                                output.on(event)
                                group.dispose()
                            case .completed:
                                if active.decrement() {
                                    output.on(.completed)
                                    group.dispose()
                                }
                            }
                        }, group))
            }
            return group
        }
    }

    /// Emits the elements of all `sources` as they arrive.
    public static func merge(_ sources: Observable<Element>...) -> Observable<Element> {
        merge(sources)
    }
}

extension ObservableType {
    /// Merges this sequence with `others`; see `Observable.merge(_:)`.
    public func merge(with others: Observable<Element>...) -> Observable<Element> {
        Observable.merge([asObservable()] + others)
    }
}

/// How many sources are still running.
final class ActiveCount: Sendable {
    private let count: Atomic<Int>

    init(_ count: Int) { self.count = Atomic(count) }

    func increment() { count.wrappingAdd(1, ordering: .acquiringAndReleasing) }

    /// Returns `true` when this call brought the count to zero.
    func decrement() -> Bool {
        count.wrappingSubtract(1, ordering: .acquiringAndReleasing).newValue == 0
    }
}
