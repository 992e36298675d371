import Synchronization

extension ObservableType {
    /// Transforms each element and drops the `nil` results.
    ///
    /// If `transform` throws, the sequence fails with that error.
    /// - Complexity: O(1) per element, no allocation per element.
    @inlinable
    public func compactMap<Result: Sendable>(
        _ transform: @escaping @Sendable (Element) throws -> Result?
    ) -> Observable<Result> {
        let source = asObservable()
        return Observable { observer, cancel in
            source.run(CompactMapSink(transform: transform, observer: observer), cancel)
        }
    }
}

@usableFromInline
final class CompactMapSink<Source, Result>: ObserverType {
    @usableFromInline let transform: @Sendable (Source) throws -> Result?
    @usableFromInline let observer: AnyObserver<Result>
    @usableFromInline let stopped = Atomic<Bool>(false)

    @usableFromInline init(transform: @escaping @Sendable (Source) throws -> Result?, observer: AnyObserver<Result>) {
        self.transform = transform
        self.observer = observer
    }

    @inlinable func on(_ event: Event<Source>) {
        guard !stopped.load(ordering: .relaxed) else { return }
        switch event {
        case .next(let element):
            let result: Result?
            do {
                result = try transform(element)
            } catch {
                stopped.store(true, ordering: .relaxed)
                observer.on(.error(error))
                return
            }
            if let result { observer.on(.next(result)) }
        case .error(let error):
            observer.on(.error(error))
        case .completed:
            observer.on(.completed)
        }
    }
}
