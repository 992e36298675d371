import Foundation
import JSON
import ListWire
import ListdTestSupport
import Synchronization
import TortureCore

/// What every worker of a run shares.
final class Run: Sendable {
    let plan: TorturePlan
    let ledger: Ledger
    let cluster: Cluster
    let net = Net()
    /// Writers stop when set.
    let stopping = Atomic<Bool>(false)
    /// Followers stop once at `finals` when set.
    let finishing = Atomic<Bool>(false)
    /// Followers give up converging when set.
    let abandon = Atomic<Bool>(false)
    let finals = Mutex<[String: ListState]>([:])
    let expectations = Mutex<[String: Expectation]>([:])
    let attempted = Mutex<Set<String>>([])
    /// Event-stream followers that must not read until a time (`Ledger.now`).
    let pausedUntil = Mutex<[Int: Double]>([:])
    let counter = Mutex<(acknowledged: Int, lost: Int)>((0, 0))
    /// PUTs of `board`: the items' canonical text, the acknowledged version (nil: answer lost).
    let boardPuts = Mutex<[(items: String, version: Int64?)]>([])
    let epochs = Mutex<[String: String]>([:])
    let running = Atomic<Int>(0)
    /// Followers that ended at the final snapshot, or did not.
    let converged = Mutex<[String]>([])

    init(plan: TorturePlan, ledger: Ledger, cluster: Cluster) {
        self.plan = plan
        self.ledger = ledger
        self.cluster = cluster
    }

    /// Every list of the run.
    var allLists: [String] { plan.lists + ["counter", "board"] }

    /// Starts `body` on a thread of its own, counted in `running`.
    func spawn(_ body: @escaping @Sendable () -> Void) {
        running.add(1, ordering: .relaxed)
        Thread.detachNewThread { [self] in
            body()
            running.subtract(1, ordering: .relaxed)
        }
    }

    /// The full snapshot of `list` (or of its `view`) from any instance, retried through faults
    /// (nil if stopping for good).
    func snapshot(_ list: String, instance: Int, source: String, view: ViewOracle? = nil) -> ListState? {
        var attempt = 0
        let target = "/lists/\(list)" + (view.map { "?\($0.query)" } ?? "")
        while attempt < 600 {
            attempt += 1
            let port = cluster.livePort(instance + attempt)
            if case .success(let reply) = net.send(.get, port: port, target), reply.status == 200,
                let json = reply.json, let state = try? ListState(json: json)
            {
                ledger.observe(state, source: source, view: view)
                return state
            }
            usleep(100_000)
        }
        return nil
    }

    static func sleep(_ seconds: Double) { usleep(UInt32(max(0, seconds) * 1_000_000)) }
}

extension JSONValue {
    /// Parses `text`, or null.
    static func of(_ text: String) -> JSONValue { (try? JSONValue(parsing: text, limits: .unbounded)) ?? .null }
}
