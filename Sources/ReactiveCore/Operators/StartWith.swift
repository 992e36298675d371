extension ObservableType {
    /// Emits `elements` first, then the elements of this sequence.
    public func startWith(_ elements: Element...) -> Observable<Element> {
        let source = asObservable()
        return Observable { observer, cancel in
            for element in elements {
                if cancel.isDisposed { return NopDisposable() }
                observer.on(.next(element))
            }
            return source.run(observer, cancel)
        }
    }
}
