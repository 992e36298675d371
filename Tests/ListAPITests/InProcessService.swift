import Dispatch
import Foundation
import HTTP
import JSON
import ListStore
import ListdTestSupport
import Logging
import Server
import Synchronization
import Testing

@testable import ListAPI

/// The service driven in process: requests are values handed to
/// `ListService.handle`, answers land in an ``InProcessExchange`` through the
/// server's in-process responder seam; the store is a real SQLiteStore on a
/// temporary file, seen through a ``GatedStore`` that can hold its calls. No sockets, no binary: what the routes, the change hub, the
/// change computer and the commit router do can be tested directly.
final class InProcessService: Sendable {
    let service: ListService
    let store: SQLiteStore
    /// The store as the service sees it.
    let gated: GatedStore
    let gate: WriterGate
    private let directory: URL

    /// A service over a fresh store whose writer can be held (``WriterGate``).
    /// `prepare` writes to the store before the service exists, so the
    /// service knows nothing of what it wrote (no heads, no cached snapshots).
    static func make(
        tick: Duration = .milliseconds(10), cors: CORSPolicy = CORSPolicy(),
        accessPolicy: AccessPolicy = AccessPolicy(writeToken: nil, readToken: nil),
        metrics: ServiceMetrics = ServiceMetrics(),
        configure: (inout ServiceConfiguration) -> Void = { _ in },
        prepare: (SQLiteStore) async throws -> Void = { _ in }
    ) async throws -> InProcessService {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("listapi-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let gate = WriterGate()
        var configuration = StoreConfiguration(fullSync: false, onGroupCommit: { gate.hook($0) })
        configuration.migrationsDirectory = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Migrations", isDirectory: true)
        let store = try await SQLiteStore(
            path: directory.appendingPathComponent("store.sqlite").path, configuration: configuration)
        try await prepare(store)
        let gated = GatedStore(store)
        let service = ListService(
            store: gated,
            configuration: {
                var configuration = ServiceConfiguration(accessPolicy: accessPolicy, timeoutTick: tick)
                configuration.cors = cors
                configure(&configuration)
                return configuration
            }(), metrics: metrics, logger: Logger(label: "listd.test"))
        return InProcessService(service: service, store: store, gated: gated, gate: gate, directory: directory)
    }

    private init(service: ListService, store: SQLiteStore, gated: GatedStore, gate: WriterGate, directory: URL) {
        self.service = service
        self.store = store
        self.gated = gated
        self.gate = gate
        self.directory = directory
    }

    /// Shuts the service down, closes the store and removes its files.
    func close() async {
        service.shutdown()
        await store.close()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Sends one request; the exchange holds its answer when it comes.
    func send(
        _ method: HTTPMethod, _ target: String, json body: String? = nil, headers extra: HTTPHeaders = HTTPHeaders()
    ) -> InProcessExchange {
        var headers = extra
        if body != nil { headers.add(name: "Content-Type", value: "application/json") }
        let request = Request(
            head: RequestHead(method: method, target: target, headers: headers), body: Array((body ?? "").utf8),
            remoteAddress: "in-process")
        let exchange = InProcessExchange()
        service.handle(request, responder: exchange.responder)
        return exchange
    }

    /// Sends one request and waits for its answer, which must have `status`.
    func json(_ method: HTTPMethod, _ target: String, json body: String? = nil, status: Int = 200) async throws
        -> JSONValue
    {
        let response = try await send(method, target, json: body).response()
        let text = String(decoding: response.body, as: UTF8.self)
        #expect(response.status.code == status, "\(method) \(target): \(text)")
        return try JSONValue(parsing: response.body)
    }
}

/// One request's way back, with no connection behind it.
final class InProcessExchange: Sendable {
    /// The responder to hand the handler.
    let responder: Responder

    init() {
        let box = LockedBox<Response>()
        let streamBox = LockedBox<Response>()
        let urgency = LockedBox<Urgency>()
        responder = Responder(delivering: { delivery in
            switch delivery {
            case .response(let response, let given):
                urgency.set(given)
                box.set(response)
            case .streamHead(let head): streamBox.set(head)
            case .streamChunk, .streamEnd: break
            }
        })
        self.box = box
        self.streamBox = streamBox
        self.urgency = urgency
    }

    private let urgency: LockedBox<Urgency>

    /// How urgent the answer was given as, if it was given (see ``Server/Urgency``).
    var answeredUrgency: Urgency? { urgency.get() }

    private let box: LockedBox<Response>
    private let streamBox: LockedBox<Response>

    /// The answer, if the handler gave one.
    var answered: Response? { box.get() }

    /// The head of the event stream the handler started, if it started one.
    var streamHead: Response? { streamBox.get() }

    /// Waits for the answer (a state, polled), failing after 60 s. The bound
    /// only turns a lost answer into a failure rather than a hang: a route's
    /// answer is made by a task on Swift's cooperative pool (two threads on a
    /// two-core machine), which the whole suite's tests share, so in a full
    /// run it may wait tens of seconds for a thread (ServiceInProcessTests took
    /// 1 s alone and 47-63 s in full runs).
    func response() async throws -> Response {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            if let response = box.get() { return response }
            guard ContinuousClock.now < deadline else { throw InProcessTimeout() }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The client goes away: the server runs the request's cancellation callbacks.
    func disconnect() { responder.cancel() }
}

struct InProcessTimeout: Error {}

/// A value a handler's answer sets from any thread, read by the test.
final class LockedBox<Value: Sendable>: Sendable {
    private let value = Mutex<Value?>(nil)
    func set(_ newValue: Value) { value.withLock { $0 = newValue } }
    func get() -> Value? { value.withLock { $0 } }
}
