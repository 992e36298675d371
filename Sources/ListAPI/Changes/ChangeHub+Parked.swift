import ListModel
import ListStore
import ListView
import Server

/// What the change hub keeps of a parked request, and what parking answers.
extension ChangeHub {
    /// What a parked request waits for.
    enum Watch: Sendable {
        /// `GET /lists/{list}/changes`: one list.
        case one(Identifier)
        /// `POST /changes`: several lists, answered as an object keyed by list id.
        case many([Identifier: Int64])
    }

    /// What the hub keeps of a parked request.
    ///
    /// Why a class: one commit moves thousands of these from the waiter table
    /// to the answering task (on the store's writer thread, under the hub's
    /// lock), and copying a struct of a request context and two dictionaries
    /// retains and releases each of their parts; a reference is one retain.
    final class Parked: Sendable {
        /// The way back to the client, through the request pipeline's
        /// middleware; its answers are bulk (``Exchange/inBulk``), as one
        /// commit gives thousands at once and a write's own answer must not
        /// wait behind them.
        let exchange: Exchange
        let watch: Watch
        let pretty: Bool
        let since: [Identifier: Int64]
        let epochs: [Identifier: String]
        /// `maxChanges`: the waiter prefers a reset to a change naming more sections and items.
        let maxChanges: Int?
        /// The views followed, by list (docs/API.md, "Views"); a list not here is followed whole.
        let views: [Identifier: ViewSpec]
        /// The versions the client holds, where they differ from `since`: a
        /// view's waiter parks again at the list's new version when a commit
        /// leaves its view alone, and is answered from the version it held.
        let held: [Identifier: Int64]
        /// The tick the waiter times out at (kept when it parks again).
        let deadline: UInt64
        /// A view's waiter woken by a commit that parked at `since` through
        /// every commit before it without being woken: from this version to
        /// `since` its view is known to be the same (see ``ChangeHub/committed(_:)``).
        let sameSince: [Identifier: Int64]

        init(
            exchange: Exchange, watch: Watch, pretty: Bool, since: [Identifier: Int64],
            epochs: [Identifier: String], maxChanges: Int? = nil, views: [Identifier: ViewSpec] = [:],
            held: [Identifier: Int64] = [:], deadline: UInt64 = 0, sameSince: [Identifier: Int64] = [:]
        ) {
            self.exchange = exchange.inBulk
            self.watch = watch
            self.pretty = pretty
            self.since = since
            self.epochs = epochs
            self.maxChanges = maxChanges
            self.views = views
            self.held = held
            self.deadline = deadline
            self.sameSince = sameSince
        }

        /// The view watch keys it parks under (a single list's view with a condition).
        var viewKeys: [String] {
            guard case .one = watch else { return [] }
            return views.compactMap { ViewWatch.key($0.key, $0.value)?.0 }
        }

        /// The version the client holds of `list`.
        func held(_ list: Identifier) -> Int64 { held[list] ?? since[list] ?? 0 }

        /// The same waiter, parked again at `since` (the lists' versions now).
        func parkedAgain(since newSince: [Identifier: Int64], sameSince: [Identifier: Int64] = [:]) -> Parked {
            var held = self.held
            for (list, version) in since where held[list] == nil { held[list] = version }
            return Parked(
                exchange: exchange, watch: watch, pretty: pretty, since: newSince, epochs: epochs,
                maxChanges: maxChanges, views: views, held: held, deadline: deadline, sameSince: sameSince)
        }
    }

    /// The result of asking to park.
    enum ParkResult: Sendable {
        /// Parked; the hub will answer.
        case parked
        /// Some watched list moved on before the request could park: answer now.
        case changed
        /// The server is shutting down: answer now with "no change".
        case shuttingDown
    }
}
