extension ObservableType {
    /// Drops the first `count` elements and forwards the rest.
    public func skip(_ count: Int) -> Observable<Element> {
        let source = asObservable()
        guard count > 0 else { return source }
        return Observable { observer, cancel in
            let remaining = SerialBox(count)
            return source.run(
                AnyObserver<Element> { event in
                    if case .next = event, remaining.value > 0 {
                        remaining.value -= 1
                        return
                    }
                    observer.on(event)
                }, cancel)
        }
    }
}
