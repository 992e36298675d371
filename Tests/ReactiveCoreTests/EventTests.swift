import Testing

@testable import ReactiveCore

@Suite struct EventTests {
    struct Boom: Error {}

    @Test func terminalEventsStopTheSequence() {
        #expect(Event<Int>.next(1).isStopEvent == false)
        #expect(Event<Int>.completed.isStopEvent)
        #expect(Event<Int>.error(Boom()).isStopEvent)
    }

    @Test func onlyNextCarriesAnElement() {
        #expect(Event<Int>.next(7).element == 7)
        #expect(Event<Int>.completed.element == nil)
    }
}
