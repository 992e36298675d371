extension ObservableType {
    /// Subscribes to the source on `scheduler`.
    ///
    /// Use it when subscribing has side effects that belong on a given thread
    /// (opening a resource on the store's thread). Disposing takes effect at once,
    /// on the disposing thread, so nothing is delivered after `dispose()` returns.
    public func subscribe(on scheduler: any Scheduler) -> Observable<Element> {
        let source = asObservable()
        return Observable { observer, cancel in
            let inner = SingleAssignmentDisposable(parent: cancel)
            let scheduled = scheduler.schedule {
                guard !inner.isDisposed else { return }
                inner.setDisposable(source.run(observer, inner))
            }
            return Disposables.create(scheduled, inner)
        }
    }
}
