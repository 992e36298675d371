extension ObservableType {
    /// Forwards elements until `other` emits an element, then completes.
    ///
    /// An error from `other` fails the sequence; completion of `other` changes nothing.
    /// Both subscriptions are released when the sequence ends.
    public func take<Other: ObservableType>(until other: Other) -> Observable<Element> {
        let source = asObservable()
        let trigger = other.asObservable()
        return Observable { observer, cancel in
            let output = SerializedObserver(observer, cancel: cancel)
            let group = CompositeDisposable()
            group.insert(output)
            group.insert(
                trigger.subscribe(
                    AnyObserver<Other.Element> { event in
                        switch event {
                        case .next:
                            output.on(.completed)
                            group.dispose()
                        case .error(let error):
                            output.on(.error(error))
                            group.dispose()
                        case .completed:
                            break
                        }
                    }))
            guard !group.isDisposed else { return group }
            group.insert(
                source.run(
                    AnyObserver<Element> { event in
                        if output.send({ event }) { group.dispose() }
                    }, group))
            return group
        }
    }

    /// Same as `take(until:)`, under the RxSwift name.
    public func takeUntil<Other: ObservableType>(_ other: Other) -> Observable<Element> {
        take(until: other)
    }
}
