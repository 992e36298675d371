import Foundation
import ListWire
import Synchronization

/// The invariants a run checks, one summary line each.
public enum Invariant: String, Sendable, CaseIterable {
    case ackedWritesExactlyOnce = "every acknowledged write is in the final state exactly once"
    case versionsGaplessAndUnique = "versions per list are gapless, each acknowledged to at most one write"
    case idempotentRetries = "a retried Idempotency-Key write replays its first answer"
    case ifMatchLinearizable = "If-Match increments are linearizable (counter = acknowledged increments)"
    case answersOrdered = "each follower's answers are ordered and unique (from = held version, to >= from)"
    case statesAgree = "every observer sees the same state at a version (atomic, no version later lost)"
    case resumable = "reconnecting from any held version gives the same net result"
    case stagesValid = "every stage is valid under the UIKit batch-update model (sectionUpdated as reloadSections)"
    case followersEndAtFinal = "every follower ends at the final snapshot"
    case resetsJustified = "no reset except for the contract's reasons"
    case waitersAnswered = "no waiter is left past its timeout, nor unwoken past the bound after a change"
    case readsValid = "cursor pages and snapshots hold only written payloads, each at most once"
    case clientUpdatesApply =
        "the Swift ListClient's updates (every instance's URL) are the server's answers applied in order"
    case diskFullRefused =
        "a full disk refuses writes with 507 (nothing written), and writes succeed again once it is freed"
    case viewsMatchOracle =
        "every view state a follower holds is the view of the list at that version (independent oracle)"
}

/// Everything a run checks, shared by every worker: counts per invariant, the
/// first violations, and the facts the checks compare (acknowledged versions, states seen).
public final class Ledger: Sendable {
    /// How long a waiter may stay parked after a write it should see was acknowledged.
    public let wakeBound: Double

    private struct Counts {
        var checked = 0
        var violations: [String] = []
        var violationCount = 0
    }

    private struct ListFacts {
        /// Acknowledged writes by version (the write's label).
        var acknowledged: [Int64: String] = [:]
        /// The highest acknowledged version and when it was acknowledged.
        var maxAcknowledged: Int64 = 0
        /// Recent acknowledgements (version, time), for the wake-up check.
        var recentAcks: [(version: Int64, time: Double)] = []
        /// Digest of the state at each version anyone observed, and who saw it first.
        var states: [Int64: (digest: UInt64, source: String)] = [:]
        /// Writes that may or may not have committed (their answer was lost).
        var indeterminate = 0
        /// Acknowledged writes that changed the list.
        var changing = 0
        var firstVersion: Int64 = 0
        var epoch = ""
        /// The list's states at recent versions anyone observed, for the view oracle.
        var snapshots: [Int64: ListState] = [:]
        /// View states observed at versions whose list state nobody has observed yet.
        var pendingViews: [Int64: [(view: ViewOracle, state: ListState, source: String)]] = [:]
    }

    /// How many list states (and versions of pending view states) a list keeps for the view oracle.
    static let oracleWindow = 512

    /// A view state the oracle disagreed with, the first one: what the harness shrinks.
    public struct ViewMismatch: Sendable {
        public var view: ViewOracle
        public var list: ListState
        public var seen: ListState
    }

    private let mismatch = Mutex<ViewMismatch?>(nil)

    /// The first view state the oracle disagreed with, if any.
    public var firstViewMismatch: ViewMismatch? { mismatch.withLock { $0 } }

    private let counts = Mutex<[Invariant: Counts]>([:])
    private let lists = Mutex<[String: ListFacts]>([:])
    private let events = Mutex<[String: Int]>([:])
    /// The smallest history retention in force at any time of the run (prune lowers it).
    private let retention = Mutex<Int64>(10_000)
    private let start = ContinuousClock.now

    /// The run's events, cut into the history that shows the first violation.
    public let history = History()
    private let witness = Mutex<(message: String, lines: [String])?>(nil)

    /// The first violation that names a list, and the history that shows it
    /// (``History/witness(of:at:limit:)``), or nil.
    public var firstViolationHistory: (message: String, lines: [String])? { witness.withLock { $0 } }

    public init(wakeBound: Double = 5) { self.wakeBound = wakeBound }

    /// Seconds since the ledger was made.
    public var now: Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    // MARK: Counting

    /// One more check of `invariant` that held.
    public func passed(_ invariant: Invariant, _ count: Int = 1) {
        counts.withLock { $0[invariant, default: Counts()].checked += count }
    }

    /// A violation of `invariant`, described.
    public func violated(_ invariant: Invariant, _ message: String) {
        let line = "[t+\(Int(now))s] \(message)"
        counts.withLock {
            $0[invariant, default: Counts()].checked += 1
            $0[invariant, default: Counts()].violationCount += 1
            if $0[invariant, default: Counts()].violations.count < 5 {
                $0[invariant, default: Counts()].violations.append(line)
            }
        }
        FileHandle.standardError.write(Data("VIOLATION \(invariant): \(line)\n".utf8))
        if witness.withLock({ $0 == nil }) {
            let lines = history.witness(of: message, at: now)
            if !lines.isEmpty {
                witness.withLock { if $0 == nil { $0 = (line, lines) } }
            }
        }
    }

    /// Checks `condition`, counting a pass or `message` as a violation.
    public func check(_ invariant: Invariant, _ condition: Bool, _ message: @autoclosure () -> String) {
        if condition { passed(invariant) } else { violated(invariant, message()) }
    }

    /// Counts an event of the run (operations, answers, nemeses) for the summary.
    public func count(_ event: String, _ by: Int = 1) {
        events.withLock { $0[event, default: 0] += by }
    }

    /// The counted events.
    public var eventCounts: [String: Int] { events.withLock { $0 } }

    /// How many violations there are in all.
    public var violationCount: Int { counts.withLock { $0.values.reduce(0) { $0 + $1.violationCount } } }

    /// One line per invariant, then `N passed, M failed` (invariants).
    public var summary: [String] {
        let counts = self.counts.withLock { $0 }
        var lines: [String] = []
        var passed = 0
        var failed = 0
        for invariant in Invariant.allCases {
            let entry = counts[invariant] ?? Counts()
            if entry.violationCount == 0 {
                passed += 1
                lines.append("PASS \(invariant.rawValue) (\(entry.checked) checks)")
            } else {
                failed += 1
                lines.append(
                    "FAIL \(invariant.rawValue) (\(entry.violationCount) of \(entry.checked) checks failed)")
                lines += entry.violations.map { "     \($0)" }
            }
        }
        lines.append("\(passed) passed, \(failed) failed")
        return lines
    }

    // MARK: Facts

    /// A list as created: its epoch and first version.
    public func created(list: String, epoch: String, version: Int64) {
        lists.withLock {
            $0[list, default: ListFacts()].firstVersion = version
            $0[list, default: ListFacts()].epoch = epoch
        }
    }

    /// A write acknowledged with `version`; `label` names it in messages.
    public func acknowledged(list: String, version: Int64, label: String) {
        let time = now
        let earlier: String? = lists.withLock { lists in
            var facts = lists[list, default: ListFacts()]
            defer { lists[list] = facts }
            if let earlier = facts.acknowledged[version] { return earlier }
            facts.acknowledged[version] = label
            facts.changing += 1
            if version > facts.maxAcknowledged { facts.maxAcknowledged = version }
            facts.recentAcks.append((version, time))
            if facts.recentAcks.count > 4096 { facts.recentAcks.removeFirst(2048) }
            return nil
        }
        history.record(list, at: time, actor: "ledger", "v\(version) acknowledged to \(label)")
        if let earlier {
            violated(.versionsGaplessAndUnique, "\(list)@\(version) acknowledged to both \(earlier) and \(label)")
        } else {
            passed(.versionsGaplessAndUnique)
        }
    }

    /// A write whose answer was lost: it may or may not have committed.
    public func indeterminate(list: String) {
        lists.withLock { $0[list, default: ListFacts()].indeterminate += 1 }
    }

    /// The highest version acknowledged so far on `list`.
    public func maxAcknowledged(list: String) -> Int64 {
        lists.withLock { $0[list]?.maxAcknowledged ?? 0 }
    }

    /// The earliest acknowledgement of a version above `version` on `list`, if any (its time).
    public func firstAcknowledgement(list: String, above version: Int64) -> Double? {
        lists.withLock { $0[list]?.recentAcks.first { $0.version > version }?.time }
    }

    /// `state` observed at its version by `source`: every observer must agree.
    /// With `view`, `state` is that view of the list: observers of the same view
    /// must agree, and the state must be the oracle's view of the list's state at
    /// that version (checked now if someone observed it, else when someone does).
    public func observe(_ state: ListState, source: String, view: ViewOracle? = nil) {
        let digest = Self.digest(state)
        let key = view.map { "\(state.id)?\($0.query)" } ?? state.id
        var toCheck: [(view: ViewOracle, state: ListState, source: String)] = []
        var listState: ListState?
        let conflict: String? = lists.withLock { lists in
            var facts = lists[key, default: ListFacts()]
            defer { lists[key] = facts }
            if let known = facts.states[state.version] {
                return known.digest == digest ? nil : known.source
            }
            facts.states[state.version] = (digest, source)
            return nil
        }
        lists.withLock { lists in
            var facts = lists[state.id, default: ListFacts()]
            defer { lists[state.id] = facts }
            if let view {
                if let known = facts.snapshots[state.version] {
                    listState = known
                    toCheck = [(view, state, source)]
                } else {
                    facts.pendingViews[state.version, default: []].append((view, state, source))
                    if facts.pendingViews.count > Self.oracleWindow, let oldest = facts.pendingViews.keys.min() {
                        facts.pendingViews[oldest] = nil
                    }
                }
            } else if facts.snapshots[state.version] == nil {
                facts.snapshots[state.version] = state
                if facts.snapshots.count > Self.oracleWindow, let oldest = facts.snapshots.keys.min() {
                    facts.snapshots[oldest] = nil
                }
                listState = state
                toCheck = facts.pendingViews.removeValue(forKey: state.version) ?? []
            }
        }
        if let conflict {
            violated(
                .statesAgree,
                "\(key)@\(state.version): \(source) sees a state other than \(conflict) saw (\(state))")
        } else {
            passed(.statesAgree)
        }
        guard let listState else { return }
        for entry in toCheck {
            let expected = entry.view.evaluate(listState)
            if Self.digest(expected) == Self.digest(entry.state) {
                passed(.viewsMatchOracle)
                continue
            }
            mismatch.withLock { $0 = $0 ?? ViewMismatch(view: entry.view, list: listState, seen: entry.state) }
            violated(
                .viewsMatchOracle,
                "\(entry.source): view \(entry.view.query) of \(state.id)@\(state.version) is "
                    + "\(Self.describe(entry.state)), the oracle's is \(Self.describe(expected))")
        }
    }

    /// A state's sections and item ids, short, for messages.
    public static func describe(_ state: ListState) -> String {
        state.sections.map { "\($0.model.id):[\($0.items.map(\.id).joined(separator: ","))]" }.joined(separator: " ")
    }

    /// The digest `observe` recorded for `list` at `version`, if any.
    public func digest(list: String, version: Int64) -> UInt64? {
        lists.withLock { $0[list]?.states[version]?.digest }
    }

    /// History pruning with `versions` kept happened (resets of older versions are then justified).
    public func pruned(keeping versions: Int64) {
        retention.withLock { $0 = min($0, versions) }
    }

    /// Whether a reset from `since` to `to` is one of the contract's reasons
    /// (history pruned past `since`, another epoch, `since` ahead of the list).
    public func resetJustified(list: String, since: Int64, to: Int64, heldEpoch: String, epoch: String) -> Bool {
        if heldEpoch != epoch || since > to { return true }
        return to - since >= retention.withLock { $0 }
    }

    /// The final checks of versions: per list, acknowledged changing writes
    /// ≤ final − first ≤ those plus the writes whose answer was lost, and no
    /// version observed above the final one.
    public func checkVersions(final: ListState) {
        let facts = lists.withLock { $0[final.id] ?? ListFacts() }
        let committed = final.version - facts.firstVersion
        check(
            .versionsGaplessAndUnique,
            committed >= Int64(facts.changing) && committed <= Int64(facts.changing + facts.indeterminate),
            "\(final.id): \(committed) versions after the first, but \(facts.changing) writes acknowledged "
                + "and \(facts.indeterminate) lost (a gap or a lost write)")
        let beyond = facts.states.keys.filter { $0 > final.version }.sorted()
        check(
            .statesAgree, beyond.isEmpty,
            "\(final.id): versions \(beyond.prefix(5)) were seen but the final version is \(final.version) (lost)")
        check(
            .statesAgree, facts.maxAcknowledged <= final.version,
            "\(final.id): version \(facts.maxAcknowledged) was acknowledged but the final version is \(final.version)")
    }

    /// A 64-bit FNV-1a digest of a state's sections and epoch (not its version or name).
    public static func digest(_ state: ListState) -> UInt64 {
        var copy = state
        copy.version = 0
        copy.name = ""
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in copy.json.canonicalText.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }
}
