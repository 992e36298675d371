import JSON
import ListClient
import SectionDiff
import Testing

/// The follow's rules as a value: no sockets, no tasks.
@Suite struct FollowMachineTests {
    static let snapshotV1 = """
        {"id":"g","name":"G","epoch":"e1","version":1,"sections":[
          {"id":"fruit","model":{"t":"F"},"items":[{"id":"apple","model":1},{"id":"pear","model":2}]},
          {"id":"veg","model":{},"items":[{"id":"leek","model":3}]}]}
        """

    static func state(_ text: String) throws -> ListState { try ListState(json: JSONValue(parsing: text)) }
    static func answer(_ text: String) throws -> ChangeAnswer { try ChangeAnswer(json: JSONValue(parsing: text)) }

    /// v1 → v2: apple deleted and pear updated; then kiwi inserted and leek moved into fruit.
    static let stagesV1toV2 = """
        {"list":"g","epoch":"e1","from":1,"to":2,"stages":[
          {"itemDeleted":[[0,0]],"itemUpdated":[{"at":[0,1],"model":20}]},
          {"itemInserted":[{"at":[0,0],"item":{"id":"kiwi","model":9}}],"itemMoved":[{"from":[1,0],"to":[0,2]}]}]}
        """

    @Test func startsBySnapshotThenPollsFromItsVersionAndEpoch() throws {
        var machine = FollowMachine(list: "g")
        #expect(machine.nextAction == .fetchSnapshot)
        let update = machine.receive(snapshot: try Self.state(Self.snapshotV1))
        guard case .snapshot(let state) = update else { Issue.record("first update is \(update)"); return }
        #expect(state.version == 1)
        #expect(machine.nextAction == .poll(since: 1, epoch: "e1"))
    }

    @Test func appliesEachStageAndReportsTheStateAfterIt() throws {
        var machine = FollowMachine(list: "g")
        _ = machine.receive(snapshot: try Self.state(Self.snapshotV1))
        let update = machine.receive(try Self.answer(Self.stagesV1toV2))
        guard case .changes(let change) = update else {
            Issue.record("expected changes, got \(String(describing: update))"); return
        }
        #expect(change.stages.count == 2)
        #expect(change.stages[0].sections[0].items.map(\.id) == ["pear"])
        #expect(change.stages[0].sections[0].items[0].model.text == "20")
        #expect(change.stages[1].sections[0].items.map(\.id) == ["kiwi", "pear", "leek"])
        #expect(change.stages[1].sections[1].items.isEmpty)
        #expect(change.state.version == 2)
        #expect(change.before.map { $0.items.count } == [2, 1])
        #expect(machine.state == change.state)
        #expect(machine.nextAction == .poll(since: 2, epoch: "e1"))
    }

    @Test func neverAppliesAnAnswerTwice() throws {
        var machine = FollowMachine(list: "g")
        _ = machine.receive(snapshot: try Self.state(Self.snapshotV1))
        let answer = try Self.answer(Self.stagesV1toV2)
        _ = machine.receive(answer)
        let after = machine.state
        // The same answer again (a retried request whose first answer did arrive)
        // starts from 1 while the state is at 2: refetch, do not apply.
        #expect(machine.receive(answer) == nil)
        #expect(machine.nextAction == .fetchSnapshot)
        #expect(machine.refetchCount == 1)
        let reset = machine.receive(snapshot: after!)
        #expect(reset == .reset(after!))
    }

    @Test func aStageThatDoesNotApplyTriggersARefetchNotACrash() throws {
        var machine = FollowMachine(list: "g")
        _ = machine.receive(snapshot: try Self.state(Self.snapshotV1))
        let bad = try Self.answer(#"{"list":"g","epoch":"e1","from":1,"to":2,"stages":[{"itemDeleted":[[0,7]]}]}"#)
        #expect(machine.receive(bad) == nil)
        #expect(machine.nextAction == .fetchSnapshot)
        #expect(machine.lastRejection?.kind == .invalidResponse)
        let updateOutOfRange = try Self.answer(
            #"{"list":"g","epoch":"e1","from":1,"to":2,"stages":[{"itemUpdated":[{"at":[5,0],"model":1}]}]}"#)
        _ = machine.receive(snapshot: try Self.state(Self.snapshotV1))
        #expect(machine.receive(updateOutOfRange) == nil)
        #expect(machine.refetchCount == 2)
    }

    @Test func aTimeoutChangesNothing() throws {
        var machine = FollowMachine(list: "g")
        _ = machine.receive(snapshot: try Self.state(Self.snapshotV1))
        #expect(machine.receive(try Self.answer(#"{"list":"g","epoch":"e1","from":1,"to":1,"stages":[]}"#)) == nil)
        #expect(machine.nextAction == .poll(since: 1, epoch: "e1"))
        #expect(machine.refetchCount == 0)
    }

    /// API.md: the answer is the net change, so writes that cancel out (an
    /// item inserted and deleted since V) answer no stages with `to` above V.
    /// The follow holds the new version and says so with a change of no
    /// stages (the next change starts from it); it does not refetch the list.
    @Test func aNetChangeOfNothingMovesTheVersionOnWithoutARefetch() throws {
        var machine = FollowMachine(list: "g")
        _ = machine.receive(snapshot: try Self.state(Self.snapshotV1))
        let update = machine.receive(try Self.answer(#"{"list":"g","epoch":"e1","from":1,"to":3,"stages":[]}"#))
        guard case .changes(let change) = update else {
            Issue.record("expected changes, got \(String(describing: update))"); return
        }
        #expect(change.from == 1 && change.state.version == 3 && change.stages.isEmpty)
        #expect(machine.nextAction == .poll(since: 3, epoch: "e1"))
        #expect(machine.refetchCount == 0)
        #expect(machine.state?.sections == (try Self.state(Self.snapshotV1)).sections)
    }

    @Test func aResetReplacesTheDataAndAnotherEpochRefetches() throws {
        var machine = FollowMachine(list: "g")
        _ = machine.receive(snapshot: try Self.state(Self.snapshotV1))
        let reset = try Self.answer(
            #"{"list":"g","epoch":"e2","from":1,"to":1,"reset":true,"stages":[],"snapshot":{"id":"g","name":"","epoch":"e2","version":1,"sections":[]}}"#
        )
        guard case .reset(let state) = machine.receive(reset) else { Issue.record("expected a reset"); return }
        #expect(state.epoch == "e2" && state.sections.isEmpty)
        #expect(machine.nextAction == .poll(since: 1, epoch: "e2"))
        let otherEpoch = try Self.answer(
            #"{"list":"g","epoch":"e3","from":1,"to":2,"stages":[{"sectionDeleted":[0]}]}"#)
        #expect(machine.receive(otherEpoch) == nil)
        #expect(machine.nextAction == .fetchSnapshot)
    }

    @Test func deletionEndsTheState() throws {
        var machine = FollowMachine(list: "g")
        _ = machine.receive(snapshot: try Self.state(Self.snapshotV1))
        #expect(machine.receiveDeleted() == .deleted(list: "g"))
        #expect(machine.state == nil)
    }

    @Test func malformedAnswersAreRejectedWithTypedErrors() throws {
        #expect(throws: WireError.self) { try Self.answer(#"{"list":"g"}"#) }
        #expect(throws: WireError.self) { try Self.state(#"{"id":"g","sections":[]}"#) }
        var machine = FollowMachine(list: "g")
        _ = machine.receive(snapshot: try Self.state(Self.snapshotV1))
        let unknownField = try Self.answer(#"{"list":"g","epoch":"e1","from":1,"to":2,"stages":[{"itemExploded":[]}]}"#)
        #expect(machine.receive(unknownField) == nil)
        #expect(machine.lastRejection?.detail.contains("itemExploded") == true)
    }

    static let refused = ListClientError(kind: .transport, detail: "connection refused")

    @Test func anInstanceThatFailsIsLeftForTheNextKeepingVersionAndEpoch() throws {
        var machine = FollowMachine(list: "g", instance: 1)
        _ = machine.receive(snapshot: try Self.state(Self.snapshotV1))
        #expect(machine.instance == 1)
        let moved1 = machine.failed(Self.refused, instances: 3)
        #expect(moved1)
        #expect(machine.instance == 2)
        // The follow asks the next instance for exactly what follows the state it holds.
        #expect(machine.nextAction == .poll(since: 1, epoch: "e1"))
        let moved2 = machine.failed(ListClientError(kind: .problem, status: 502, detail: "bad gateway"), instances: 3)
        #expect(moved2)
        #expect(machine.instance == 0, "round the end of the list")
        #expect(machine.instanceChoice.failovers == 2)
        // The next instance's answer continues the state: changes, not a reset.
        guard case .changes(let change) = machine.receive(try Self.answer(Self.stagesV1toV2)) else {
            Issue.record("expected changes"); return
        }
        #expect(change.from == 1 && change.state.version == 2)
        #expect(machine.refetchCount == 0)
    }

    @Test(arguments: [
        ListClientError(kind: .problem, status: 400, detail: "bad"),
        ListClientError(kind: .problem, status: 401, detail: "token"),
        ListClientError(kind: .problem, status: 404, detail: "gone"),
        ListClientError(kind: .problem, status: 408, detail: "slow"),
        ListClientError(kind: .problem, status: 429, detail: "slow down"),
        ListClientError(kind: .invalidResponse, detail: "not JSON"),
        ListClientError(kind: .cancelled, detail: ""),
    ])
    func anErrorAboutTheRequestKeepsTheInstance(error: ListClientError) {
        var machine = FollowMachine(list: "g")
        let moved3 = machine.failed(error, instances: 3)
        #expect(!moved3)
        #expect(machine.instance == 0 && machine.instanceChoice.failovers == 0)
    }

    @Test(arguments: [
        ListClientError(kind: .transport, detail: "connection reset"),
        ListClientError(kind: .transport, detail: "timed out"),
        ListClientError(kind: .problem, status: 500, detail: "database unreachable"),
        ListClientError(kind: .problem, status: 503, detail: "over the connection limit", retryAfter: 1),
        ListClientError(kind: .problem, status: 504, detail: "gateway timeout"),
    ])
    func aFailedInstanceMovesOnlyWhenThereIsAnother(error: ListClientError) {
        var single = FollowMachine(list: "g")
        let moved4 = single.failed(error, instances: 1)
        #expect(!moved4, "one base URL: retry it, as before")
        #expect(single.instance == 0)
        var pair = FollowMachine(list: "g")
        let moved5 = pair.failed(error, instances: 2)
        #expect(moved5)
        #expect(pair.instance == 1)
        let moved6 = pair.failed(error, instances: 2)
        #expect(moved6)
        #expect(pair.instance == 0)
    }

    @Test func anInstanceBeyondAShrunkListWrapsAround() {
        // The client's base URLs were replaced by fewer while the follow ran.
        var choice = InstanceChoice(instance: 4)
        let moved7 = choice.failed(Self.refused, instances: 2)
        #expect(moved7)
        #expect(choice.instance == 1)
    }

    @Test(arguments: 0..<20) func backoffGrowsWithJitterWithinBounds(seedless attempt: Int) {
        var backoff = Backoff(minimum: .milliseconds(100), maximum: .seconds(2))
        var last = Duration.zero
        for step in 0...attempt { last = backoff.next(); _ = step }
        let cap = min(2.0, 0.1 * Double(1 << min(attempt, 30)))
        let seconds = last / .seconds(1)
        #expect(seconds >= cap / 2 - 0.001 && seconds <= cap + 0.001)
        let retry = backoff.next(retryAfter: 1) / .seconds(1)
        #expect(retry >= 1 && retry <= 1.501)
        backoff.reset()
        #expect(backoff.next() <= .milliseconds(100))
    }

    /// Issue 26: `FollowOptions(minimumBackoff: .zero)` trapped in a precondition. A setting
    /// must not crash an app: the back-off clamps it (at least 1 ms, maximum at least minimum).
    @Test(arguments: [
        (Duration.zero, Duration.zero), (.seconds(-1), .milliseconds(5)), (.seconds(2), .seconds(1)),
        (.zero, .seconds(-3)),
    ])
    func aBackoffOutOfRangeIsClampedNotATrap(minimum: Duration, maximum: Duration) {
        var backoff = Backoff(minimum: minimum, maximum: maximum)
        #expect(backoff.minimum >= Backoff.smallestDelay)
        #expect(backoff.maximum >= backoff.minimum)
        for _ in 0..<40 {
            let delay = backoff.next()
            #expect(delay > .zero && delay <= backoff.maximum)
        }
    }

    /// A `Retry-After` that is not a number of seconds a person would write (NaN, negative,
    /// infinite) must not trap in the jitter's range either.
    @Test(arguments: [Double.nan, -5, .infinity, -.infinity])
    func aRetryAfterOutOfRangeIsClamped(seconds: Double) {
        var backoff = Backoff(minimum: .milliseconds(100), maximum: .seconds(2))
        let delay = backoff.next(retryAfter: seconds)
        #expect(delay >= .zero && delay <= Backoff.maximumRetryAfter * 1.5 + .milliseconds(1))
    }
}
