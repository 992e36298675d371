extension ObservableType {
    /// Maps each element to an observable and forwards only the newest one's elements.
    ///
    /// A new element unsubscribes from the previous inner observable; events that a
    /// stale inner observable emits concurrently are dropped. Completes when the
    /// source and the current inner observable completed.
    public func flatMapLatest<Inner: ObservableType>(
        _ selector: @escaping @Sendable (Element) throws -> Inner
    ) -> Observable<Inner.Element> {
        let source = asObservable()
        return Observable { observer, cancel in
            let output = SerializedObserver(observer, cancel: cancel)
            let state = OutputState(LatestState())
            let current = SerialDisposable()
            let group = CompositeDisposable(output, current)
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
                            var generation: UInt64 = 0
                            output.send {
                                state.value.generation += 1
                                state.value.innerRunning = true
                                generation = state.value.generation
                                return nil
                            }
                            let mine = generation
                            let slot = SingleAssignmentDisposable(parent: group)
                            current.replace(with: slot)
                            slot.setDisposable(
                                inner.run(
                                    AnyObserver<Inner.Element> { innerEvent in
                                        let ended = output.send {
                                            guard state.value.generation == mine else { return nil }
                                            guard case .completed = innerEvent else { return innerEvent }
                                            state.value.innerRunning = false
                                            return state.value.sourceDone ? .completed : nil
                                        }
                                        if ended { group.dispose() }
                                    }, slot))
                        case .error(let error):
                            output.on(.error(error))
                            group.dispose()
                        case .completed:
                            let ended = output.send {
                                state.value.sourceDone = true
                                return state.value.innerRunning ? nil : .completed
                            }
                            if ended { group.dispose() }
                        }
                    }, group))
            return group
        }
    }
}

private struct LatestState {
    var generation: UInt64 = 0
    var innerRunning = false
    var sourceDone = false
}
