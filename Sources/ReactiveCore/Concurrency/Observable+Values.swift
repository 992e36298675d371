extension ObservableType {
    /// The elements as an `AsyncThrowingStream`, for `for try await` loops.
    ///
    /// The stream ends when the sequence completes and throws its error. The
    /// subscription is disposed as soon as the consumer stops: its task is cancelled,
    /// or the loop exits and the stream is released. Elements are buffered without
    /// bound; see `values(bufferingPolicy:)`.
    public var values: AsyncThrowingStream<Element, any Error> {
        values(bufferingPolicy: .unbounded)
    }

    /// The elements as an `AsyncThrowingStream` with the given buffering policy.
    ///
    /// With `.bufferingNewest(1)` a slow consumer sees only the latest element.
    public func values(
        bufferingPolicy: AsyncThrowingStream<Element, any Error>.Continuation.BufferingPolicy
    ) -> AsyncThrowingStream<Element, any Error> {
        let source = asObservable()
        return AsyncThrowingStream(bufferingPolicy: bufferingPolicy) { continuation in
            let subscription = SingleAssignmentDisposable()
            // Installed before subscribing, so a consumer gone during a synchronous
            // emission still disposes the subscription.
            continuation.onTermination = { _ in subscription.dispose() }
            subscription.setDisposable(
                source.subscribe(
                    onNext: { continuation.yield($0) },
                    onError: { continuation.finish(throwing: $0) },
                    onCompleted: { continuation.finish() }))
        }
    }
}
