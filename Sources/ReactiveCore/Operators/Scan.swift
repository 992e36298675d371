extension ObservableType {
    /// Emits the running accumulation of the elements, starting from `seed`.
    ///
    /// Each subscription has its own accumulator. If `accumulator` throws, the sequence fails.
    public func scan<Accumulate: Sendable>(
        _ seed: Accumulate,
        accumulator: @escaping @Sendable (Accumulate, Element) throws -> Accumulate
    ) -> Observable<Accumulate> {
        let source = asObservable()
        return Observable { observer, cancel in
            let state = SerialBox<(value: Accumulate, stopped: Bool)>((seed, false))
            return source.run(
                AnyObserver<Element> { event in
                    guard !state.value.stopped else { return }
                    switch event {
                    case .next(let element):
                        do {
                            let next = try accumulator(state.value.value, element)
                            state.value.value = next
                            observer.on(.next(next))
                        } catch {
                            state.value.stopped = true
                            observer.on(.error(error))
                        }
                    case .error(let error):
                        observer.on(.error(error))
                    case .completed:
                        observer.on(.completed)
                    }
                }, cancel)
        }
    }
}
