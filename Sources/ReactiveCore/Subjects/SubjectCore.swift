import Synchronization

/// The fan-out engine shared by the subjects, properties and `share`.
///
/// Every action (an event, or attaching a new observer) goes through one queue,
/// drained by whichever thread finds the subject idle. The drainer applies the
/// action under the lock (append to the replay buffer, record the terminal event,
/// add the observer and copy what it must replay), takes an immutable snapshot of
/// the observer array, releases the lock and delivers. So:
///
/// - each observer receives a serialized, grammar-respecting sequence, even when
///   many threads call `on(_:)` at once;
/// - an observer that emits into the same subject during delivery does not
///   deadlock: its event is queued and delivered, to everyone, after the current
///   event has reached all observers;
/// - a newcomer's replay is ordered with respect to the other events (no element
///   is both replayed and delivered, none is skipped).
///
/// Disposing a subscription removes the observer under the lock and sets its
/// atomic flag, which the delivery loop checks, so nothing new reaches it after
/// `dispose()` returns.
///
/// - Complexity: O(1) per event plus O(n) delivery to n observers; no allocation
///   per event once the queue has grown (the snapshot is a retained copy-on-write array).
@usableFromInline
final class SubjectCore<Element: Sendable>: Sendable {
    /// The disposable handed to a subscriber.
    @usableFromInline
    final class Token: Cancelable {
        @usableFromInline weak let core: SubjectCore<Element>?
        @usableFromInline let disposed = Atomic<Bool>(false)

        @usableFromInline init(core: SubjectCore<Element>) { self.core = core }

        @inlinable var isDisposed: Bool { disposed.load(ordering: .acquiring) }

        @usableFromInline func dispose() {
            guard !disposed.exchange(true, ordering: .acquiringAndReleasing) else { return }
            core?.remove(self)
        }
    }

    @usableFromInline
    struct Entry: Sendable {
        @usableFromInline let observer: AnyObserver<Element>
        @usableFromInline let token: Token

        @inlinable init(observer: AnyObserver<Element>, token: Token) {
            self.observer = observer
            self.token = token
        }
    }

    @usableFromInline
    enum Action {
        case event(Event<Element>)
        case attach(Entry)
    }

    @usableFromInline
    enum Work {
        case broadcast(Event<Element>, ContiguousArray<Entry>)
        case replay(Entry, [Element], Event<Element>?)
    }

    @usableFromInline
    struct State {
        @usableFromInline var entries: ContiguousArray<Entry> = []
        @usableFromInline var buffer: RingBuffer<Element>
        @usableFromInline var terminal: Event<Element>?
        @usableFromInline var stopped = false
        @usableFromInline var draining = false
        @usableFromInline var pending: [Action] = []
        @usableFromInline var head = 0

        @usableFromInline init(buffer: RingBuffer<Element>) { self.buffer = buffer }

        /// Applies one action; returns what to deliver outside the lock.
        @inlinable mutating func apply(_ action: Action) -> Work? {
            switch action {
            case .event(let event):
                if case .next(let element) = event {
                    buffer.append(element)
                    return entries.isEmpty ? nil : .broadcast(event, entries)
                }
                terminal = event
                let observers = entries
                entries = []
                return observers.isEmpty ? nil : .broadcast(event, observers)
            case .attach(let entry):
                if entry.token.isDisposed { return nil }
                let replay = buffer.elements
                if terminal == nil { entries.append(entry) }
                if replay.isEmpty && terminal == nil { return nil }
                return .replay(entry, replay, terminal)
            }
        }

        /// Takes the next action that produces work, or ends the drain.
        @inlinable mutating func next() -> Work? {
            while head < pending.count {
                let action = pending[head]
                head += 1
                if let work = apply(action) { return work }
            }
            pending.removeAll(keepingCapacity: pending.capacity <= 64)
            head = 0
            draining = false
            return nil
        }
    }

    @usableFromInline let state: Mutex<State>

    /// Creates a core that replays the last `replay` elements to newcomers, starting with `seed`.
    @usableFromInline init(replay: Int, seed: [Element] = []) {
        var buffer = RingBuffer<Element>(capacity: replay)
        for element in seed { buffer.append(element) }
        state = Mutex(State(buffer: buffer))
    }

    var hasObservers: Bool { state.withLock { !$0.entries.isEmpty } }

    var observerCount: Int { state.withLock { $0.entries.count } }

    /// The newest buffered element and the terminal event, if any.
    var latest: (element: Element?, terminal: Event<Element>?) {
        state.withLock { ($0.buffer.last, $0.terminal) }
    }

    var isStopped: Bool { state.withLock { $0.stopped } }

    @inlinable func on(_ event: Event<Element>) {
        let first = state.withLock { state -> Work? in
            guard !state.stopped else { return nil }
            if event.isStopEvent { state.stopped = true }
            if state.draining {
                state.pending.append(.event(event))
                return nil
            }
            state.draining = true
            if let work = state.apply(.event(event)) { return work }
            return state.next()
        }
        if let first { run(first) }
    }

    /// Queues an event without delivering it; returns whether the caller must call `drain()`.
    ///
    /// For callers that must order their own state change and the event under
    /// their own lock (ObservableCollection); they drain after releasing it.
    @inlinable func enqueue(_ event: Event<Element>) -> Bool {
        state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            if event.isStopEvent { state.stopped = true }
            state.pending.append(.event(event))
            if state.draining { return false }
            state.draining = true
            return true
        }
    }

    /// Delivers what `enqueue` queued; call only when `enqueue` returned `true`.
    @inlinable func drain() {
        if let first = state.withLock({ $0.next() }) { run(first) }
    }

    @inlinable func subscribe(_ observer: AnyObserver<Element>) -> any Disposable {
        let token = Token(core: self)
        let entry = Entry(observer: observer, token: token)
        let first = state.withLock { state -> Work? in
            if state.draining {
                state.pending.append(.attach(entry))
                return nil
            }
            state.draining = true
            if let work = state.apply(.attach(entry)) { return work }
            return state.next()
        }
        if let first { run(first) }
        return token
    }

    @usableFromInline func remove(_ token: Token) {
        // Returned so the observer is released outside the lock.
        let removed = state.withLock { state -> Entry? in
            guard let index = state.entries.firstIndex(where: { $0.token === token }) else { return nil }
            return state.entries.remove(at: index)
        }
        _ = removed
    }

    @inlinable func run(_ first: Work) {
        var work = first
        while true {
            perform(work)
            guard let next = state.withLock({ $0.next() }) else { return }
            work = next
        }
    }

    @inlinable func perform(_ work: Work) {
        switch work {
        case .broadcast(let event, let observers):
            for entry in observers where !entry.token.isDisposed {
                entry.observer.on(event)
            }
        case .replay(let entry, let elements, let terminal):
            for element in elements {
                if entry.token.isDisposed { return }
                entry.observer.on(.next(element))
            }
            if let terminal, !entry.token.isDisposed { entry.observer.on(terminal) }
        }
    }
}

/// A bounded FIFO keeping the newest `capacity` elements.
@usableFromInline
struct RingBuffer<Element> {
    @usableFromInline var storage: [Element] = []
    @usableFromInline var start = 0
    @usableFromInline let capacity: Int

    @usableFromInline init(capacity: Int) {
        precondition(capacity >= 0, "replay buffer size must not be negative")
        self.capacity = capacity
    }

    @inlinable mutating func append(_ element: Element) {
        guard capacity > 0 else { return }
        if storage.count < capacity {
            storage.append(element)
        } else {
            storage[start] = element
            start = (start + 1) % capacity
        }
    }

    @inlinable var elements: [Element] {
        guard start > 0 else { return storage }
        return Array(storage[start...] + storage[..<start])
    }

    @inlinable var last: Element? {
        guard !storage.isEmpty else { return nil }
        return storage[(start + storage.count - 1) % storage.count]
    }
}
