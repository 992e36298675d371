import Testing

@testable import ReactiveCore

@Suite struct BridgeTests {
    @Test func valuesYieldsElementsThenFinishes() async throws {
        var collected: [Int] = []
        for try await value in Observable.from([1, 2, 3]).values {
            collected.append(value)
        }
        #expect(collected == [1, 2, 3])
    }

    @Test func valuesThrowsTheError() async {
        await #expect(throws: TestError.self) {
            for try await _ in Observable<Int>.error(TestError(4)).values {}
        }
    }

    @Test func valuesDisposesWhenTheConsumerStops() async throws {
        let subject = PublishSubject<Int>()
        let finished = Counter()
        let consumer = Task { () -> Int? in
            defer { finished.increment() }
            for try await value in subject.values {
                return value
            }
            return nil
        }
        for _ in 0..<2000 where finished.count == 0 {
            subject.onNext(1)
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(try await consumer.value == 1)
        for _ in 0..<2000 where subject.hasObservers {
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(!subject.hasObservers)
    }

    @Test func valuesDisposesWhenTheConsumingTaskIsCancelled() async throws {
        let subject = PublishSubject<Int>()
        let consumer = Task {
            for try await _ in subject.values {}
        }
        for _ in 0..<2000 where !subject.hasObservers {
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(subject.hasObservers)
        consumer.cancel()
        _ = await consumer.result
        for _ in 0..<2000 where subject.hasObservers {
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(!subject.hasObservers)
    }

    @Test func observableFromAsyncSequence() async throws {
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let source = Observable(from: stream)
        var collected: [Int] = []
        let reader = Task { () -> [Int] in
            var values: [Int] = []
            for try await value in source.values { values.append(value) }
            return values
        }
        for value in 1...3 { continuation.yield(value) }
        continuation.finish()
        collected = try await reader.value
        #expect(collected == [1, 2, 3])
    }

    @Test func disposingTheAsyncBridgeCancelsItsTask() async throws {
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let terminated = Counter()
        continuation.onTermination = { _ in terminated.increment() }
        let log = EventLog<Int>()
        let subscription = Observable(from: stream).subscribe(log)
        subscription.dispose()
        for _ in 0..<200 where terminated.count == 0 {
            try await Task.sleep(for: .milliseconds(5))
        }
        continuation.yield(1)
        #expect(terminated.count == 1)
        #expect(log.events.isEmpty)
    }
}
