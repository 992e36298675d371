import Synchronization

/// A resource, typically a subscription, that can be released.
///
/// `dispose()` is idempotent and may be called from any thread; after it returns
/// the subscription delivers nothing new.
public protocol Disposable: Sendable {
    /// Releases the resource; further calls do nothing.
    func dispose()
}

/// A disposable that can tell whether it has been disposed.
///
/// Synchronous sources (`from(_:)`, `startWith`) check it between elements so that
/// a downstream `take(2)` stops an endless sequence.
public protocol Cancelable: Disposable {
    /// Whether `dispose()` has been called.
    var isDisposed: Bool { get }
}

extension Disposable {
    /// Adds this disposable to a bag, which disposes it when the bag is released.
    public func disposed(by bag: DisposeBag) {
        bag.insert(self)
    }
}

/// Factory functions for the common disposables.
public enum Disposables {
    /// A disposable that does nothing, for subscriptions with nothing to release.
    public static func create() -> any Cancelable { NopDisposable() }

    /// A disposable that runs `action` exactly once, on the first `dispose()`.
    ///
    /// The closure is released after it ran, so what it captures is freed.
    public static func create(with action: @escaping @Sendable () -> Void) -> any Cancelable {
        AnonymousDisposable(action)
    }

    /// A disposable that disposes both `first` and `second`.
    public static func create(_ first: any Disposable, _ second: any Disposable) -> any Cancelable {
        BinaryDisposable(first, second)
    }

    /// A disposable that disposes all of `disposables`.
    public static func create(_ disposables: any Disposable...) -> any Cancelable {
        CompositeDisposable(disposables)
    }
}

/// Nothing to release.
@usableFromInline
struct NopDisposable: Cancelable {
    @inlinable init() {}
    @inlinable var isDisposed: Bool { false }
    @inlinable func dispose() {}
}

/// Runs a closure once on dispose, then drops it.
final class AnonymousDisposable: Cancelable {
    private let action: Mutex<(@Sendable () -> Void)?>
    private let disposed = Atomic<Bool>(false)

    init(_ action: @escaping @Sendable () -> Void) {
        self.action = Mutex(action)
    }

    var isDisposed: Bool { disposed.load(ordering: .acquiring) }

    func dispose() {
        guard !disposed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let action = self.action.withLock { slot in
            let taken = slot
            slot = nil
            return taken
        }
        action?()
    }
}

/// Two disposables released together; cheaper than a composite for the common pair.
final class BinaryDisposable: Cancelable {
    private let pair: Mutex<(any Disposable, any Disposable)?>

    init(_ first: any Disposable, _ second: any Disposable) {
        pair = Mutex((first, second))
    }

    var isDisposed: Bool { pair.withLock { $0 == nil } }

    func dispose() {
        let taken = pair.withLock { slot in
            let taken = slot
            slot = nil
            return taken
        }
        taken?.0.dispose()
        taken?.1.dispose()
    }
}
