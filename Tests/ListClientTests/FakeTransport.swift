import Foundation
import ListClient
import Synchronization

/// A transport with no sockets: each request is answered by `respond`, which may
/// suspend (a parked long-poll) and sees task cancellation like a real transport.
final class FakeTransport: HTTPTransport {
    typealias Responder = @Sendable (ClientRequest, Int) async throws -> ClientResponse
    private let respond: Responder
    private let log = Mutex<[ClientRequest]>([])
    private let cancellations = Atomic<Int>(0)

    init(_ respond: @escaping Responder) { self.respond = respond }

    func send(_ request: ClientRequest) async throws -> ClientResponse {
        let index = log.withLock { log in
            log.append(request)
            return log.count - 1
        }
        do {
            return try await respond(request, index)
        } catch is CancellationError {
            cancellations.add(1, ordering: .relaxed)
            throw CancellationError()
        }
    }

    var requests: [ClientRequest] { log.withLock { $0 } }
    var cancelledCount: Int { cancellations.load(ordering: .relaxed) }

    /// A JSON response.
    static func json(_ text: String, status: Int = 200, headers: [String: String] = [:]) -> ClientResponse {
        ClientResponse(
            status: status, headers: headers.merging(["Content-Type": "application/json"]) { a, _ in a },
            body: Array(text.utf8))
    }

    /// Waits until cancelled: a long-poll that never answers.
    static func park() async throws -> ClientResponse {
        while true { try await Task.sleep(for: .seconds(60)) }
    }
}

/// Records a follow's events for assertions.
final class Recorder<Element: Sendable>: Sendable {
    private let events = Mutex<[Element]>([])
    private let ended = Mutex<(any Error)?>(nil)
    private let completed = Atomic<Bool>(false)

    func on(_ element: Element) { events.withLock { $0.append(element) } }
    func fail(_ error: any Error) { ended.withLock { $0 = error } }
    func complete() { completed.store(true, ordering: .relaxed) }

    var elements: [Element] { events.withLock { $0 } }
    var error: (any Error)? { ended.withLock { $0 } }
    var isCompleted: Bool { completed.load(ordering: .relaxed) }
}

/// Passes requests to a real transport and keeps them, so a test can see what a follow asked.
final class RecordingTransport: HTTPTransport {
    let inner: any HTTPTransport
    private let log = Mutex<[ClientRequest]>([])

    init(_ inner: any HTTPTransport) { self.inner = inner }

    func send(_ request: ClientRequest) async throws -> ClientResponse {
        log.withLock { $0.append(request) }
        return try await inner.send(request)
    }

    var requests: [ClientRequest] { log.withLock { $0 } }
}
