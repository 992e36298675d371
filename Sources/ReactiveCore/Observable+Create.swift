extension Observable {
    /// Creates an observable from a subscribe closure.
    ///
    /// The closure receives an observer and returns what to release on dispose.
    /// The observer it receives is the core's grammar guard: it may be called from
    /// any thread and re-entrantly; calls are serialized, everything after the first
    /// terminal event or after dispose is dropped.
    ///
    /// ```swift
    /// let ticks = Observable<Int>.create { observer in
    ///     let timer = startTimer { observer.onNext($0) }
    ///     return Disposables.create { timer.cancel() }
    /// }
    /// ```
    public static func create(
        _ subscribe: @escaping @Sendable (AnyObserver<Element>) -> any Disposable
    ) -> Observable<Element> {
        Observable { observer, cancel in
            let guarded = SerializedObserver(observer, cancel: cancel)
            let resource = subscribe(AnyObserver(guarded))
            return BinaryDisposable(guarded, resource)
        }
    }

    /// A sequence of one element, then completion.
    public static func just(_ element: Element) -> Observable<Element> {
        Observable { observer, _ in
            observer.on(.next(element))
            observer.on(.completed)
            return NopDisposable()
        }
    }

    /// A sequence that completes at once.
    public static func empty() -> Observable<Element> {
        Observable { observer, _ in
            observer.on(.completed)
            return NopDisposable()
        }
    }

    /// A sequence that never emits anything.
    public static func never() -> Observable<Element> {
        Observable { _, _ in NopDisposable() }
    }

    /// A sequence that fails at once with `error`.
    public static func error(_ error: any Error) -> Observable<Element> {
        Observable { observer, _ in
            observer.on(.error(error))
            return NopDisposable()
        }
    }

    /// Emits the elements of a sequence synchronously, then completes.
    ///
    /// It stops as soon as the subscription is disposed, even from downstream during
    /// the synchronous emission, so `from(1...).take(3)` terminates.
    public static func from<S: Sequence & Sendable>(_ sequence: S) -> Observable<Element>
    where S.Element == Element {
        Observable { observer, cancel in
            for element in sequence {
                if cancel.isDisposed { return NopDisposable() }
                observer.on(.next(element))
            }
            if !cancel.isDisposed { observer.on(.completed) }
            return NopDisposable()
        }
    }

    /// Emits the given elements synchronously, then completes.
    public static func of(_ elements: Element...) -> Observable<Element> {
        from(elements)
    }

    /// Calls `factory` on every subscription and subscribes to the observable it returns.
    ///
    /// If the factory throws, the subscriber receives the error.
    public static func deferred(
        _ factory: @escaping @Sendable () throws -> Observable<Element>
    ) -> Observable<Element> {
        Observable { observer, cancel in
            do {
                return try factory().run(observer, cancel)
            } catch {
                observer.on(.error(error))
                return NopDisposable()
            }
        }
    }
}
