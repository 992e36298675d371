import ListModel
import Storage
import Synchronization

/// A write sent with an `Idempotency-Key`: who sent it, the key, and the
/// request's fingerprint (the service's SHA-256 of method, target and body).
///
/// The service sets ``current`` around a route's handler; every write the
/// store runs in that task claims the key *in the write's own transaction*:
/// it inserts the record (``IdempotencyRecord``) and fails with
/// `idempotencyKeyUsed`, its savepoint rolled back so nothing is applied,
/// when the caller's key is recorded already (or being recorded by another
/// session, which it waits for: the unique key makes it). So a committed
/// write always has its record, and a key never applies twice.
///
/// The answer is kept in the same transaction when the service can render
/// it from the write's result alone (``ClaimAnswer/render(_:)``): the store
/// renders it on its thread right after the write and stores it with the
/// record, so no crash separates the effect from its answer (an answer that
/// is the write's change is kept as that change: ``StoredAnswer/change``,
/// cheaper on the writer than the rendered answer). Otherwise the
/// service attaches the answer right after the commit
/// (``Store/recordIdempotentAnswer(_:_:)``).
public struct IdempotencyClaim: Sendable, Hashable {
    /// The caller's stable identity (a signed token's subject, the write token, everyone).
    public var caller: String
    /// The `Idempotency-Key` header's value.
    public var key: String
    /// The lowercase hex SHA-256 of the request (method, target, body).
    public var fingerprint: String
    /// Set by the store when a write of this request committed with the claim.
    public let applied: ClaimApplied
    /// How the write's answer is rendered for the record, and whether it was kept with the commit.
    public let answer: ClaimAnswer

    /// Creates a claim.
    public init(caller: String, key: String, fingerprint: String) {
        self.caller = caller
        self.key = key
        self.fingerprint = fingerprint
        self.applied = ClaimApplied()
        self.answer = ClaimAnswer()
    }

    /// The claim the current task's writes make, if any.
    @TaskLocal public static var current: IdempotencyClaim?

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.caller == rhs.caller && lhs.key == rhs.key && lhs.fingerprint == rhs.fingerprint
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(caller)
        hasher.combine(key)
        hasher.combine(fingerprint)
    }
}

/// Whether a write committed a claim's record (set on the store's thread after the commit).
public final class ClaimApplied: Sendable {
    private let flag = Atomic<Bool>(false)

    init() {}

    /// Whether a write committed with the claim.
    public var value: Bool { flag.load(ordering: .acquiring) }

    package func set() { flag.store(true, ordering: .releasing) }
}

/// The answer a claimed write keeps with its commit: the service says how to
/// render it from the store call's result before making the call; the store
/// renders and stores it inside the write's transaction, and says whether
/// it did.
///
/// A write without a key may render its answer on the store's thread too
/// (``current``): a section or an item answer read from the rows the write
/// left costs O(log n), where reading the list afterwards costs O(n).
public final class ClaimAnswer: Sendable {
    /// How the next write's answer is made: from its result by a closure, or,
    /// for a write answered with its change, that change itself.
    private enum Rendering {
        case result(@Sendable (any Sendable, WrittenRows) -> StoredAnswer?)
        case change(unchanged: @Sendable (WriteResult) -> StoredAnswer?)
    }

    private let rendering = Mutex<Rendering?>(nil)
    private let kept = Mutex<StoredAnswer?>(nil)

    /// An answer to render, for a write without a claim (``current``).
    public init() {}

    /// The answer the current task's writes render when they carry no
    /// ``IdempotencyClaim`` (a claim's own ``IdempotencyClaim/answer`` wins).
    @TaskLocal public static var current: ClaimAnswer?

    /// Renders the answer of the next store write made under the claim from
    /// that write's result (of type `Result`: what the store method returns).
    /// `body` runs on the store's thread, inside the write's transaction, so
    /// it must be quick and have no effects; `nil` leaves the answer to be
    /// attached after the commit.
    public func render<Result: Sendable>(_ body: @escaping @Sendable (Result) -> StoredAnswer?) {
        rendering.withLock { rendering in
            rendering = .result { value, _ in (value as? Result).flatMap(body) }
        }
    }

    /// ``render(_:)`` for an answer that shows rows the write left (a
    /// section, an item), read in the write's transaction through `rows`.
    /// A read that fails leaves the answer to be attached after the commit.
    package func render<Result: Sendable>(
        reading body: @escaping @Sendable (Result, WrittenRows) throws(StoreError) -> StoredAnswer?
    ) {
        rendering.withLock { rendering in
            rendering = .result { value, rows in
                guard let result = value as? Result else { return nil }
                return try? body(result, rows)
            }
        }
    }

    /// For a write answered with its change (a ``WriteResult``): the answer
    /// kept is that change (``StoredAnswer/init(change:)``), taken from the
    /// result as it is, with no closure and no cast on the writer thread; a
    /// write that changed nothing (or recorded no change) keeps what
    /// `unchanged` renders from its result.
    public func keepChange(unchanged: @escaping @Sendable (WriteResult) -> StoredAnswer?) {
        rendering.withLock { $0 = .change(unchanged: unchanged) }
    }

    /// The answer for a write's result, when a renderer was given and it renders one.
    package func rendered<Value: Sendable>(for value: Value, by writer: ListWriter) -> StoredAnswer? {
        switch rendering.withLock({ $0 }) {
        case nil:
            return nil
        case .result(let render):
            return render(value, WrittenRows(writer: writer))
        case .change(let unchanged):
            // Folded away where `Value` is known (the store's write of a `WriteResult`).
            guard let result = value as? WriteResult else { return nil }
            if result.changed, let change = result.change { return StoredAnswer(change: change) }
            return unchanged(result)
        }
    }

    /// The answer kept with the committed write, if one was.
    public var keptAnswer: StoredAnswer? { kept.withLock { $0 } }

    package func setKept(_ answer: StoredAnswer) { kept.withLock { $0 = answer } }
}

/// An answer kept for replay: status, the route's header fields, body; or,
/// for a write answered with its change, the change itself (``change``),
/// which the service renders again on a retry.
public struct StoredAnswer: Sendable, Hashable {
    public var status: Int
    public var headers: [Header]
    public var body: [UInt8]
    /// The write's change, when the answer is that change rendered (then
    /// `headers` and `body` are empty): the store keeps it as bytes
    /// (``NetChange/encoded()``), cheaper on the writer thread than staging
    /// and encoding the answer before the commit, and the same answer once rendered.
    public var change: NetChange?

    /// One header field.
    public struct Header: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public init(status: Int, headers: [Header], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
        self.change = nil
    }

    /// A `200` answer that is `change` rendered as the change stream renders it.
    public init(change: NetChange) {
        self.status = 200
        self.headers = []
        self.body = []
        self.change = change
    }

    /// The header fields as stored: `name: value` lines.
    var headerText: String {
        var text = ""
        text.reserveCapacity(headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 3 })
        for header in headers {
            text += header.name
            text += ": "
            text += header.value
            text += "\n"
        }
        return text
    }

    /// The `headers` column's value (`NULL` for a kept change).
    var headerValue: SQLValue { change == nil ? .text(headerText) : .null }

    /// The `body` column's value (`NULL` for a kept change).
    var bodyValue: SQLValue { change == nil ? .text(String(decoding: body, as: UTF8.self)) : .null }

    /// The header fields from their stored text.
    static func headers(from text: String) -> [Header] {
        text.split(separator: "\n").compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let value = line[line.index(after: colon)...].drop { $0 == " " }
            return Header(name: String(line[..<colon]), value: String(value))
        }
    }
}

/// A caller's key as the store keeps it.
public struct IdempotencyRecord: Sendable, Hashable {
    /// The fingerprint of the request that claimed the key.
    public var fingerprint: String
    /// Its answer; `nil` while the first request is still answering (or when
    /// its process died between its commit and attaching the answer).
    public var answer: StoredAnswer?
    /// When the key was claimed (Unix milliseconds).
    public var createdAt: Int64

    public init(fingerprint: String, answer: StoredAnswer?, createdAt: Int64) {
        self.fingerprint = fingerprint
        self.answer = answer
        self.createdAt = createdAt
    }
}

extension Database {
    /// The claim's statement; a kept change's column is named only when
    /// there is one (the others are every record's, on any schema since 0009).
    private static let claimWithoutChange = """
        INSERT INTO idempotency_keys (caller, idem_key, fingerprint, created_at, status, headers, body)
        VALUES (?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (caller, idem_key) DO NOTHING
        """
    private static let claimWithChange = """
        INSERT INTO idempotency_keys (caller, idem_key, fingerprint, created_at, status, headers, body, kept_change)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (caller, idem_key) DO NOTHING
        """

    /// Claims `claim`'s key in the open transaction: inserts its record,
    /// with `answer` when there is one, or fails with `idempotencyKeyUsed`
    /// when the key is taken (on PostgreSQL, after waiting for the
    /// transaction that took it).
    func claimIdempotencyKey(_ claim: IdempotencyClaim, answer: StoredAnswer?, now: Int64) throws(StoreError) {
        // One array of the values, sized once: this runs on every keyed write.
        var values: [SQLValue] = []
        values.reserveCapacity(8)
        values.append(.text(claim.caller))
        values.append(.text(claim.key))
        values.append(.text(claim.fingerprint))
        values.append(.integer(now))
        values.append(answer.map { .integer(Int64($0.status)) } ?? .null)
        values.append(answer?.headerValue ?? .null)
        values.append(answer?.bodyValue ?? .null)
        let keptChange = answer?.change
        if let keptChange { values.append(.blob(keptChange.encoded())) }
        let inserted = try self.inserted(
            keptChange == nil ? Self.claimWithoutChange : Self.claimWithChange, values: values)
        guard inserted else {
            throw StoreError(.idempotencyKeyUsed, "Idempotency-Key \"\(claim.key.prefix(255))\" was used already")
        }
    }

    /// The caller's record of `key`, if any.
    func idempotencyRecord(caller: String, key: String) throws(StoreError) -> IdempotencyRecord? {
        let found = try first(
            """
            SELECT fingerprint, status, headers, body, created_at, kept_change FROM idempotency_keys
            WHERE caller = ? AND idem_key = ?
            """, .text(caller), .text(key)
        ) { row in
            (
                fingerprint: row.text(0), status: row.optionalInt64(1), headers: row.text(2), body: row.text(3),
                createdAt: row.int64(4), change: row.optionalBlob(5)
            )
        }
        guard let found else { return nil }
        var answer: StoredAnswer?
        if let status = found.status {
            if let bytes = found.change {
                guard let change = NetChange(encoded: bytes) else {
                    throw StoreError(
                        .storageFailure,
                        "the change kept with Idempotency-Key \"\(key.prefix(255))\" does not decode (\(bytes.count) bytes)"
                    )
                }
                answer = StoredAnswer(change: change)
            } else {
                answer = StoredAnswer(
                    status: Int(status), headers: StoredAnswer.headers(from: found.headers),
                    body: Array(found.body.utf8))
            }
        }
        return IdempotencyRecord(fingerprint: found.fingerprint, answer: answer, createdAt: found.createdAt)
    }

    /// Attaches `answer` to `claim`'s record (inserting it when no write of
    /// the request claimed it: a request that changed nothing), unless the
    /// record holds an answer or another request's fingerprint: then returns
    /// that record, to be replayed or refused.
    func recordIdempotentAnswer(_ claim: IdempotencyClaim, _ answer: StoredAnswer, now: Int64) throws(StoreError)
        -> IdempotencyRecord?
    {
        // The kept change's column is named only when there is one (a record
        // attached with a rendered answer reads the same on a schema before it).
        let change = answer.change == nil ? "" : ", kept_change = excluded.kept_change"
        let updated = try first(
            """
            INSERT INTO idempotency_keys (caller, idem_key, fingerprint, created_at, status, headers, body\(answer.change == nil ? "" : ", kept_change"))
            VALUES (?, ?, ?, ?, ?, ?, ?\(answer.change == nil ? "" : ", ?"))
            ON CONFLICT (caller, idem_key) DO UPDATE SET status = excluded.status, headers = excluded.headers,
                body = excluded.body\(change)
            WHERE idempotency_keys.fingerprint = excluded.fingerprint AND idempotency_keys.status IS NULL
            RETURNING 1
            """,
            values: [
                .text(claim.caller), .text(claim.key), .text(claim.fingerprint), .integer(now),
                .integer(Int64(answer.status)), answer.headerValue, answer.bodyValue,
            ] + (answer.change.map { [.blob($0.encoded())] } ?? []), read: { _ in true })
        if updated == true { return nil }
        return try idempotencyRecord(caller: claim.caller, key: claim.key)
    }

    /// Deletes up to `limit` records claimed before `cutoff`, oldest first:
    /// the cost grows with the rows removed, not the table.
    /// - Returns: whether more may remain.
    ///
    /// On SQLite the records are looked at in the order they were claimed
    /// (rowid): of the first `limit`, those claimed before `cutoff` go. A
    /// record claimed while the clock read later than a newer one's (the
    /// clock was set back) holds the newer ones until it is due itself: late,
    /// never early. Elsewhere through the index on `created_at`.
    func pruneIdempotencyKeys(before cutoff: Int64, limit: Int = 512) throws(StoreError) -> Bool {
        if dialect.prunesIdempotencyKeysByRowid {
            let removed = try rows(
                """
                DELETE FROM idempotency_keys WHERE rowid IN
                    (SELECT rowid FROM (SELECT rowid, created_at FROM idempotency_keys ORDER BY rowid LIMIT ?)
                     WHERE created_at < ?)
                RETURNING 1
                """, [.integer(Int64(limit)), .integer(cutoff)]
            ) { _ in true }
            return removed.count == limit
        }
        let removed = try rows(
            """
            DELETE FROM idempotency_keys WHERE (caller, idem_key) IN
                (SELECT caller, idem_key FROM idempotency_keys WHERE created_at < ? ORDER BY created_at LIMIT ?)
            RETURNING 1
            """, [.integer(cutoff), .integer(Int64(limit))]
        ) { _ in true }
        return removed.count == limit
    }
}

extension ListWriter {
    /// Runs `body` in the open savepoint under `claim`, if the write makes
    /// one, then claims the key with the answer the claim renders from the
    /// body's value (``ClaimAnswer``): one row, in the same savepoint, so the
    /// effect, its record and its answer commit together or not at all. A
    /// key taken already fails the write with `idempotencyKeyUsed` and the
    /// savepoint's rollback undoes the body (a retry is rare; the first
    /// request pays one statement). `settle` is for the store to call once
    /// the write committed: it tells the service the write applied and which
    /// answer was kept with it. Without a claim, `rendering` (the task's
    /// ``ClaimAnswer/current``) renders the answer to hand back, storing nothing.
    package func claiming<T: Sendable>(
        _ claim: IdempotencyClaim?, rendering: ClaimAnswer? = nil, now: Int64,
        _ body: (ListWriter, Int64) throws(StoreError) -> (T, [Commit])
    ) throws(StoreError) -> (value: T, commits: [Commit], settle: @Sendable () -> Void) {
        guard let claim else {
            let (value, commits) = try body(self, now)
            // Without a key, an answer rendered here is only handed back, not stored.
            guard let rendering, let answer = rendering.rendered(for: value, by: self) else {
                return (value, commits, {})
            }
            return (value, commits, { rendering.setKept(answer) })
        }
        let (value, commits) = try body(self, now)
        let answer = claim.answer.rendered(for: value, by: self)
        try db.claimIdempotencyKey(claim, answer: answer, now: now)
        return (
            value, commits,
            {
                if let answer { claim.answer.setKept(answer) }
                claim.applied.set()
            }
        )
    }

    /// The caller's record of `key`, if any.
    package func idempotencyRecord(caller: String, key: String) throws(StoreError) -> IdempotencyRecord? {
        try db.idempotencyRecord(caller: caller, key: key)
    }

    /// Attaches the answer (``Database/recordIdempotentAnswer(_:_:now:)``).
    package func recordIdempotentAnswer(_ claim: IdempotencyClaim, _ answer: StoredAnswer, now: Int64)
        throws(StoreError) -> IdempotencyRecord?
    {
        try db.recordIdempotentAnswer(claim, answer, now: now)
    }

    /// One bounded step of removing records older than the configured
    /// retention. - Returns: whether more may remain.
    package func pruneIdempotencyKeys(now: Int64) throws(StoreError) -> Bool {
        let (seconds, attoseconds) = configuration.idempotencyRetention.components
        let retention = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return try db.pruneIdempotencyKeys(before: now - retention)
    }
}

extension ListReader {
    /// The caller's record of `key`, if any.
    package func idempotencyRecord(caller: String, key: String) throws(StoreError) -> IdempotencyRecord? {
        try db.idempotencyRecord(caller: caller, key: key)
    }
}
