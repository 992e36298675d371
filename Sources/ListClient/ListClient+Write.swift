import JSON

extension ListClient {
    /// How writes are retried when their answer is lost; on by default
    /// (``RetryPolicy/init(maxAttempts:deadline:minimumBackoff:maximumBackoff:)``'s defaults).
    /// Setting it takes effect from the next write; ``RetryPolicy/never`` turns retries off.
    public var retryPolicy: RetryPolicy {
        get { retries.withLock { $0 } }
        set { retries.withLock { $0 = newValue } }
    }

    /// How many times this client sent a write again (for logs, metrics and tests).
    public var writeRetries: Int { retryCount.load(ordering: .relaxed) }

    /// Sends `write` with the idempotency key `key` (a new one for `nil`), retried
    /// under ``retryPolicy`` with the same key and bytes, and decodes the JSON answer
    /// (`null` for 204).
    ///
    /// Every write method of the client (``createItem(inSection:of:_:ifMatch:)``,
    /// ``patchList(_:_:ifMatch:)``, …) comes here. With several ``baseURLs``, each
    /// retry goes to the next one, and the client's current URL moves with it:
    /// instances that share a store share its keys. A retry the server recognizes is
    /// answered with the first request's stored answer (`Idempotent-Replayed: true`),
    /// so the caller cannot tell a retried write from one that went through at once.
    ///
    /// - Parameters:
    ///   - write: the method, path and body, sent byte for byte on every attempt.
    ///   - key: the `Idempotency-Key`; pass the same one to send a write again
    ///     later (``WriteOutbox`` does, after a restart). 1-255 printable ASCII bytes.
    /// - Throws: the last attempt's ``ListClientError``: a 4xx or a 5xx other than
    ///   502-504 at once, a transport error or 502-504 once the policy gives up.
    ///   A 409 `idempotency-answer-missing` means the write *was* applied but the
    ///   server no longer has its answer: read the resource rather than write again.
    public func perform(_ write: WriteRequest, key: String? = nil) async throws(ListClientError) -> JSONValue {
        try Self.decode(await send(write, key: key ?? IdempotencyKey.make()))
    }

    /// ``perform(_:key:)``'s sends and retries, returning the last answer whatever its status
    /// (a retryable status only when the policy gave up).
    func send(_ write: WriteRequest, key: String) async throws(ListClientError) -> ClientResponse {
        var headers = [("Idempotency-Key", key)]
        if let ifMatch = write.ifMatch { headers.append(("If-Match", "\"\(ifMatch)\"")) }
        var attempts = WriteAttempts(policy: retryPolicy)
        let clock = ContinuousClock()
        let start = clock.now
        var instance = currentInstance
        while true {
            attempts.sending()
            let failure: ListClientError
            var answer: ClientResponse?
            do {
                // Built per attempt so a retry goes to the current base URL; the
                // target and body are the same bytes every time.
                let response = try await send(
                    write.method, write.path, headers: headers, bytes: write.body, instance: instance)
                guard Self.retryableStatuses.contains(response.status) else { return response }
                answer = response
                failure = .problem(response)
            } catch {
                failure = error
            }
            guard failure.kind != .cancelled, let wait = attempts.retry(after: failure, elapsed: clock.now - start)
            else {
                if let answer { return answer }
                throw failure
            }
            try await pause(wait, write)
            // With several instances on one store, the retry goes to the next one
            // (which finds the key as well), and the client moves on with it.
            let count = baseURLs.count
            if count > 1 {
                let next = (instance % count + 1) % count
                failedOver(from: instance, to: next)
                instance = next
            }
            retryCount.add(1, ordering: .relaxed)
        }
    }

    /// The statuses a write is retried on: a proxy without an instance behind it
    /// (502, 504), or an instance over its limits or stopping (503).
    static let retryableStatuses: Set<Int> = [502, 503, 504]

    /// Waits `duration` before a retry; cancellation ends the write.
    private func pause(_ duration: Duration, _ write: WriteRequest) async throws(ListClientError) {
        do {
            try await Task.sleep(for: duration)
        } catch {
            throw ListClientError(
                kind: .cancelled, detail: "\(write.method) /\(write.path.joined(separator: "/")) was cancelled")
        }
    }
}
