extension ObservableType {
    /// Forwards the first `count` elements, then completes and unsubscribes from the source.
    ///
    /// `take(0)` completes at once without subscribing.
    public func take(_ count: Int) -> Observable<Element> {
        let source = asObservable()
        return Observable { observer, cancel in
            guard count > 0 else {
                observer.on(.completed)
                return NopDisposable()
            }
            let upstream = SingleAssignmentDisposable(parent: cancel)
            let remaining = SerialBox(count)
            upstream.setDisposable(
                source.run(
                    AnyObserver<Element> { event in
                        guard remaining.value > 0 else { return }
                        switch event {
                        case .next:
                            remaining.value -= 1
                            observer.on(event)
                            if remaining.value == 0 {
                                observer.on(.completed)
                                upstream.dispose()
                            }
                        case .error, .completed:
                            remaining.value = 0
                            observer.on(event)
                        }
                    }, upstream))
            return upstream
        }
    }
}
