import ListModel
import Synchronization

/// A write sent with an `Idempotency-Key`: who sent it, the key, and the
/// request's fingerprint (the service's SHA-256 of method, target and body).
///
/// The service sets ``current`` around a route's handler; every write the
/// store runs in that task claims the key *in the write's own transaction*,
/// before anything else: it inserts the record (``IdempotencyRecord``, no
/// answer yet) and fails with `idempotencyKeyUsed`, applying nothing, when
/// the caller's key is recorded already (or being recorded by another
/// session, which it waits for: the unique key makes it). So a committed
/// write always has its record, and a key never applies twice. The answer
/// the service sends is attached to the record right after
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

    /// Creates a claim.
    public init(caller: String, key: String, fingerprint: String) {
        self.caller = caller
        self.key = key
        self.fingerprint = fingerprint
        self.applied = ClaimApplied()
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

/// An answer kept for replay: status, the route's header fields, body.
public struct StoredAnswer: Sendable, Hashable {
    public var status: Int
    public var headers: [Header]
    public var body: [UInt8]

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
    }

    /// The header fields as stored: `name: value` lines.
    var headerText: String {
        headers.map { "\($0.name): \($0.value)\n" }.joined()
    }

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
    /// Claims `claim`'s key in the open transaction: inserts its record
    /// without an answer, or fails with `idempotencyKeyUsed` when the key is
    /// taken (on PostgreSQL, after waiting for the transaction that took it).
    func claimIdempotencyKey(_ claim: IdempotencyClaim, now: Int64) throws(StoreError) {
        let inserted = try first(
            """
            INSERT INTO idempotency_keys (caller, idem_key, fingerprint, created_at) VALUES (?, ?, ?, ?)
            ON CONFLICT (caller, idem_key) DO NOTHING RETURNING 1
            """, .text(claim.caller), .text(claim.key), .text(claim.fingerprint), .integer(now), read: { _ in true })
        guard inserted == true else {
            throw StoreError(.idempotencyKeyUsed, "Idempotency-Key \"\(claim.key.prefix(255))\" was used already")
        }
    }

    /// The caller's record of `key`, if any.
    func idempotencyRecord(caller: String, key: String) throws(StoreError) -> IdempotencyRecord? {
        try first(
            """
            SELECT fingerprint, status, headers, body, created_at FROM idempotency_keys WHERE caller = ? AND idem_key = ?
            """, .text(caller), .text(key)
        ) { row in
            let answer = row.optionalInt64(1).map { status in
                StoredAnswer(
                    status: Int(status), headers: StoredAnswer.headers(from: row.text(2)),
                    body: Array(row.text(3).utf8))
            }
            return IdempotencyRecord(fingerprint: row.text(0), answer: answer, createdAt: row.int64(4))
        }
    }

    /// Attaches `answer` to `claim`'s record (inserting it when no write of
    /// the request claimed it: a request that changed nothing), unless the
    /// record holds an answer or another request's fingerprint: then returns
    /// that record, to be replayed or refused.
    func recordIdempotentAnswer(_ claim: IdempotencyClaim, _ answer: StoredAnswer, now: Int64) throws(StoreError)
        -> IdempotencyRecord?
    {
        let updated = try first(
            """
            INSERT INTO idempotency_keys (caller, idem_key, fingerprint, created_at, status, headers, body)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (caller, idem_key) DO UPDATE SET status = excluded.status, headers = excluded.headers,
                body = excluded.body
            WHERE idempotency_keys.fingerprint = excluded.fingerprint AND idempotency_keys.status IS NULL
            RETURNING 1
            """, .text(claim.caller), .text(claim.key), .text(claim.fingerprint), .integer(now),
            .integer(Int64(answer.status)), .text(answer.headerText),
            .text(String(decoding: answer.body, as: UTF8.self)), read: { _ in true })
        if updated == true { return nil }
        return try idempotencyRecord(caller: claim.caller, key: claim.key)
    }

    /// Deletes up to `limit` records claimed before `cutoff`, oldest first,
    /// through the index on `created_at`: the cost grows with the rows
    /// removed, not the table. - Returns: whether more may remain.
    func pruneIdempotencyKeys(before cutoff: Int64, limit: Int = 512) throws(StoreError) -> Bool {
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
    /// Claims `claim`'s key in the open transaction (``Database/claimIdempotencyKey(_:now:)``).
    package func claimIdempotencyKey(_ claim: IdempotencyClaim, now: Int64) throws(StoreError) {
        try db.claimIdempotencyKey(claim, now: now)
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
