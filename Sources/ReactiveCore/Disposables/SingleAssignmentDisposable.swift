import Synchronization

/// A slot for one disposable that may be filled after it was disposed.
///
/// Operators create one before subscribing upstream so they can stop the upstream
/// from inside a synchronous subscribe (a `take(1)` on `just`): if `dispose()` comes
/// first, the disposable set later is disposed at once.
///
/// When created with a `parent`, `isDisposed` is also true once the parent is
/// disposed, so a synchronous source sees a dispose made further downstream.
public final class SingleAssignmentDisposable: Cancelable {
    private let disposed = Atomic<Bool>(false)
    private let slot = Mutex<(any Disposable)?>(nil)
    private let parent: (any Cancelable)?

    /// Creates an empty slot.
    public init() { parent = nil }

    /// Creates an empty slot that also reports disposed once `parent` is.
    public init(parent: any Cancelable) { self.parent = parent }

    /// Whether this slot, or its parent, has been disposed.
    public var isDisposed: Bool {
        disposed.load(ordering: .acquiring) || (parent?.isDisposed ?? false)
    }

    /// Stores the disposable, or disposes it at once if the slot was already disposed.
    ///
    /// Setting twice is a programming error.
    public func setDisposable(_ disposable: any Disposable) {
        let disposeNow = slot.withLock { slot -> Bool in
            if disposed.load(ordering: .acquiring) { return true }
            precondition(slot == nil, "SingleAssignmentDisposable set twice")
            slot = disposable
            return false
        }
        if disposeNow { disposable.dispose() }
    }

    /// Disposes the stored disposable (or the one set later); idempotent.
    public func dispose() {
        guard !disposed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let taken = slot.withLock { slot in
            let taken = slot
            slot = nil
            return taken
        }
        taken?.dispose()
    }
}
