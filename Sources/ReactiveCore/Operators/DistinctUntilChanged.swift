extension ObservableType where Element: Equatable {
    /// Drops elements equal to the one just before them.
    public func distinctUntilChanged() -> Observable<Element> {
        distinctUntilChanged(by: { $0 }, areEqual: ==)
    }
}

extension ObservableType {
    /// Drops elements whose key equals the key of the element just before them.
    public func distinctUntilChanged<Key: Equatable & Sendable>(
        by key: @escaping @Sendable (Element) throws -> Key
    ) -> Observable<Element> {
        distinctUntilChanged(by: key, areEqual: ==)
    }

    /// Drops elements that `areEqual` reports equal to the element just before them.
    public func distinctUntilChanged(
        _ areEqual: @escaping @Sendable (Element, Element) throws -> Bool
    ) -> Observable<Element> {
        distinctUntilChanged(by: { $0 }, areEqual: areEqual)
    }

    private func distinctUntilChanged<Key: Sendable>(
        by key: @escaping @Sendable (Element) throws -> Key,
        areEqual: @escaping @Sendable (Key, Key) throws -> Bool
    ) -> Observable<Element> {
        let source = asObservable()
        return Observable { observer, cancel in
            let state = SerialBox<(last: Key?, stopped: Bool)>((nil, false))
            return source.run(
                AnyObserver<Element> { event in
                    guard !state.value.stopped else { return }
                    switch event {
                    case .next(let element):
                        do {
                            let current = try key(element)
                            if let last = state.value.last, try areEqual(last, current) { return }
                            state.value.last = current
                            observer.on(event)
                        } catch {
                            state.value.stopped = true
                            observer.on(.error(error))
                        }
                    case .error, .completed:
                        observer.on(event)
                    }
                }, cancel)
        }
    }
}
