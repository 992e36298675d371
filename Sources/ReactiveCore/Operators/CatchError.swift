extension ObservableType {
    /// On error, continues with the observable that `handler` returns for that error.
    ///
    /// If `handler` throws, the sequence fails with the thrown error.
    public func catchError<Recovery: ObservableType>(
        _ handler: @escaping @Sendable (any Error) throws -> Recovery
    ) -> Observable<Element> where Recovery.Element == Element {
        let source = asObservable()
        return Observable { observer, cancel in
            let current = SerialDisposable()
            let first = SingleAssignmentDisposable(parent: cancel)
            current.replace(with: first)
            first.setDisposable(
                source.run(
                    AnyObserver<Element> { event in
                        guard case .error(let error) = event else {
                            observer.on(event)
                            return
                        }
                        let recovery: Observable<Element>
                        do {
                            recovery = try handler(error).asObservable()
                        } catch {
                            observer.on(.error(error))
                            return
                        }
                        let slot = SingleAssignmentDisposable(parent: cancel)
                        current.replace(with: slot)
                        slot.setDisposable(recovery.run(observer, slot))
                    }, first))
            return current
        }
    }

    /// On error, emits `element` and completes.
    public func catchErrorJustReturn(_ element: Element) -> Observable<Element> {
        catchError { _ in Observable.just(element) }
    }
}
