import ListModel

/// Why a store call failed, with a detail a person can act on.
///
/// The kind tells the service which HTTP status to answer (404 for the
/// `…NotFound` kinds, 409 for `duplicateId`/`listAlreadyExists`, 412 for
/// `versionMismatch`, 413 for `modelTooLarge`, 400 for the rest of the input
/// errors, 500/507/503 for `storageFailure`/`storageFull`/`closed`, 499 for `cancelled`, which no
/// client sees because it went away); the detail names the op, the
/// id, the position or the limit, e.g.
/// `op 3 (moveItem): item "leek" not found`.
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Sendable, Hashable {
        /// No list has the given id.
        case listNotFound
        /// The list has no section with the given id.
        case sectionNotFound
        /// The list has no item with the given id.
        case itemNotFound
        /// An id is already taken in the list, or appears twice in one write.
        case duplicateId
        /// An `at` or `to` position is outside the range the op allows.
        case positionOutOfRange
        /// An id is not 1-128 characters of `A-Z a-z 0-9 . _ ~ -`.
        case invalidId
        /// A model's canonical text is larger than the configured limit.
        case modelTooLarge
        /// A model is not acceptable JSON (syntax, UTF-8, nesting depth).
        case invalidModel
        /// A list name is not acceptable (too long).
        case invalidName
        /// The write carried an expected version that is not the list's.
        case versionMismatch(expected: Int64, actual: Int64)
        /// `createList` named an id that is taken.
        case listAlreadyExists
        /// A write or query exceeds a configured limit (ops per write, page size).
        case limitExceeded
        /// An items-query cursor was not made by this store.
        case invalidCursor
        /// SQLite failed (I/O, corruption, a failed commit).
        case storageFailure
        /// The disk holding the database is full, or the database reached its size limit:
        /// nothing of the write was kept, and what was acknowledged before is intact.
        case storageFull
        /// The connection to the database was lost while the transaction
        /// committed and could not be checked again: the write may or may not
        /// have been applied. A retry with the same `Idempotency-Key` finds out
        /// (its answer is replayed if it was applied).
        case commitOutcomeUnknown
        /// The store was closed.
        case closed
        /// The calling task was cancelled before the store started the call:
        /// nothing was read or written. (A call the store has started runs to
        /// its end; a write that committed stays committed and is answered normally.)
        case cancelled
        /// The write's `Idempotency-Key` is recorded already for its caller
        /// (``IdempotencyClaim``): nothing was applied; the service replays
        /// the recorded answer or refuses the reuse.
        case idempotencyKeyUsed
    }

    /// What went wrong.
    public var kind: Kind
    /// A sentence naming what was wrong (op index, id, position, limit).
    public var detail: String
    /// The index of the failing op in a batch, when one op is to blame.
    public var operationIndex: Int?

    /// Creates an error.
    public init(_ kind: Kind, _ detail: String, operationIndex: Int? = nil) {
        self.kind = kind
        self.detail = detail
        self.operationIndex = operationIndex
    }

    /// The detail, for logs.
    public var description: String { detail }
}

extension Identifier {
    /// Validates `text` as an id, throwing `invalidId` with the reason.
    ///
    /// The service calls this on every id it reads from a request, so an id
    /// problem is reported with the field that held it.
    public static func validated(_ text: String, field: String = "id") throws(StoreError) -> Identifier {
        if let reason = validationFailure(text) {
            throw StoreError(.invalidId, "\(field) \"\(text.prefix(140))\" is invalid: \(reason)")
        }
        // validationFailure returned nil, so the initializer succeeds.
        guard let id = Identifier(text) else {
            throw StoreError(.invalidId, "\(field) \"\(text.prefix(140))\" is invalid")
        }
        return id
    }
}

extension StoreError {
    /// The error of a call whose task was cancelled before the store started it.
    public static let cancelledBeforeStart = StoreError(
        .cancelled, "the request was cancelled before the store started it; nothing was read or written")
}
