import ListModel
import ListStore
import Testing

@testable import ListAPI

/// The event stream's rules, without sockets: one chunk out at a time,
/// changes during it coalesced into one computation from the last cursor.
@Suite struct EventStreamMachineTests {
    let list = Identifier("l")
    let other = Identifier("m")

    func answer(from: Int64, to: Int64, epoch: String = "e", reset: Bool = false) -> EncodedChangeAnswer {
        EncodedChangeAnswer(
            list: list, epoch: epoch, from: from, to: to, reset: reset, stageCount: reset ? 0 : 1,
            json: Array("{\"from\":\(from),\"to\":\(to)}".utf8))
    }

    @Test func changesWhileBusyAreCoalescedIntoOneComputation() {
        var machine = EventStreamMachine(cursors: [list: .init(epoch: "e", version: 1)])
        machine.begin(behind: [])
        // The prelude is out: a change only marks the list.
        let r1 = machine.changed(list)
        #expect(r1.coalesced == true && r1.action == .none)
        let r2 = machine.changed(list)
        #expect(r2.coalesced == true && r2.action == .none)
        let r3 = machine.flushed()
        #expect(r3 == .compute([list]), "one computation for both changes")
        let (events, action) = machine.computed([(list, .answer(answer(from: 1, to: 3)))])
        #expect(action == .none && events.map(\.id) == ["l:e:3"])
        #expect(events.first?.kind == .change)
        // Busy until flushed: a heartbeat may not go out meanwhile.
        let due = machine.heartbeatDue()
        #expect(!due)
        let r4 = machine.changed(list)
        #expect(r4.coalesced == true && r4.action == .none)
        let r5 = machine.flushed()
        #expect(r5 == .compute([list]))
        #expect(machine.cursors[list] == .init(epoch: "e", version: 3), "the next question starts where the client is")
    }

    @Test func anAnswerWithNothingNewIsNotSentAndTheStreamGoesIdle() {
        var machine = EventStreamMachine(cursors: [list: .init(epoch: "e", version: 3)])
        machine.begin(behind: [list])
        let r6 = machine.flushed()
        #expect(r6 == .compute([list]))
        let (events, action) = machine.computed([(list, .answer(answer(from: 3, to: 3)))])
        #expect(events.isEmpty && action == .none)
        let due = machine.heartbeatDue()
        #expect(due, "idle again")
    }

    /// A view's answer with no stages (the writes left the view alone) sends
    /// nothing and keeps the client's version as the cursor, noting the later
    /// version whose view is the same, from which the next answer is computed;
    /// the next event moves the cursor on and forgets it.
    @Test func aViewsAnswerWithoutStagesSendsNothingAndNotesTheSameVersion() {
        var machine = EventStreamMachine(cursors: [list: .init(epoch: "e", version: 3)])
        machine.begin(behind: [list])
        #expect(machine.flushed() == .compute([list]))
        var quiet = EncodedChangeAnswer.unchanged(ListHead(id: list, epoch: "e", version: 7), from: 3, to: 7)
        quiet.ofView = true
        let (none, idle) = machine.computed([(list, .answer(quiet))])
        #expect(none.isEmpty && idle == .none)
        #expect(machine.cursors[list] == .init(epoch: "e", version: 3, same: 7))
        #expect(machine.changed(list).action == .compute([list]))
        var loud = answer(from: 3, to: 9)
        loud.ofView = true
        let (events, _) = machine.computed([(list, .answer(loud))])
        #expect(events.map(\.id) == ["l:e:9"])
        #expect(machine.cursors[list] == .init(epoch: "e", version: 9))
    }

    @Test func resetsDeletionsAndManyLists() {
        var machine = EventStreamMachine(cursors: [
            list: .init(epoch: "e", version: 3), other: .init(epoch: "f", version: 1),
        ])
        machine.begin(behind: [list, other])
        let r7 = machine.flushed()
        #expect(r7 == .compute([list, other]))
        let (events, _) = machine.computed([
            (list, .answer(answer(from: 3, to: 9, epoch: "g", reset: true))), (other, .deleted),
        ])
        #expect(events.map(\.kind) == [.reset, .deleted])
        #expect(events.map(\.id) == ["l:g:9,m:f:1", "l:g:9,m:f:1"])
        #expect(String(decoding: events[1].data, as: UTF8.self) == #"{"list":"m","deleted":true}"#)
        let r8 = machine.flushed()
        #expect(r8 == .none)
        // A deletion is told once.
        let r9 = machine.changed(other)
        #expect(r9.coalesced == false && r9.action == .compute([other]))
        let again = machine.computed([(other, .deleted)])
        #expect(again.events.isEmpty)
    }

    @Test func aStreamAdoptsTheOutcomeOfTheSameQuestion() {
        var first = EventStreamMachine(cursors: [list: .init(epoch: "e", version: 1)])
        var second = first
        var stale = EventStreamMachine(cursors: [list: .init(epoch: "e", version: 0)])
        first.begin(behind: [list])
        second.begin(behind: [list])
        stale.begin(behind: [list])
        _ = first.flushed()
        _ = second.flushed()
        _ = stale.flushed()
        let before = first.cursors
        let (events, _) = first.computed([(list, .answer(answer(from: 1, to: 2)))])
        #expect(events.count == 1)
        let adopted = second.adopt(before: before, after: first.cursors, sent: true)
        #expect(adopted == EventStreamMachine.Action.none)
        #expect(second.cursors == first.cursors)
        let refused = stale.adopt(before: before, after: first.cursors, sent: true)
        #expect(refused == nil, "other cursors: computed(_:) must derive its own events")
        // With nothing sent, the adopter goes idle and picks up what is pending.
        var third = EventStreamMachine(cursors: [list: .init(epoch: "e", version: 2)])
        third.begin(behind: [])
        _ = third.changed(list)
        let next = third.adopt(before: third.cursors, after: third.cursors, sent: false)
        #expect(next == .compute([list]))
    }

    @Test func aClosedStreamDoesNothing() {
        var machine = EventStreamMachine(cursors: [list: .init(epoch: "e", version: 1)])
        machine.close()
        let r10 = machine.changed(list)
        #expect(r10.coalesced == false && r10.action == .none)
        let r11 = machine.flushed()
        #expect(r11 == .none)
        let due = machine.heartbeatDue()
        #expect(!due)
    }

    @Test func eventsAreFramedOnSeparateLines() {
        let event = Event(kind: .change, list: list, data: Array(#"{"a":1}"#.utf8), id: "l:e:2")
        #expect(String(decoding: event.bytes, as: UTF8.self) == "id: l:e:2\nevent: change\ndata: {\"a\":1}\n\n")
    }

    @Test(arguments: [
        ("l:3", true), ("l:now", true), ("l:e:3", true), ("l:3,m:4", true),
        ("", false), ("l", false), ("l:-1", false), ("l:x", false), ("l:3,l:4", false), ("bad id:3", false),
        ("l:e:3:4", false),
    ])
    func cursorsParse(text: String, valid: Bool) {
        let parsed = try? EventStreamMachine.parseCursors(text, what: "lists")
        #expect((parsed != nil) == valid, "\(text)")
    }

    @Test func cursorsNameTheirEpochAndVersion() throws {
        let cursors = try EventStreamMachine.parseCursors("l:e:3,m:now", what: "lists")
        #expect(cursors[list] == .init(epoch: "e", version: 3))
        #expect(cursors[other] == .init(epoch: nil, version: -1))
        let many = (0...EventStreamMachine.maximumLists).map { "l\($0):1" }.joined(separator: ",")
        #expect(throws: Problem.self) { try EventStreamMachine.parseCursors(many, what: "lists") }
    }
}
