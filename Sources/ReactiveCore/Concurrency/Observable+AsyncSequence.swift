extension Observable {
    /// An observable that iterates `sequence` in a task on each subscription.
    ///
    /// Elements are emitted as the sequence produces them, then completion or its
    /// error. Disposing cancels the task; nothing is delivered after that.
    public init<Source: AsyncSequence & Sendable>(from sequence: Source) where Source.Element == Element {
        self = Observable.create { observer in
            let task = Task {
                do {
                    for try await element in sequence {
                        if Task.isCancelled { return }
                        observer.onNext(element)
                    }
                    observer.onCompleted()
                } catch {
                    observer.onError(error)
                }
            }
            return Disposables.create { task.cancel() }
        }
    }
}
