import ReactiveCore

/// Where a follow stands with the server, for a status line or a banner
/// ("Reconnecting in 4 s…", "Sign in again").
///
/// A follow goes `.connecting` → `.live` once its first answer is in; after an
/// error it retries, reporting `.reconnecting` with the attempt and the wait
/// before each retry, and is `.live` again at the next answer. It ends in
/// `.needsAuth` (a 401 the token provider could not fix; the follow then fails
/// with that 401) or `.ended` (the list was deleted, or an error that retrying
/// cannot fix). A follow that is cancelled or disposed reports nothing more.
public enum ConnectionState: Sendable, Equatable, CustomStringConvertible {
    /// The first request is on its way; nothing has been shown yet.
    case connecting
    /// The last request was answered: the data shown is current.
    case live
    /// A request failed; retry number `attempt` (from 1) goes out after `after`.
    /// The data shown stays as it was and is still valid, only maybe behind.
    case reconnecting(attempt: Int, after: Duration)
    /// The server refused the token (401), also after one refresh through the
    /// client's token provider. The follow fails with the 401 after this.
    case needsAuth
    /// The follow is over: the list was deleted (completion) or it failed.
    case ended

    /// `live`, `reconnecting #2 in 0.4 s`, …
    public var description: String {
        switch self {
        case .connecting: return "connecting"
        case .live: return "live"
        case .reconnecting(let attempt, let after): return "reconnecting #\(attempt) in \(after)"
        case .needsAuth: return "needs auth"
        case .ended: return "ended"
        }
    }
}

/// A follow's updates and its connection states, in the one order they happened
/// (``ListClient/followEvents(list:view:options:)``, ``ListClient/events(list:view:options:)``).
public enum FollowEvent: Sendable, Equatable {
    /// An update of the list's data.
    case update(FollowUpdate)
    /// The follow's connection moved to a new state.
    case connection(ConnectionState)
    /// The state kept by the follow's ``FollowOptions/snapshotStore`` from an earlier run,
    /// shown at once, before the server has answered: set the data source and reload, as
    /// for a `.snapshot`, and mark the data as saved, not current. It comes first (after
    /// `.connection(.connecting)`); the data is current again at the next update or at
    /// `.connection(.live)`. The next update starts from its version: a change (animate it),
    /// or a reset when the server no longer has that version or epoch.
    case restored(ListState)

    /// The update, if this is one (a restored state is its `.snapshot`).
    public var update: FollowUpdate? {
        switch self {
        case .update(let update): return update
        case .restored(let state): return .snapshot(state)
        case .connection: return nil
        }
    }

    /// The connection state, if this is one.
    public var connection: ConnectionState? {
        if case .connection(let state) = self { return state }
        return nil
    }
}

/// Reports a follow loop's connection states to ``FollowOptions/onConnectionState``,
/// each change once (a loop reports `.live` after every answer; consumers hear it
/// when it was not live before).
struct ConnectionReporter {
    private let report: (@Sendable (ConnectionState) -> Void)?
    private var last: ConnectionState?
    /// Retries since the last answer, for ``ConnectionState/reconnecting(attempt:after:)``.
    private var attempts = 0

    init(_ options: FollowOptions) { report = options.onConnectionState }

    /// The follow starts.
    mutating func connecting() { set(.connecting) }

    /// An answer came in.
    mutating func answered() {
        attempts = 0
        set(.live)
    }

    /// A request failed and is retried after `delay`.
    mutating func retrying(after delay: Duration) {
        attempts += 1
        set(.reconnecting(attempt: attempts, after: delay))
    }

    /// The follow ends with `error` (`nil`: it completed, the list was deleted).
    mutating func ended(_ error: ListClientError?) {
        set(error?.status == 401 ? .needsAuth : .ended)
    }

    private mutating func set(_ state: ConnectionState) {
        guard state != last else { return }
        last = state
        report?(state)
    }
}

extension ListClient {
    /// ``follow(list:view:options:)`` with the follow's connection states in the
    /// same stream: `.connection(.connecting)`, then `.update(.snapshot)` and
    /// `.connection(.live)`, `.connection(.reconnecting(…))` while the server is
    /// away, and so on, in the order they happened. Any
    /// ``FollowOptions/onConnectionState`` of `options` is called as well.
    /// With a ``FollowOptions/snapshotStore`` that holds the list, the stored state comes
    /// first as ``FollowEvent/restored(_:)`` (where ``follow(list:view:options:)`` emits a `.snapshot`).
    ///
    /// ```swift
    /// client.followEvents(list: "tasks").subscribe(onNext: { event in
    ///     switch event {
    ///     case .update(let update): apply(update)
    ///     case .connection(let state): statusLabel.text = "\(state)"
    ///     }
    /// })
    /// ```
    public func followEvents(list: String, view: ViewSpec = .wholeList, options: FollowOptions = FollowOptions())
        -> Observable<FollowEvent>
    {
        Observable.create { observer in
            var options = options
            let previous = options.onConnectionState
            options.onConnectionState = { state in
                previous?(state)
                observer.onNext(.connection(state))
            }
            options.onRestored = { state in
                observer.onNext(.restored(state))
                return true
            }
            return self.follow(list: list, view: view, options: options).subscribe { event in
                switch event {
                case .next(let update): observer.onNext(.update(update))
                case .error(let error): observer.onError(error)
                case .completed: observer.onCompleted()
                }
            }
        }
    }

    /// ``followEvents(list:view:options:)`` as an `AsyncSequence` whose errors are
    /// ``ListClientError``s (see ``FollowSequence``).
    ///
    /// ```swift
    /// for try await event in client.events(list: "tasks") {
    ///     if case .connection(.needsAuth) = event { showSignIn() }
    /// }
    /// ```
    public func events(list: String, view: ViewSpec = .wholeList, options: FollowOptions = FollowOptions())
        -> FollowSequence<FollowEvent>
    {
        FollowSequence(followEvents(list: list, view: view, options: options))
    }
}
