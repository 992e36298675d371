import Synchronization

/// Holds one disposable at a time; replacing it disposes the previous one.
///
/// `flatMapLatest`, `catchError` and `retry` use it to swap inner subscriptions.
/// After `dispose()`, anything assigned is disposed at once.
public final class SerialDisposable: Cancelable {
    private struct State {
        var current: (any Disposable)?
        var disposed = false
    }

    private let state = Mutex(State())

    /// Creates an empty serial disposable.
    public init() {}

    /// Whether the serial disposable has been disposed.
    public var isDisposed: Bool { state.withLock { $0.disposed } }

    /// The current disposable; setting it disposes the previous one.
    public var disposable: (any Disposable)? {
        get { state.withLock { $0.current } }
        set { replace(with: newValue) }
    }

    /// Replaces the current disposable, disposing the previous one (or the new one if already disposed).
    public func replace(with disposable: (any Disposable)?) {
        let (old, disposeNew) = state.withLock { state -> ((any Disposable)?, Bool) in
            if state.disposed { return (nil, true) }
            let old = state.current
            state.current = disposable
            return (old, false)
        }
        old?.dispose()
        if disposeNew { disposable?.dispose() }
    }

    /// Disposes the current disposable; idempotent.
    public func dispose() {
        let old = state.withLock { state -> (any Disposable)? in
            guard !state.disposed else { return nil }
            state.disposed = true
            let old = state.current
            state.current = nil
            return old
        }
        old?.dispose()
    }
}
