import ReactiveCore
import Synchronization

/// A follow as an `AsyncSequence` whose `next` throws ``ListClientError``, not
/// `any Error`: `for try await` over it is a `do`/`catch` with a typed error.
///
/// ```swift
/// do {
///     for try await update in client.updates(list: "groceries") {
///         apply(update)
///     }
/// } catch {
///     print(error.status ?? 0, error.detail)   // error is a ListClientError
/// }
/// ```
///
/// Each iterator runs its own follow (as each subscription of the `Observable`
/// does), started by its first `next`. The follow stops, and its in-flight
/// request is cancelled (the transport closes its connection, so the server
/// drops a parked long-poll), when the consuming task is cancelled (`next`
/// then returns `nil`), when the iterator is released (the loop is left with
/// `break` or `return`), or when the follow ends. Updates the consumer has not
/// taken yet are buffered in order, without bound: every one of them is needed
/// to animate the next.
public struct FollowSequence<Element: Sendable>: AsyncSequence, Sendable {
    /// The error `next` throws.
    public typealias Failure = ListClientError

    private let source: Observable<Element>

    /// A sequence of `source`'s elements; an error that is not a ``ListClientError``
    /// arrives as one of kind `.transport` naming it.
    public init(_ source: Observable<Element>) { self.source = source }

    /// An iterator that starts its own follow at its first `next`.
    public func makeAsyncIterator() -> Iterator { Iterator(channel: FollowChannel(source)) }

    /// Takes the follow's elements one by one.
    public struct Iterator: AsyncIteratorProtocol {
        /// The error `next` throws.
        public typealias Failure = ListClientError

        let channel: FollowChannel<Element>

        /// The next element; `nil` once the follow completed or the task is cancelled.
        public mutating func next(isolation actor: isolated (any Actor)? = #isolation) async throws(ListClientError)
            -> Element?
        {
            try await channel.next(isolation: actor)
        }

        /// The next element; `nil` once the follow completed or the task is cancelled.
        public mutating func next() async throws(ListClientError) -> Element? {
            try await channel.next(isolation: nil)
        }
    }
}

extension ObservableType {
    /// The elements as a ``FollowSequence``: like `values`, but `next` throws a
    /// ``ListClientError`` (what ListClient's follows fail with) instead of `any Error`.
    public var typedValues: FollowSequence<Element> { FollowSequence(asObservable()) }
}

/// The buffer between a follow's subscription and the one task that iterates it.
final class FollowChannel<Element: Sendable>: Sendable {
    private struct State {
        var buffer: [Element] = []
        var head = 0
        /// The follow's end: `nil` while it runs; `.success` when it completed (or was cancelled).
        var end: Result<Void, ListClientError>?
        var waiter: UnsafeContinuation<Result<Element?, ListClientError>, Never>?
        var subscription: (any Disposable)?
        var started = false

        /// The next buffered element, if any.
        mutating func take() -> Element? {
            guard head < buffer.count else { return nil }
            let element = buffer[head]
            head += 1
            if head == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                head = 0
            }
            return element
        }
    }

    private let source: Observable<Element>
    private let state = Mutex(State())

    init(_ source: Observable<Element>) { self.source = source }

    func next(isolation actor: isolated (any Actor)?) async throws(ListClientError) -> Element? {
        startIfNeeded()
        let result = await withTaskCancellationHandler {
            await withUnsafeContinuation {
                (continuation: UnsafeContinuation<Result<Element?, ListClientError>, Never>) in
                let ready: Result<Element?, ListClientError>? = state.withLock { state in
                    if let element = state.take() { return .success(element) }
                    if let end = state.end { return end.map { nil } }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            self.finish(.success(()))
        }
        return try result.get()
    }

    private func startIfNeeded() {
        let start = state.withLock { state in
            defer { state.started = true }
            return !state.started && state.end == nil
        }
        guard start else { return }
        let subscription = source.subscribe { [weak self] event in
            switch event {
            case .next(let element): self?.deliver(element)
            case .error(let error):
                self?.finish(
                    .failure(error as? ListClientError ?? ListClientError(kind: .transport, detail: "\(error)")))
            case .completed: self?.finish(.success(()))
            }
        }
        // Disposed at once when the follow ended (or was cancelled) while it was being subscribed.
        let late = state.withLock { state in
            if state.end != nil { return true }
            state.subscription = subscription
            return false
        }
        if late { subscription.dispose() }
    }

    private func deliver(_ element: Element) {
        let waiter = state.withLock { state -> UnsafeContinuation<Result<Element?, ListClientError>, Never>? in
            guard state.end == nil else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.buffer.append(element)
            return nil
        }
        waiter?.resume(returning: .success(element))
    }

    /// Ends the channel: the waiting `next` gets `end`, the follow is disposed.
    /// Elements already buffered are still delivered before the end.
    private func finish(_ end: Result<Void, ListClientError>) {
        let (waiter, subscription) = state.withLock {
            state -> (UnsafeContinuation<Result<Element?, ListClientError>, Never>?, (any Disposable)?) in
            guard state.end == nil else { return (nil, nil) }
            state.end = end
            let waiter = state.waiter
            state.waiter = nil
            let subscription = state.subscription
            state.subscription = nil
            return (waiter, subscription)
        }
        subscription?.dispose()
        waiter?.resume(returning: end.map { nil })
    }

    deinit {
        let subscription = state.withLock { $0.subscription }
        subscription?.dispose()
    }
}

extension ListClient {
    /// ``follow(list:view:options:)`` as an `AsyncSequence` with typed errors
    /// (see ``FollowSequence``): `for try await update in client.updates(list: "g")`.
    public func updates(list: String, view: ViewSpec = .wholeList, options: FollowOptions = FollowOptions())
        -> FollowSequence<FollowUpdate>
    {
        FollowSequence(follow(list: list, view: view, options: options))
    }

    /// ``follow(views:options:)`` (several lists, one long-poll) as an `AsyncSequence` with typed errors.
    public func updates(views: [String: ViewSpec], options: FollowOptions = FollowOptions())
        -> FollowSequence<ListUpdate>
    {
        FollowSequence(follow(views: views, options: options))
    }

    /// ``follow(lists:options:)`` (several lists, one long-poll) as an `AsyncSequence` with typed errors.
    public func updates(lists: [String], options: FollowOptions = FollowOptions()) -> FollowSequence<ListUpdate> {
        FollowSequence(follow(lists: lists, options: options))
    }
}
