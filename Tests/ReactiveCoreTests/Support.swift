import ReactiveTesting
import Synchronization
import Testing

@testable import ReactiveCore

/// An error for tests; equal when codes are equal.
struct TestError: Error, Equatable {
    let code: Int
    init(_ code: Int = 0) { self.code = code }
}

/// A thread-safe event log for tests that do not use the TestScheduler.
final class EventLog<Element: Sendable>: ObserverType {
    private let storage = Mutex<[Event<Element>]>([])

    var events: [Event<Element>] { storage.withLock { $0 } }
    var elements: [Element] { events.compactMap(\.element) }

    func on(_ event: Event<Element>) {
        storage.withLock { $0.append(event) }
    }
}

/// Counts something across threads.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    func increment() { value.wrappingAdd(1, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
}

/// A class whose lifetime memory tests watch.
final class Token: Sendable {}

/// Checks the grammar `next* (error | completed)?` on a recorded sequence.
func obeysGrammar<Element>(_ events: [Event<Element>]) -> Bool {
    guard let firstStop = events.firstIndex(where: \.isStopEvent) else { return true }
    return firstStop == events.count - 1
}
