import ListModel
import ListStore
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
        /// The way back to the client, through the request pipeline's middleware.
        let exchange: Exchange
        let watch: Watch
        let pretty: Bool
        let since: [Identifier: Int64]
        let epochs: [Identifier: String]
        /// `maxChanges`: the waiter prefers a reset to a change naming more sections and items.
        let maxChanges: Int?

        init(
            exchange: Exchange, watch: Watch, pretty: Bool, since: [Identifier: Int64],
            epochs: [Identifier: String], maxChanges: Int? = nil
        ) {
            self.exchange = exchange
            self.watch = watch
            self.pretty = pretty
            self.since = since
            self.epochs = epochs
            self.maxChanges = maxChanges
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
