import ListModel
import ListStore

/// One server-sent-events stream's life as a value: which version of each
/// list the client was last sent, whether a write is out, and which lists
/// changed meanwhile.
///
/// Why a value: the rule that bounds a slow reader's memory lives here and is
/// tested without sockets. A stream has at most one chunk out at a time
/// (an answer being computed, or bytes not yet handed to the socket); lists
/// that change meanwhile are only *marked*. When the chunk is flushed the
/// stream asks for the net change from the version it was last sent, so a
/// thousand commits during a stall cost one answer, never a queue of a thousand.
struct EventStreamMachine: Sendable {
    /// What the client was last sent for one list.
    struct Cursor: Hashable, Sendable {
        var epoch: String?
        var version: Int64
        /// The client was told the list is deleted.
        var deleted = false
        /// A view's stream: the latest version known to have the same view as
        /// `version` (the writes between left it alone), from which the next
        /// answer is computed (and said to start at `version`); nil: `version`.
        var same: Int64? = nil
    }

    /// What the hub must do for this stream.
    enum Action: Equatable, Sendable {
        case none
        /// Compute the answers for these lists from their cursors, then call ``computed(_:)``.
        case compute([Identifier])
    }

    /// One list's outcome of a computation.
    enum Outcome: Sendable {
        case answer(EncodedChangeAnswer)
        case deleted
    }

    private enum Phase: Equatable {
        /// Nothing out: a change starts a computation at once.
        case idle
        /// An answer is being computed, or a chunk is not flushed yet.
        case busy
        case closed
    }

    private(set) var cursors: [Identifier: Cursor]
    private var phase = Phase.idle
    /// Lists that changed while the stream was busy.
    private(set) var pending: Set<Identifier> = []

    init(cursors: [Identifier: Cursor]) {
        self.cursors = cursors
    }

    /// Whether a computation or a write is out.
    var isBusy: Bool { phase == .busy }

    /// A list of this stream committed (or was deleted).
    ///
    /// Returns whether the change was coalesced (the stream was busy), and what to do.
    mutating func changed(_ list: Identifier) -> (coalesced: Bool, action: Action) {
        guard phase != .closed, cursors[list] != nil else { return (false, .none) }
        let coalesced = phase == .busy
        pending.insert(list)
        return (coalesced, startIfIdle())
    }

    /// The answers for the lists of a ``Action/compute(_:)`` came back.
    ///
    /// Returns the events to send, each with the event id that names every
    /// cursor *after* it (so `Last-Event-ID` resumes exactly), and updates the
    /// cursors as if they were sent. An answer that brings nothing new (the
    /// client already has its version) is skipped. With no event to send, the
    /// stream is idle again, and the action says whether to compute more.
    mutating func computed(_ outcomes: [(Identifier, Outcome)]) -> (events: [Event], action: Action) {
        guard phase == .busy else { return ([], .none) }
        var events: [Event] = []
        for (list, outcome) in outcomes {
            guard var cursor = cursors[list] else { continue }
            switch outcome {
            case .answer(let answer):
                let sameEpoch = cursor.epoch == answer.epoch
                if sameEpoch, !cursor.deleted, !answer.reset, answer.to == cursor.version { continue }
                // A view the commits left alone: no event, and the cursor stays
                // (the client still holds its version; the next answer starts there).
                if cursor.epoch ?? answer.epoch == answer.epoch, !cursor.deleted, !answer.reset, answer.ofView,
                    answer.stageCount == 0
                {
                    if answer.to > (cursor.same ?? cursor.version) {
                        cursor.same = answer.to
                        cursors[list] = cursor
                    }
                    continue
                }
                cursor = Cursor(epoch: answer.epoch, version: answer.to)
                cursors[list] = cursor
                events.append(Event(kind: answer.reset ? .reset : .change, list: list, data: answer.json, id: eventID))
            case .deleted:
                if cursor.deleted { continue }
                cursor.deleted = true
                cursors[list] = cursor
                events.append(Event(kind: .deleted, list: list, data: Event.deletedData(list), id: eventID))
            }
        }
        if events.isEmpty {
            phase = .idle
            return ([], startIfIdle())
        }
        return (events, .none)
    }

    /// Takes the outcome another stream's ``computed(_:)`` gave for the same
    /// question: from `before` (which must be this stream's cursors) to
    /// `after`, with or without events sent. Returns nil when the cursors
    /// differ, and the caller uses ``computed(_:)`` instead.
    ///
    /// Why: thousands of streams on one list ask the same question after a
    /// commit; the first derives the events and their ids, the rest only move
    /// their cursors.
    mutating func adopt(
        before: [Identifier: Cursor], after: [Identifier: Cursor], sent: Bool
    ) -> Action? {
        guard phase == .busy, cursors == before else { return nil }
        cursors = after
        if sent { return Action.none }
        phase = .idle
        return startIfIdle()
    }

    /// The last chunk reached the socket: compute what changed meanwhile, if anything.
    mutating func flushed() -> Action {
        guard phase == .busy else { return .none }
        phase = .idle
        return startIfIdle()
    }

    /// Whether to send a heartbeat now: only when nothing else is out (the
    /// heartbeat then counts as the chunk out, until ``flushed()``).
    mutating func heartbeatDue() -> Bool {
        guard phase == .idle else { return false }
        phase = .busy
        return true
    }

    /// Marks the stream busy for its first chunk (the prelude); ``flushed()`` follows.
    mutating func begin(behind: Set<Identifier>) {
        precondition(phase == .idle, "a stream begins once")
        phase = .busy
        pending.formUnion(behind)
    }

    /// The client left or the server is shutting down: no more actions.
    mutating func close() {
        phase = .closed
        pending = []
    }

    /// The id naming every cursor: `list:epoch:version` joined by commas, in list order.
    var eventID: String {
        cursors.sorted { $0.key < $1.key }.map { list, cursor in
            "\(list.rawValue):\(cursor.epoch ?? ""):\(cursor.version)"
        }.joined(separator: ",")
    }

    private mutating func startIfIdle() -> Action {
        guard phase == .idle, !pending.isEmpty else { return .none }
        phase = .busy
        let lists = pending.sorted()
        pending = []
        return .compute(lists)
    }

    /// Parses an event id or a `lists=` parameter: comma-separated
    /// `list:version`, `list:now` or `list:epoch:version`.
    ///
    /// `now` is returned as version `-1`, for the caller to replace with the current head.
    static func parseCursors(_ text: String, what: String) throws(Problem) -> [Identifier: Cursor] {
        var cursors: [Identifier: Cursor] = [:]
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard !text.isEmpty, parts.count <= maximumLists else {
            throw .invalidParameter(
                "\(what) must name 1 to \(maximumLists) lists as list:version, list:now or list:epoch:version, "
                    + "comma-separated; got \(ChangeParameters.quoted(text))")
        }
        for part in parts {
            let fields = part.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 2 || fields.count == 3, let list = Identifier(String(fields[0])) else {
                throw .invalidParameter(
                    "\(what) has \(ChangeParameters.quoted(part)); each entry must be list:version, list:now or list:epoch:version"
                )
            }
            let versionText = fields[fields.count - 1]
            let version: Int64
            if versionText == "now" {
                version = -1
            } else if let parsed = Int64(versionText), parsed >= 0 {
                version = parsed
            } else {
                throw .invalidParameter(
                    "\(what) names version \(ChangeParameters.quoted(versionText)) for list \(list); a version is a whole number ≥ 0 or now"
                )
            }
            let epoch = fields.count == 3 && !fields[1].isEmpty ? String(fields[1]) : nil
            if let epoch, let reason = ChangeParameters.epochFailure(epoch) {
                throw .invalidParameter(
                    "\(what) names epoch \(ChangeParameters.quoted(epoch)) for list \(list) in entry "
                        + "\(ChangeParameters.quoted(part)): \(reason)")
            }
            guard cursors.updateValue(Cursor(epoch: epoch, version: version), forKey: list) == nil else {
                throw .invalidParameter("\(what) names list \(list) twice")
            }
        }
        return cursors
    }

    /// The most lists one stream follows (its event id must fit in a request header).
    static let maximumLists = 100
}

/// One server-sent event, before framing.
struct Event: Sendable {
    enum Kind: String, Sendable {
        case change, reset, deleted
    }

    var kind: Kind
    var list: Identifier
    /// The JSON object, on one line.
    var data: [UInt8]
    var id: String

    /// The event in the `text/event-stream` format (WHATWG HTML, "Server-sent events").
    var bytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(data.count + id.utf8.count + 32)
        bytes.append(contentsOf: "id: ".utf8)
        bytes.append(contentsOf: id.utf8)
        bytes.append(contentsOf: "\nevent: ".utf8)
        bytes.append(contentsOf: kind.rawValue.utf8)
        bytes.append(contentsOf: "\ndata: ".utf8)
        bytes.append(contentsOf: data)
        bytes.append(contentsOf: "\n\n".utf8)
        return bytes
    }

    /// `{"list":"a","deleted":true}`
    static func deletedData(_ list: Identifier) -> [UInt8] {
        Array("{\"list\":\"\(list.rawValue)\",\"deleted\":true}".utf8)
    }
}
