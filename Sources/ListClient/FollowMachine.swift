import Foundation
import ListView
import ListWire

/// The decisions of a follow, as a value with no I/O: what to ask the server
/// next, and what an answer means for the followed state.
///
/// Why a value: the rules (never apply a stage twice, refetch on a stage that
/// does not apply, keep the epoch) are tested without sockets, and the loop that
/// does the I/O (``ListClient/follow(list:options:)``) stays small.
public struct FollowMachine: Sendable {
    /// What the follow must do next.
    public enum Action: Sendable, Equatable {
        /// `GET /lists/{list}`: there is no state, or it was found out of step.
        case fetchSnapshot
        /// Long-poll for changes after `since` in `epoch`.
        case poll(since: Int64, epoch: String)
    }

    /// The list followed.
    public let list: String
    /// The view of it followed: `ViewSpec.wholeList` for the whole list.
    public let view: ViewSpec
    /// The state the follow holds, `nil` until the first snapshot and while a refetch is due.
    public private(set) var state: ListState?
    /// How many times an answer was rejected and the snapshot refetched.
    public private(set) var refetchCount = 0
    /// Why the last answer was rejected, for logs.
    public private(set) var lastRejection: ListClientError?
    /// Which of the client's base URLs the follow asks, and how often it moved on.
    /// (Set within the module by the follow loops' recovery step, through ``failed(_:instances:)``'s rule.)
    public internal(set) var instanceChoice: InstanceChoice
    /// Whether the follow has emitted a snapshot: from then on a 404 means the list
    /// was deleted, not that it never existed, even while ``state`` is `nil` because
    /// a rejected answer made a refetch due.
    public private(set) var hasEmitted = false

    /// A machine for `view` of `list` with no state yet, asking base URL number `instance` first.
    public init(list: String, view: ViewSpec = .wholeList, instance: Int = 0) {
        self.list = list
        self.view = view
        instanceChoice = InstanceChoice(instance: instance)
    }

    /// The index (into ``ListClient/baseURLs``) of the instance the next request goes to.
    public var instance: Int { instanceChoice.instance }

    /// A request failed with `error` while the client has `count` base URLs.
    /// Returns `true` when the follow moves on to the next one (see ``InstanceChoice``).
    ///
    /// The state is kept either way: the next request asks for what follows the
    /// version and epoch held, now from the next instance. Instances that share
    /// one store (PostgreSQL) serve the same versions, so the follow continues with
    /// no reset; instances that do not (two SQLite files) answer with a reset,
    /// which the machine applies as any other.
    public mutating func failed(_ error: ListClientError, instances count: Int) -> Bool {
        instanceChoice.failed(error, instances: count)
    }

    /// What to do next.
    public var nextAction: Action {
        guard let state else { return .fetchSnapshot }
        return .poll(since: state.version, epoch: state.epoch)
    }

    /// A snapshot arrived: it is the first one, or a refetch that replaces the data.
    public mutating func receive(snapshot: ListState) -> FollowUpdate {
        state = snapshot
        defer { hasEmitted = true }
        return hasEmitted ? .reset(snapshot) : .snapshot(snapshot)
    }

    /// A state kept from an earlier run (a ``SnapshotStore``) is shown before any request:
    /// the follow holds it as if it were a snapshot, so the next request asks for what
    /// follows its version in its epoch (a change; a reset when the server no longer has
    /// that version or epoch), and a 404 from then on is the list's deletion. Returns the
    /// `.snapshot` to emit, or `nil` (nothing taken) when the state is of another list or
    /// the machine already holds one.
    public mutating func restore(_ stored: ListState) -> FollowUpdate? {
        guard state == nil, !hasEmitted, stored.id == list else { return nil }
        state = stored
        hasEmitted = true
        return .snapshot(stored)
    }

    /// A change answer arrived. Returns the update to emit, or `nil` when there is
    /// nothing new (a timeout, or an answer rejected so that the next action is a refetch).
    public mutating func receive(_ answer: ChangeAnswer) -> FollowUpdate? {
        guard let current = state else { return nil }
        guard answer.list == list else {
            return reject(.invalid("an answer for list \(answer.list) while following \(list)"))
        }
        if let snapshot = answer.snapshot {
            state = snapshot
            hasEmitted = true
            return .reset(snapshot)
        }
        // Stages only ever apply to the exact version and epoch they start from;
        // anything else (an answer to an older request, another epoch) would apply
        // stages twice or to the wrong data, so the state is refetched instead.
        guard answer.epoch == current.epoch, answer.from == current.version else {
            return reject(
                .invalid(
                    "an answer for \(answer.epoch)@\(answer.from) while holding \(current.epoch)@\(current.version)"))
        }
        if answer.stages.isEmpty {
            // Nothing to apply, but the version moves on: the net change of
            // writes that cancel out (an item inserted and deleted since the
            // version held), or, for a view, writes that left the view alone.
            // The data held is the data at `to`, so the follow holds that
            // version and says so with a change of no stages (nothing to show;
            // no refetch, no reset), so every change still starts where the last ended.
            if answer.to > current.version {
                var next = current
                next.version = answer.to
                state = next
                return .changes(
                    ListChange(from: answer.from, before: current.sections, stages: [], state: next, answer: answer))
            }
            guard answer.to == current.version else {
                return reject(.invalid("an answer from \(answer.from) to \(answer.to) without stages"))
            }
            return nil
        }
        do {
            let stages = try answer.applied(to: current)
            var next = current
            next.version = answer.to
            next.sections = stages.last?.sections ?? current.sections
            state = next
            return .changes(
                ListChange(from: answer.from, before: current.sections, stages: stages, state: next, answer: answer))
        } catch {
            return reject(ListClientError(error))
        }
    }

    /// The list is gone (404 while following).
    public mutating func receiveDeleted() -> FollowUpdate {
        state = nil
        return .deleted(list: list)
    }

    private mutating func reject(_ error: ListClientError) -> FollowUpdate? {
        state = nil
        refetchCount += 1
        lastRejection = error
        return nil
    }
}

/// Which of several base URLs (listd instances on one store) a follow asks, as a
/// value with no I/O.
///
/// A follow stays on its instance while it answers. When the instance fails in a
/// way that another one may not (no answer: connection refused or reset, a timeout;
/// or a 5xx), the follow moves to the next base URL, in order and round the end,
/// so a dead instance is left at the first failure and the survivors are tried in
/// turn. Errors about the request itself (4xx, an answer that breaks the contract)
/// would be the same anywhere and keep the instance. With one base URL nothing moves.
public struct InstanceChoice: Sendable, Equatable {
    /// The index of the base URL asked next.
    public private(set) var instance: Int
    /// How many times the follow moved to another base URL.
    public private(set) var failovers = 0

    /// Starts at base URL number `instance`.
    public init(instance: Int = 0) { self.instance = max(0, instance) }

    /// Whether `error` says the instance failed, rather than the request: no answer,
    /// or a 5xx (a 503 over the connection limit, a 502 or 504 from a proxy in front of a dead instance).
    public static func isInstanceFailure(_ error: ListClientError) -> Bool {
        switch error.kind {
        case .transport: return true
        case .problem: return (error.status ?? 0) >= 500
        case .invalidResponse, .cancelled, .invalidRequest, .outbox, .decoding: return false
        }
    }

    /// A request to ``instance`` failed with `error` while there are `count` base URLs:
    /// moves to the next one when that may help. Returns whether it moved.
    public mutating func failed(_ error: ListClientError, instances count: Int) -> Bool {
        guard count > 1, Self.isInstanceFailure(error) else { return false }
        instance = (instance % count + 1) % count
        failovers += 1
        return true
    }
}

/// Exponential back-off with jitter, so that many clients that lost the server
/// at the same moment do not all come back at the same moment.
public struct Backoff: Sendable {
    /// The first delay.
    public var minimum: Duration
    /// The largest delay.
    public var maximum: Duration
    private var attempt = 0

    /// Creates a back-off from `minimum`, doubling up to `maximum`.
    ///
    /// The values come from an app's settings (``FollowOptions``), so they are
    /// clamped rather than checked with a trap: `minimum` is at least
    /// ``smallestDelay`` (a zero delay would retry a failing server in a busy
    /// loop), and `maximum` at least `minimum`.
    public init(minimum: Duration, maximum: Duration) {
        self.minimum = max(minimum, Self.smallestDelay)
        self.maximum = max(maximum, self.minimum)
    }

    /// The shortest first delay: what `minimum` is raised to when it is below it (`.zero`, negative).
    public static let smallestDelay = Duration.milliseconds(1)

    /// The next delay: a random point in the upper half of the current step
    /// ("equal jitter"), the step doubling each time up to `maximum`.
    public mutating func next() -> Duration {
        // In seconds as a Double: the properties are public and settable, so they are
        // clamped again here, and no doubling of a huge setting can overflow a Duration.
        let first = max(self.minimum, Self.smallestDelay) / .seconds(1)
        let last = max(self.maximum / .seconds(1), first)
        let seconds = min(last, first * Double(1 << min(attempt, 30)))
        attempt += 1
        return Self.milliseconds(Double.random(in: seconds / 2...seconds) * 1000)
    }

    /// The delay for a 503 with `Retry-After`: the server's figure plus up to 50% jitter,
    /// capped at ``maximumRetryAfter`` (a misconfigured server must not park a client for hours).
    public mutating func next(retryAfter seconds: Double) -> Duration {
        attempt += 1
        // NaN would make the jitter's range below invalid (a trap): read it as no wait.
        let capped = seconds.isNaN ? 0 : min(max(seconds, 0), Self.maximumRetryAfter / .seconds(1))
        return Self.milliseconds(Double.random(in: capped...(capped * 1.5 + 0.001)) * 1000)
    }

    /// A whole number of milliseconds, at most about 30,000 years (so the conversion cannot trap).
    private static func milliseconds(_ value: Double) -> Duration {
        .milliseconds(Int64(min(value.rounded(), 1e15)))
    }

    /// The longest `Retry-After` honoured.
    public static let maximumRetryAfter = Duration.seconds(300)

    /// Back to the first step, after a success.
    public mutating func reset() { attempt = 0 }
}

/// How a follow polls and retries.
public struct FollowOptions: Sendable {
    /// The long-poll's `timeout` (seconds the server holds the request).
    public var pollTimeout: Duration
    /// Extra time the transport waits beyond `pollTimeout` before giving up on the answer.
    public var responseSlack: Duration
    /// The back-off's first delay after an error; below ``Backoff/smallestDelay`` (`.zero`) it is raised to that.
    public var minimumBackoff: Duration
    /// The back-off's largest delay; below ``minimumBackoff`` it is raised to that.
    public var maximumBackoff: Duration
    /// Called (on the follow's task) each time the follow moves to another base URL,
    /// for logs and metrics; `nil` for none. It must not block.
    public var onFailover: (@Sendable (Failover) -> Void)?
    /// Called (on the follow's task, in order with its updates) each time the
    /// follow's ``ConnectionState`` changes; `nil` for none. It must not block.
    /// ``ListClient/followEvents(list:view:options:)`` delivers the same states as events.
    public var onConnectionState: (@Sendable (ConnectionState) -> Void)? = nil
    /// How a follow hears of changes: long-polls (the default), the event stream,
    /// or the event stream when the client's transport can stream
    /// (``FollowTransport``). A multi-list follow of whole lists (at most 100) takes
    /// one `GET /events?lists=…` for all of them; one with a view of any list long-polls.
    public var transport: FollowTransport = .longPoll
    /// Where a follow keeps the last state it showed of each list (and view), so that
    /// the next follow of it shows that state at once, before any answer, and then
    /// resumes from its version and epoch (``SnapshotStore``, ``FileSnapshotStore``);
    /// `nil` (the default) for none. A multi-list follow emits each stored state as a
    /// `.snapshot` of its ``ListUpdate``.
    public var snapshotStore: (any SnapshotStore)? = nil
    /// Called (on the follow's task) when the ``snapshotStore`` fails to load, save or
    /// remove an entry; the follow goes on as if there were none. `nil`: not reported.
    public var onSnapshotStoreFailure: (@Sendable (SnapshotStoreFailure) -> Void)? = nil
    /// The least time between two writes of one list's (or view's) state to the
    /// ``snapshotStore``: updates in between replace the state waiting to be written,
    /// so a burst costs one write, and the last state is always written. The follow
    /// never waits for a write.
    public var snapshotInterval: Duration = .seconds(1)
    /// Takes a state restored from the ``snapshotStore`` in place of its `.snapshot`
    /// when it returns `true` (``ListClient/followEvents(list:view:options:)`` emits it as
    /// ``FollowEvent/restored(_:)``).
    var onRestored: (@Sendable (ListState) -> Bool)? = nil

    /// Creates options; the defaults suit an app (30 s polls, 0.1–15 s back-off).
    public init(
        pollTimeout: Duration = .seconds(30), responseSlack: Duration = .seconds(15),
        minimumBackoff: Duration = .milliseconds(100), maximumBackoff: Duration = .seconds(15),
        onFailover: (@Sendable (Failover) -> Void)? = nil
    ) {
        self.pollTimeout = pollTimeout
        self.responseSlack = responseSlack
        self.minimumBackoff = minimumBackoff
        self.maximumBackoff = maximumBackoff
        self.onFailover = onFailover
    }
}

/// A follow left one listd instance for the next (see ``InstanceChoice``).
public struct Failover: Sendable, Equatable {
    /// The lists the follow follows (one for ``ListClient/follow(list:options:)``).
    public var lists: [String]
    /// The base URL that failed.
    public var from: URL
    /// The base URL the follow asks from now on.
    public var to: URL
    /// How it failed.
    public var error: ListClientError
    /// How many times this follow has moved, this one included.
    public var count: Int

    /// Creates a report.
    public init(lists: [String], from: URL, to: URL, error: ListClientError, count: Int) {
        self.lists = lists
        self.from = from
        self.to = to
        self.error = error
        self.count = count
    }
}
