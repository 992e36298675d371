/// A read for a store's reader thread: the thread's reader, or `nil` and why
/// the thread could not open one.
package typealias ReadJob = @Sendable (ListReader?, StoreError?) -> Void

/// Runs `body` on the reader thread that takes the job from `reads`, as both
/// stores' reads do. A task cancelled before a thread takes the job gets
/// ``StoreError/cancelledBeforeStart`` and nothing runs; a read that started
/// runs to its end. `noReader` is the error when the thread has no reader and
/// no reason for it.
package func cancellableRead<T: Sendable>(
    on reads: WorkQueue<ReadJob>, noReader: String, _ body: @escaping @Sendable (ListReader) throws(StoreError) -> T
) async throws(StoreError) -> T {
    let cancellation = CancellationFlag()
    let result: Result<T, StoreError> = await withTaskCancellationHandler {
        await withCheckedContinuation { continuation in
            if Task.isCancelled {
                continuation.resume(returning: .failure(.cancelledBeforeStart))
                return
            }
            let job: ReadJob = { reader, openError in
                if cancellation.isCancelled {
                    continuation.resume(returning: .failure(.cancelledBeforeStart))
                    return
                }
                guard let reader else {
                    continuation.resume(returning: .failure(openError ?? StoreError(.storageFailure, noReader)))
                    return
                }
                do throws(StoreError) {
                    continuation.resume(returning: .success(try body(reader)))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
            if !reads.enqueue(job) {
                continuation.resume(returning: .failure(StoreError(.closed, "the store is closed")))
            }
        }
    } onCancel: {
        cancellation.cancel()
    }
    return try result.get()
}
