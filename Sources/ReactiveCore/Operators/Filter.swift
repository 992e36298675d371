import Synchronization

extension ObservableType {
    /// Forwards only the elements for which `isIncluded` returns `true`.
    ///
    /// If `isIncluded` throws, the sequence fails with that error.
    /// - Complexity: O(1) per element, no allocation per element.
    @inlinable
    public func filter(_ isIncluded: @escaping @Sendable (Element) throws -> Bool) -> Observable<Element> {
        let source = asObservable()
        return Observable { observer, cancel in
            source.run(FilterSink(isIncluded: isIncluded, observer: observer), cancel)
        }
    }
}

@usableFromInline
final class FilterSink<Element>: ObserverType {
    @usableFromInline let isIncluded: @Sendable (Element) throws -> Bool
    @usableFromInline let observer: AnyObserver<Element>
    @usableFromInline let stopped = Atomic<Bool>(false)

    @usableFromInline init(isIncluded: @escaping @Sendable (Element) throws -> Bool, observer: AnyObserver<Element>) {
        self.isIncluded = isIncluded
        self.observer = observer
    }

    @inlinable func on(_ event: Event<Element>) {
        guard !stopped.load(ordering: .relaxed) else { return }
        switch event {
        case .next(let element):
            let included: Bool
            do {
                included = try isIncluded(element)
            } catch {
                stopped.store(true, ordering: .relaxed)
                observer.on(.error(error))
                return
            }
            if included { observer.on(event) }
        case .error, .completed:
            observer.on(event)
        }
    }
}
