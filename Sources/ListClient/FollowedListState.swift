import ListView

/// What a screen that shows a followed list needs, as a value: the decoded
/// sections, the connection state and the error that ended the follow, moved on
/// by each ``FollowEvent`` in order.
///
/// It is the core of the SwiftUI model (`FollowedListModel`, which needs only
/// Observation), and what an app with its own store reduces events into:
///
/// ```swift
/// var screen = FollowedListState<Todo>()
/// for try await event in client.events(list: "tasks") { try screen.apply(event) }
/// ```
public struct FollowedListState<Model: Decodable & Sendable>: Sendable {
    /// The state shown, decoded; `nil` before the first snapshot and after a deletion.
    public private(set) var snapshot: DecodedSnapshot<Model>?
    /// Where the follow stands with the server.
    public private(set) var connection: ConnectionState = .connecting
    /// The error that ended the follow, if one did.
    public private(set) var error: ListClientError?
    /// Whether the list was deleted on the server.
    public private(set) var isDeleted = false
    /// Whether ``snapshot`` is the state kept by a ``SnapshotStore`` from an earlier run
    /// (``FollowEvent/restored(_:)``), not yet confirmed by the server: true until the
    /// next update or until the connection is `.live`. Show it with a "saved" mark.
    public private(set) var isFromCache = false
    private var decoder: SnapshotDecoder<Model>

    /// An empty state whose models `decoder` decodes (a `JSONDecoder()` per item by default).
    public init(decoder: SnapshotDecoder<Model> = SnapshotDecoder()) { self.decoder = decoder }

    /// The sections shown (none before the first snapshot).
    public var sections: [DecodedSection<Model>] { snapshot?.sections ?? [] }

    /// Moves on by `event`. Returns the decoded update for an update event (to animate
    /// with ``StageApplier/apply(_:to:setSnapshot:)``), `nil` for a connection event.
    /// Throws (and keeps as ``error``) a `.decoding` error for a model that does not decode.
    @discardableResult
    public mutating func apply(_ event: FollowEvent) throws(ListClientError) -> DecodedUpdate<Model>? {
        switch event {
        case .connection(let state):
            connection = state
            if state == .live { isFromCache = false }
            return nil
        case .restored(let state):
            let decoded = try decode(.snapshot(state))
            snapshot = decoded.snapshot
            isFromCache = true
            return decoded
        case .update(let update):
            let decoded = try decode(update)
            snapshot = decoded.snapshot
            isFromCache = false
            if case .deleted = update { isDeleted = true }
            return decoded
        }
    }

    /// The view `query` names (`"where=done:false&order=due"`; empty: the whole
    /// list), or `nil` after ending this state with an `.invalidRequest` error
    /// that names the query and what is wrong with it, so a typo in a screen's
    /// query shows as that screen's error rather than a crash.
    public mutating func view(parsing query: String) -> ViewSpec? {
        do throws(ViewSpecError) {
            return try ViewSpec(parsing: query)
        } catch {
            fail(ListClientError(kind: .invalidRequest, detail: "the view \"\(query)\": \(error)"))
            return nil
        }
    }

    private mutating func decode(_ update: FollowUpdate) throws(ListClientError) -> DecodedUpdate<Model> {
        do throws(ListClientError) {
            return try decoder.decode(update)
        } catch {
            fail(error)
            throw error
        }
    }

    /// The follow ended with `error`.
    public mutating func fail(_ error: ListClientError) {
        self.error = error
        if connection != .needsAuth { connection = .ended }
    }
}
