import Synchronization

/// A group of disposables released together.
///
/// Adding to a disposed composite disposes the newcomer at once, so no resource
/// escapes a race between `insert` and `dispose`.
public final class CompositeDisposable: Cancelable {
    /// A key to remove one disposable from the composite.
    public struct Key: Hashable, Sendable {
        fileprivate let value: UInt64
    }

    private struct State {
        var items: [UInt64: any Disposable] = [:]
        var nextKey: UInt64 = 0
        var disposed = false
    }

    private let state = Mutex(State())

    /// Creates an empty composite.
    public init() {}

    /// Creates a composite holding `disposables`.
    public init(_ disposables: [any Disposable]) {
        state.withLock { state in
            for disposable in disposables {
                state.items[state.nextKey] = disposable
                state.nextKey += 1
            }
        }
    }

    /// Creates a composite holding `disposables`.
    public convenience init(_ disposables: any Disposable...) {
        self.init(disposables)
    }

    /// Whether the composite has been disposed.
    public var isDisposed: Bool { state.withLock { $0.disposed } }

    /// The number of disposables held.
    public var count: Int { state.withLock { $0.items.count } }

    /// Adds a disposable; returns `nil` (and disposes it) if the composite is already disposed.
    @discardableResult
    public func insert(_ disposable: any Disposable) -> Key? {
        let key = state.withLock { state -> Key? in
            guard !state.disposed else { return nil }
            let key = state.nextKey
            state.nextKey += 1
            state.items[key] = disposable
            return Key(value: key)
        }
        if key == nil { disposable.dispose() }
        return key
    }

    /// Removes the disposable for `key` and disposes it.
    public func remove(for key: Key) {
        let removed = state.withLock { $0.items.removeValue(forKey: key.value) }
        removed?.dispose()
    }

    /// Removes the disposable for `key` without disposing it (it has already finished).
    func forget(_ key: Key) {
        _ = state.withLock { $0.items.removeValue(forKey: key.value) }
    }

    /// Disposes every held disposable; idempotent.
    public func dispose() {
        let items = state.withLock { state -> [any Disposable] in
            guard !state.disposed else { return [] }
            state.disposed = true
            let items = state.items.sorted { $0.key < $1.key }.map(\.value)
            state.items = [:]
            return items
        }
        for item in items { item.dispose() }
    }
}
