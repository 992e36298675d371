import Synchronization

extension ObservableType {
    /// Transforms each element with `transform`.
    ///
    /// If `transform` throws, the sequence fails with that error and nothing more is forwarded.
    /// - Complexity: O(1) per element, no allocation per element.
    @inlinable
    public func map<Result: Sendable>(
        _ transform: @escaping @Sendable (Element) throws -> Result
    ) -> Observable<Result> {
        let source = asObservable()
        return Observable { observer, cancel in
            source.run(MapSink(transform: transform, observer: observer), cancel)
        }
    }
}

@usableFromInline
final class MapSink<Source, Result>: ObserverType {
    @usableFromInline let transform: @Sendable (Source) throws -> Result
    @usableFromInline let observer: AnyObserver<Result>
    @usableFromInline let stopped = Atomic<Bool>(false)

    @usableFromInline init(transform: @escaping @Sendable (Source) throws -> Result, observer: AnyObserver<Result>) {
        self.transform = transform
        self.observer = observer
    }

    @inlinable func on(_ event: Event<Source>) {
        // Relaxed is enough: calls are serialized by the grammar; the flag only
        // silences the source after this sink failed.
        guard !stopped.load(ordering: .relaxed) else { return }
        switch event {
        case .next(let element):
            let result: Result
            do {
                result = try transform(element)
            } catch {
                stopped.store(true, ordering: .relaxed)
                observer.on(.error(error))
                return
            }
            observer.on(.next(result))
        case .error(let error):
            observer.on(.error(error))
        case .completed:
            observer.on(.completed)
        }
    }
}
