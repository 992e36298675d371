import Synchronization

/// A snapshot of the server's counters, for `/metrics`.
public struct ServerStats: Sendable, Equatable {
    /// Connections open now (including ones being refused with 503).
    public var openConnections: Int
    /// Requests given to the handler and not answered yet (parked long-polls).
    public var parkedRequests: Int
    /// Connections accepted since start.
    public var acceptedTotal: Int
    /// Requests dispatched to the handler since start.
    public var requestsTotal: Int
    /// Connections refused with 503 because of the connection limit.
    public var rejectedOverCapacity: Int
    /// 408 answers: clients too slow to send a head or body.
    public var requestTimeouts: Int
    /// Times accepting paused because descriptors or memory ran out (EMFILE, ENFILE).
    public var acceptPauses: Int
}

/// The live counters behind `ServerStats`, shared by all loops.
final class ServerCounters: Sendable {
    let open = Atomic<Int>(0)
    let parked = Atomic<Int>(0)
    let accepted = Atomic<Int>(0)
    let requests = Atomic<Int>(0)
    let rejected = Atomic<Int>(0)
    let timeouts = Atomic<Int>(0)
    let acceptPauses = Atomic<Int>(0)

    var snapshot: ServerStats {
        ServerStats(
            openConnections: open.load(ordering: .relaxed),
            parkedRequests: parked.load(ordering: .relaxed),
            acceptedTotal: accepted.load(ordering: .relaxed),
            requestsTotal: requests.load(ordering: .relaxed),
            rejectedOverCapacity: rejected.load(ordering: .relaxed),
            requestTimeouts: timeouts.load(ordering: .relaxed),
            acceptPauses: acceptPauses.load(ordering: .relaxed))
    }
}
