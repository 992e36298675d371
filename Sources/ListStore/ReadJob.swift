/// A read for a store's reader thread: the thread's reader, or `nil` and why
/// the thread could not open one.
package typealias ReadJob = @Sendable (ListReader?, StoreError?) -> Void

/// Runs `body` on the reader thread that takes the job from `reads`, as both
/// stores' reads do. A task cancelled before a thread takes the job gets
/// ``StoreError/cancelledBeforeStart`` and nothing runs; a read that started
/// runs to its end. `noReader` is the error when the thread has no reader and
/// no reason for it.
///
/// With `mayRunTwice` (a read on ``BackgroundThreads``, which may run a job on
/// both of its threads at once), the first run to finish answers and a run
/// that starts after it does nothing; `body` must then have no effects.
package func cancellableRead<T: Sendable>(
    on reads: WorkQueue<ReadJob>, noReader: String, mayRunTwice: Bool = false,
    _ body: @escaping @Sendable (ListReader) throws(StoreError) -> T
) async throws(StoreError) -> T {
    try await cancellableSubmission { cancellation, answerOnce in
        let once = mayRunTwice ? RunOnce() : nil
        let answer: @Sendable (Result<T, StoreError>) -> Void = { result in
            if once?.claim() ?? true { answerOnce(result) }
        }
        return reads.enqueue { reader, openError in
            if once?.isDone == true { return }
            if cancellation.isCancelled {
                answer(.failure(.cancelledBeforeStart))
                return
            }
            guard let reader else {
                answer(.failure(openError ?? StoreError(.storageFailure, noReader)))
                return
            }
            do throws(StoreError) {
                answer(.success(try body(reader)))
            } catch {
                answer(.failure(error))
            }
        }
    }
}

/// Hands a job to a store's thread and waits for its answer, with the
/// cancellation both stores give every read and write: `submit` gets the job's
/// flag (set when the calling task is cancelled; the thread checks it before
/// it starts the job, and a job it started runs to its end) and the function
/// the job answers with, once; it returns `false` when the queue is closed. A
/// task already cancelled submits nothing and gets
/// ``StoreError/cancelledBeforeStart``.
package func cancellableSubmission<T: Sendable>(
    _ submit: (CancellationFlag, @escaping @Sendable (Result<T, StoreError>) -> Void) -> Bool
) async throws(StoreError) -> T {
    let cancellation = CancellationFlag()
    let result: Result<T, StoreError> = await withTaskCancellationHandler {
        await withCheckedContinuation { continuation in
            if Task.isCancelled {
                continuation.resume(returning: .failure(.cancelledBeforeStart))
                return
            }
            if !submit(cancellation, { continuation.resume(returning: $0) }) {
                continuation.resume(returning: .failure(StoreError(.closed, "the store is closed")))
            }
        }
    } onCancel: {
        cancellation.cancel()
    }
    return try result.get()
}
