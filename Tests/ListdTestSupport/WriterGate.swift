import Dispatch
import Synchronization

/// Holds the SQLite writer thread inside its group-commit hook, so a test can
/// queue a write behind a commit that has happened but not been answered.
public final class WriterGate: Sendable {
    /// A closed gate.
    public init() {}

    private let armed = Atomic<Bool>(false)
    private let entered = Atomic<Bool>(false)
    private let release = DispatchSemaphore(value: 0)

    /// Makes the next group commit wait in the hook until ``open()``.
    public func arm() {
        entered.store(false, ordering: .releasing)
        armed.store(true, ordering: .releasing)
    }

    /// The hook: waits when armed.
    public func hook(_ writes: Int) {
        guard armed.exchange(false, ordering: .acquiringAndReleasing) else { return }
        entered.store(true, ordering: .releasing)
        release.wait()
    }

    /// Whether the writer is waiting in the hook.
    public var isHolding: Bool { entered.load(ordering: .acquiring) }

    /// Lets the writer go on.
    public func open() { release.signal() }
}

/// Waits (without a fixed sleep) until `condition` holds, failing after
/// `limit` (10 s by default) times ``testWaitScale``: under CI's load a
/// store's first write once took longer than 10 s to reach its writer.
public func waitUntil(_ what: String, within limit: Duration = .seconds(10), _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + limit * testWaitScale
    while !condition() {
        guard ContinuousClock.now < deadline else {
            throw WaitTimeout(what: what)
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// A ``waitUntil(_:_:)`` that ran out of time, naming what it waited for.
public struct WaitTimeout: Error, CustomStringConvertible {
    /// What was waited for.
    public var what: String
    /// `timed out waiting until …`
    public var description: String { "timed out waiting until \(what)" }
}

/// The result of a call started in a task, readable from a ``waitUntil(_:_:)``
/// condition: a test can wait for it to arrive with a deadline rather than
/// hang awaiting a task that may never finish.
public final class Outcome<Value: Sendable>: Sendable {
    private let result = Mutex<Result<Value, any Error>?>(nil)

    /// Starts `body` in a task and records what it returns or throws.
    public init(_ body: @escaping @Sendable () async throws -> Value) {
        Task {
            let outcome: Result<Value, any Error>
            do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
            self.result.withLock { $0 = outcome }
        }
    }

    /// Whether the call has returned or thrown.
    public var isDone: Bool { result.withLock { $0 != nil } }

    /// What the call returned, rethrowing what it threw; `nil` while it runs.
    public func value() throws -> Value? {
        try result.withLock { $0 }?.get()
    }
}
