import Crypto
import HTTP
import ListStore
import Synchronization

/// `Idempotency-Key` on every write route (API.md, Retries), wrapped around
/// the route's handler by ``RouteTable``: routes know nothing of it.
///
/// A request with a key: a retry already answered is replayed from the store
/// (status, the route's header fields, body, and `Idempotent-Replayed:
/// true`), a key used for another request is 422, and otherwise the route
/// runs with the key as the task's ``IdempotencyClaim``: each store write it
/// makes claims the key in the write's own transaction (so a committed
/// effect always has its record, and a key is never applied twice, whatever
/// instance or process retries it), and the answer is attached to the record
/// once the route has built it. A request while another with the same key
/// runs in this process waits for it (``running``); one running in another
/// instance is waited for by the store (the claim's unique key), then by
/// polling for its answer.
///
/// Where the route can render its answer from the store call's result and
/// the rows the write left (every content write: ``keepingAnswer(_:_:)``),
/// the store renders it and keeps it in the write's own transaction; a
/// write answered with its change keeps the change instead, rendered again
/// on a retry (``keepingChange(unchanged:_:)``); other answers (the index
/// routes, a problem met after the commit, a no-op that wrote nothing) are
/// attached right after.
///
/// Answers kept: every answer of a request whose write committed (a 2xx, or
/// a problem the route met after the commit), and every 2xx of a request that
/// committed nothing (a no-op: the key is then taken by it). A failed
/// request that applied nothing keeps nothing, so its retry runs afresh.
final class IdempotencyKeys: Sendable {
    let store: any Store
    /// How long a request waits for another's answer (another instance still
    /// answering, or a process that stopped between its commit and its
    /// answer) before it is told the answer is not there.
    let answerWait: Duration
    /// The (caller, key) pairs whose requests run in this process, with the requests waiting for them.
    private let running = Mutex<[Slot: [CheckedContinuation<Bool, Never>]]>([:])

    struct Slot: Hashable, Sendable {
        let caller: String
        let key: String
    }

    static let header = "Idempotency-Key"
    static let replayedHeader = "Idempotent-Replayed"

    init(store: any Store, answerWait: Duration = .seconds(10)) {
        self.store = store
        self.answerWait = answerWait
    }

    /// Runs `route` for `context` under the request's `Idempotency-Key`, if it has one.
    func run(_ context: Context, _ route: @Sendable (Context) async throws -> Response) async throws -> Response {
        guard let key = try Self.key(of: context.request) else { return try await route(context) }
        let claim = IdempotencyClaim(
            caller: context.caller.idempotencyScope, key: key, fingerprint: Self.fingerprint(of: context.request))
        let slot = Slot(caller: claim.caller, key: key)
        await enter(slot)
        defer { leave(slot) }
        // No look at the store first: the claim each write makes in its own
        // transaction is what decides (and costs no read on the way of a
        // first request). A retry's write finds the key taken and applies
        // nothing; a retry that writes nothing finds the record as it keeps
        // its answer; one that fails (a read before the write finding what
        // the first request changed) finds it below.
        let response: Response
        do {
            response = try await IdempotencyClaim.$current.withValue(claim) { try await route(context) }
        } catch {
            if claim.applied.value {
                // Applied, then failed: that is the request's answer.
                return try await keep(RequestPipeline.problem(for: error).response(), claim, pretty: context.pretty)
            }
            if let record = try await record(of: claim) {
                return try await answer(from: record, claim, pretty: context.pretty)
            }
            // Nothing applied and nothing recorded: nothing kept, and a retry runs afresh.
            throw error
        }
        guard claim.applied.value || (200..<300).contains(response.status.code) else { return response }
        // Kept with the commit, in its transaction.
        if claim.answer.keptAnswer != nil { return response }
        return try await keep(response, claim, pretty: context.pretty)
    }

    // MARK: The header and the fingerprint

    /// The request's key: 1-255 printable ASCII characters (0x20-0x7E); nil without the header.
    static func key(of request: Request) throws(Problem) -> String? {
        guard let value = request.header(header) else { return nil }
        let bytes = value.utf8
        guard !bytes.isEmpty else {
            throw .invalidHeader("\(header) is empty; send 1-255 printable ASCII characters")
        }
        guard bytes.count <= 255 else {
            throw .invalidHeader(
                "\(header) is \(bytes.count) bytes long, more than 255: \"\(String(decoding: bytes.prefix(40), as: UTF8.self))…\""
            )
        }
        if let bad = bytes.firstIndex(where: { !(0x20...0x7E).contains($0) }) {
            let offset = bytes.distance(from: bytes.startIndex, to: bad)
            throw .invalidHeader(
                "\(header) must be printable ASCII (0x20-0x7E), but byte \(offset) is 0x\(String(bytes[bad], radix: 16, uppercase: true))"
            )
        }
        return value
    }

    /// The lowercase hex SHA-256 of the method, the request target (path and query) and the body.
    ///
    /// Hashed from the request's own bytes (no copies into arrays) and
    /// written into the string's storage: this runs on every keyed request.
    static func fingerprint(of request: Request) -> String {
        var hash = SHA256()
        var method = request.method.rawValue
        var target = request.head.target
        let newline: UInt8 = 0x0A
        method.withUTF8 { hash.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        withUnsafeBytes(of: newline) { hash.update(bufferPointer: $0) }
        target.withUTF8 { hash.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        withUnsafeBytes(of: newline) { hash.update(bufferPointer: $0) }
        request.body.withUnsafeBytes { hash.update(bufferPointer: $0) }
        let digest = hash.finalize()
        return String(unsafeUninitializedCapacity: 2 * SHA256.byteCount) { hex in
            var count = 0
            digest.withUnsafeBytes { bytes in
                for byte in bytes {
                    hex[count] = hexDigits[Int(byte >> 4)]
                    hex[count + 1] = hexDigits[Int(byte & 0x0F)]
                    count += 2
                }
            }
            return count
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    // MARK: Answers

    private func record(of claim: IdempotencyClaim) async throws(Problem) -> IdempotencyRecord? {
        try await storeCall { () throws(StoreError) in
            try await store.idempotencyRecord(caller: claim.caller, key: claim.key)
        }
    }

    /// The answer `record` gives `claim`'s request: its replay, or 422 for
    /// another request; while it has no answer yet, waits for one.
    private func answer(from record: IdempotencyRecord?, _ claim: IdempotencyClaim, pretty: Bool) async throws(Problem)
        -> Response
    {
        var record = record
        let deadline = ContinuousClock.now + answerWait
        while true {
            if let record {
                guard record.fingerprint == claim.fingerprint else {
                    throw .idempotencyKeyReused(
                        "Idempotency-Key \"\(claim.key.prefix(255))\" was used for another request: this one's method, path or body differ; send a new key with a new request"
                    )
                }
                if let answer = record.answer { return Self.replay(answer, pretty: pretty) }
            }
            guard ContinuousClock.now < deadline else {
                throw Problem(
                    slug: "idempotency-answer-missing", title: "The first request's answer is not recorded",
                    status: 409,
                    detail:
                        "the request with Idempotency-Key \"\(claim.key.prefix(255))\" was applied, but its answer is not recorded (it is still being answered elsewhere, or its server stopped before answering); read the resource for its state"
                )
            }
            try? await Task.sleep(for: .milliseconds(20))
            record = try await self.record(of: claim)
        }
    }

    /// Attaches `response` to `claim`'s record and returns it; when the
    /// record answers otherwise already (a request without a write that
    /// raced with another), that answer.
    private func keep(_ response: Response, _ claim: IdempotencyClaim, pretty: Bool) async throws(Problem) -> Response {
        let stored = StoredAnswer(response)
        let existing: IdempotencyRecord?
        do throws(StoreError) {
            existing = try await store.recordIdempotentAnswer(claim, stored)
        } catch {
            // The write is applied: answer it; a retry is told its answer is missing.
            return response
        }
        guard let existing else { return response }
        return try await answer(from: existing, claim, pretty: pretty)
    }

    /// The kept answer as sent again: as stored, or, for a kept change, that
    /// change rendered as ``ListRoutes/writeAnswer(_:_:)`` rendered it
    /// (`pretty` is the request's, which its fingerprint makes the first one's).
    static func replay(_ answer: StoredAnswer, pretty: Bool) -> Response {
        var response: Response
        if let change = answer.change {
            response = ChangeAnswerResponse.response(
                json: EncodedChangeAnswer.change(change).json, pretty: pretty, etag: change.head.etag)
        } else {
            response = Response(answer)
        }
        response.headers.add(name: replayedHeader, value: "true")
        return response
    }

    // MARK: Requests running in this process

    /// Waits until no other request of this process runs with `slot`, then takes it.
    ///
    /// A free slot is taken without suspending: a continuation, even one
    /// resumed at once, sends the task back through its executor's queue,
    /// and nearly every request finds its slot free.
    private func enter(_ slot: Slot) async {
        let free = running.withLock { running in
            guard running[slot] == nil else { return false }
            running[slot] = []
            return true
        }
        if free { return }
        while true {
            let taken: Bool = await withCheckedContinuation { continuation in
                let waiting = running.withLock { running in
                    if running[slot] != nil {
                        running[slot, default: []].append(continuation)
                        return true
                    }
                    running[slot] = []
                    return false
                }
                if !waiting { continuation.resume(returning: true) }
            }
            if taken { return }
        }
    }

    /// Frees `slot`; its waiters try again (one takes it, the others wait on).
    private func leave(_ slot: Slot) {
        let waiters = running.withLock { $0.removeValue(forKey: slot) ?? [] }
        for waiter in waiters { waiter.resume(returning: false) }
    }
}

/// Makes the store call `write` for a request; when it carries an
/// `Idempotency-Key`, `render` renders the answer from the call's result on
/// the store's thread and the store keeps it with the write's commit, in the
/// same transaction (``ClaimAnswer``). Returns the call's result and that
/// answer: the route answers with it as it is, so a retry's replay is the
/// same bytes. `nil` without a key, or when `render` gave none (the route
/// then answers as usual and the answer is attached after the commit).
///
/// `render` must be quick and free of effects: it runs inside the writer's
/// transaction, before the commit (a failed commit must leave no trace).
func keepingAnswer<Result: Sendable>(
    _ render: @escaping @Sendable (Result) -> Response?, _ write: () async throws(Problem) -> Result
) async throws(Problem) -> (result: Result, kept: Response?) {
    guard let claim = IdempotencyClaim.current else { return (try await write(), nil) }
    claim.answer.render { (result: Result) in render(result).map(StoredAnswer.init) }
    let result = try await write()
    return (result, claim.answer.keptAnswer.map(Response.init))
}

/// Makes the store call `write` for a request answered with the write's
/// change (``ListRoutes/writeAnswer(_:_:)``); with an `Idempotency-Key`, the
/// store keeps that change with the write's commit (``StoredAnswer/change``),
/// and `unchanged` renders the answer of a write that changed nothing.
/// Returns the call's result and, when the store kept a rendered answer,
/// that answer; `nil` when it kept the change (or nothing): the route then
/// renders the change as for a write without a key, and a retry renders the
/// kept change again, the same bytes (``IdempotencyKeys/replay(_:pretty:)``).
///
/// Why not render it on the store's thread, as ``keepingAnswer(_:_:)``
/// does: staging and encoding the answer there before the commit cost the
/// writer thread about a sixth of its keyed writes/s (Benchmarks/ServiceBenchmarks/README.md,
/// session 22); storing the change costs it the change's bytes.
func keepingChange(
    unchanged: @escaping @Sendable (WriteResult) -> Response?, _ write: () async throws(Problem) -> WriteResult
) async throws(Problem) -> (result: WriteResult, kept: Response?) {
    guard let claim = IdempotencyClaim.current else { return (try await write(), nil) }
    claim.answer.keepChange(unchanged: { unchanged($0).map(StoredAnswer.init) })
    let result = try await write()
    return (result, claim.answer.keptAnswer.flatMap { $0.change == nil ? Response($0) : nil })
}

/// ``keepingAnswer(_:_:)`` for an answer showing rows the write left (a
/// section or an item), which `render` reads inside the write's transaction.
/// Rendered there with or without a key: reading the section or item from
/// the rows the write left costs O(log n) plus the answer, where reading the
/// list after the commit costs O(n). Without a key the answer is handed back
/// and nothing is stored.
func keepingAnswer<Value: Sendable>(
    reading render: @escaping @Sendable (Value, WrittenRows) throws(StoreError) -> Response?,
    _ write: () async throws(Problem) -> Value
) async throws(Problem) -> (result: Value, kept: Response?) {
    let answer = IdempotencyClaim.current?.answer ?? ClaimAnswer()
    answer.render(reading: { (result: Value, rows: WrittenRows) throws(StoreError) in
        try render(result, rows).map(StoredAnswer.init)
    })
    if IdempotencyClaim.current != nil {
        return (try await write(), answer.keptAnswer.map(Response.init))
    }
    let outcome: Result<Value, Problem> = await ClaimAnswer.$current.withValue(answer) {
        do throws(Problem) {
            return .success(try await write())
        } catch {
            return .failure(error)
        }
    }
    return (try outcome.get(), answer.keptAnswer.map(Response.init))
}

extension StoredAnswer {
    /// The answer as kept: status, header fields, body.
    init(_ response: Response) {
        self.init(
            status: response.status.code,
            headers: response.headers.map { StoredAnswer.Header(name: $0.name, value: $0.value) },
            body: response.body)
    }
}

extension Response {
    /// The kept answer as sent.
    init(_ answer: StoredAnswer) {
        var headers = HTTPHeaders()
        for header in answer.headers { headers.add(name: header.name, value: header.value) }
        self.init(status: HTTPStatus(code: answer.status), headers: headers, body: answer.body)
    }
}
