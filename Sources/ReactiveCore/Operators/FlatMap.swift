extension ObservableType {
    /// Maps each element to an observable and merges the elements of all of them.
    ///
    /// Completes when the source and every inner observable completed; fails on the
    /// first error, from the source, an inner observable or `selector`.
    public func flatMap<Inner: ObservableType>(
        _ selector: @escaping @Sendable (Element) throws -> Inner
    ) -> Observable<Inner.Element> {
        let source = asObservable()
        return Observable { observer, cancel in
            let output = SerializedObserver(observer, cancel: cancel)
            let group = CompositeDisposable()
            group.insert(output)
            let active = ActiveCount(1)
            let finish = { @Sendable in
                if active.decrement() {
                    output.on(.completed)
                    group.dispose()
                }
            }
            group.insert(
                source.run(
                    AnyObserver<Element> { event in
                        switch event {
                        case .next(let element):
                            let inner: Observable<Inner.Element>
                            do {
                                inner = try selector(element).asObservable()
                            } catch {
                                output.on(.error(error))
                                group.dispose()
                                return
                            }
                            let slot = SingleAssignmentDisposable(parent: group)
                            guard let key = group.insert(slot) else { return }
                            active.increment()
                            slot.setDisposable(
                                inner.run(
                                    AnyObserver<Inner.Element> { innerEvent in
                                        switch innerEvent {
                                        case .next:
                                            output.on(innerEvent)
                                        case .error:
                                            output.on(innerEvent)
                                            group.dispose()
                                        case .completed:
                                            group.forget(key)
                                            finish()
                                        }
                                    }, slot))
                        case .error(let error):
                            output.on(.error(error))
                            group.dispose()
                        case .completed:
                            finish()
                        }
                    }, group))
            return group
        }
    }
}
