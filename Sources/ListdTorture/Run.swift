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
    /// When the SQLite store's disk was full, and when writes were taken again.
    let fullDisk = Mutex(FullDiskLog())
    /// When links were cut or slowed, or PostgreSQL was down (`Ledger.now`; an open one ends at infinity).
    let outages = Mutex<[ClosedRange<Double>]>([])
    /// Followers that ended at the final snapshot, or did not.
    let converged = Mutex<[String]>([])

    init(plan: TorturePlan, ledger: Ledger, cluster: Cluster) {
        self.plan = plan
        self.ledger = ledger
        self.cluster = cluster
    }

    /// How long after an outage ends time bounds are still waived, in seconds:
    /// TCP's retransmission back-off after a cut of up to 6 s (the next resend
    /// comes at most about 6 s after the mend), or the listener's reconnection
    /// and catch-up once PostgreSQL is back, then the answer's own way back.
    static let outageGrace = 15.0

    /// Records that an outage starts now; returns its index for ``outageEnded(_:)``.
    func outageStarted() -> Int {
        let now = ledger.now
        return outages.withLock {
            $0.append(now...Double.infinity)
            return $0.count - 1
        }
    }

    func outageEnded(_ index: Int) {
        let now = ledger.now
        outages.withLock { $0[index] = $0[index].lowerBound...now }
    }

    /// Whether an outage (or its grace) overlaps `from...to`: an answer held up
    /// by a cut or slow link, or by PostgreSQL being down (a NOTIFY sent as it
    /// stopped is never delivered, and nothing is caught up until it is back),
    /// says nothing about listd's wake-ups, so time bounds are waived for it
    /// (counted), while every other check stands.
    func disturbedByOutage(_ from: Double, _ to: Double) -> Bool {
        let disturbed = outages.withLock { faults in
            faults.contains { $0.lowerBound <= to && $0.upperBound + Self.outageGrace >= from }
        }
        if disturbed { ledger.count("time bounds waived across an outage (a cut or slow link, PostgreSQL down)") }
        return disturbed
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
            let endpoint = cluster.liveEndpoint(instance + attempt)
            if case .success(let reply) = net.send(.get, at: endpoint, target), reply.status == 200,
                let json = reply.json, let state = try? ListState(json: json)
            {
                ledger.observe(state, source: source, view: view)
                return state
            }
            usleep(100_000)
        }
        return nil
    }

    /// Whether a 507 at `time` is explained by a full disk.
    func diskFull(at time: Double) -> Bool { fullDisk.withLock { $0.isFull(at: time) } }

    /// A write acknowledged at `time`: the first after a full disk was freed marks its recovery.
    func acknowledgedWrite(at time: Double) { fullDisk.withLock { $0.acknowledged(at: time) } }

    /// The end of the run's disk checks: every full disk, once freed, took writes again.
    func checkDiskRecovered(stoppedAt stop: Double) {
        for problem in fullDisk.withLock({ $0.recoveries(stoppedAt: stop) }) {
            if let problem { ledger.violated(.diskFullRefused, problem) } else { ledger.passed(.diskFullRefused) }
        }
    }

    static func sleep(_ seconds: Double) { usleep(UInt32(max(0, seconds) * 1_000_000)) }
}

extension JSONValue {
    /// Parses `text`, or null.
    static func of(_ text: String) -> JSONValue { (try? JSONValue(parsing: text, limits: .unbounded)) ?? .null }
}
