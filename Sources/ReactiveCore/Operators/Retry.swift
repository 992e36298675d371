import Synchronization

extension ObservableType {
    /// Resubscribes to the source after an error, for at most `maxAttempts` subscriptions
    /// in all (`nil`: forever); the last error is forwarded.
    ///
    /// Resubscription is iterative, not recursive, so a source that fails
    /// synchronously does not grow the stack.
    public func retry(_ maxAttempts: Int? = nil) -> Observable<Element> {
        let source = asObservable()
        return Observable { observer, cancel in
            let sink = RetrySink(source: source, observer: observer, maxAttempts: maxAttempts, cancel: cancel)
            sink.resubscribe()
            return sink.current
        }
    }
}

private final class RetrySink<Element: Sendable>: Sendable {
    let source: Observable<Element>
    let observer: AnyObserver<Element>
    let maxAttempts: Int?
    let current = SerialDisposable()
    let cancel: any Cancelable
    /// Pending resubscriptions; the thread that raises it from zero runs the loop.
    let pending = Atomic<Int>(0)
    let attempts = Atomic<Int>(0)

    init(source: Observable<Element>, observer: AnyObserver<Element>, maxAttempts: Int?, cancel: any Cancelable) {
        self.source = source
        self.observer = observer
        self.maxAttempts = maxAttempts
        self.cancel = cancel
    }

    func resubscribe() {
        guard pending.wrappingAdd(1, ordering: .acquiringAndReleasing).oldValue == 0 else { return }
        repeat {
            if current.isDisposed || cancel.isDisposed { return }
            attempts.wrappingAdd(1, ordering: .relaxed)
            let slot = SingleAssignmentDisposable(parent: cancel)
            current.replace(with: slot)
            slot.setDisposable(source.run(AnyObserver { self.on($0) }, slot))
        } while pending.wrappingSubtract(1, ordering: .acquiringAndReleasing).newValue != 0
    }

    private func on(_ event: Event<Element>) {
        guard case .error = event else {
            observer.on(event)
            return
        }
        if let maxAttempts, attempts.load(ordering: .relaxed) >= maxAttempts {
            observer.on(event)
        } else {
            resubscribe()
        }
    }
}
