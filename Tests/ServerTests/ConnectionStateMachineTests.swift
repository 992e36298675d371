import HTTP
import Testing

@testable import Server

@Suite struct ConnectionStateMachineTests {
    typealias Machine = ConnectionStateMachine

    static func head(
        _ method: HTTPMethod = .get, version: HTTPVersion = .http1_1, keepAlive: Bool = true,
        expectsContinue: Bool = false
    ) -> RequestHead {
        RequestHead(
            method: method, target: "/", version: version, keepAlive: keepAlive, expectsContinue: expectsContinue)
    }

    @Test func keepAliveRequestCycle() {
        var machine = Machine()
        #expect(machine.bytesReceived() == .armTimer(.head))
        #expect(machine.state == .readingHead)
        let head = Self.head()
        #expect(machine.headReceived(head) == .armTimer(.body))
        #expect(machine.requestReceived(head) == .dispatch)
        #expect(machine.hasOutstandingRequest)
        #expect(!machine.acceptsInput)
        #expect(!machine.wantsToRead)
        let exchange = Machine.Exchange(method: .get, version: .http1_1, keepAlive: true)
        #expect(machine.responseReady(handlerWantsClose: false) == .writeResponse(exchange))
        #expect(machine.state == .idle)
        #expect(machine.nextRequest(hasBufferedBytes: false) == .armTimer(.keepAlive))
        #expect(machine.outputFlushed() == .none)
        #expect(machine.state == .idle)
    }

    @Test func pipelinedBytesStartTheHeadTimerAtOnce() {
        var machine = Machine()
        _ = machine.bytesReceived()
        let head = Self.head()
        _ = machine.headReceived(head)
        _ = machine.requestReceived(head)
        _ = machine.responseReady(handlerWantsClose: false)
        #expect(machine.nextRequest(hasBufferedBytes: true) == .armTimer(.head))
        #expect(machine.state == .readingHead)
    }

    @Test func clientConnectionCloseClosesAfterTheResponse() {
        var machine = Machine()
        _ = machine.bytesReceived()
        let head = Self.head(keepAlive: false)
        _ = machine.headReceived(head)
        _ = machine.requestReceived(head)
        let exchange = Machine.Exchange(method: .get, version: .http1_1, keepAlive: false)
        #expect(machine.responseReady(handlerWantsClose: false) == .writeResponse(exchange))
        #expect(machine.state == .closingAfterFlush)
        #expect(machine.outputFlushed() == .linger)
        #expect(machine.state == .lingering)
        #expect(machine.wantsToRead)
        #expect(machine.inputClosed() == .close)
    }

    @Test func handlerConnectionCloseClosesAfterTheResponse() {
        var machine = Machine()
        let head = Self.head()
        _ = machine.headReceived(head)
        _ = machine.requestReceived(head)
        let exchange = Machine.Exchange(method: .get, version: .http1_1, keepAlive: false)
        #expect(machine.responseReady(handlerWantsClose: true) == .writeResponse(exchange))
        #expect(machine.state == .closingAfterFlush)
    }

    @Test func expectContinueAsksForTheBody() {
        var machine = Machine()
        _ = machine.bytesReceived()
        #expect(machine.headReceived(Self.head(.post, expectsContinue: true)) == .sendContinue)
        #expect(machine.bytesReceived() == .armTimer(.body))
    }

    @Test func aHeadRefusedWithABodyClosesAfterTheAnswer() {
        var machine = Machine()
        _ = machine.bytesReceived()
        #expect(machine.headRefused(Self.head(.post, expectsContinue: true), closing: true) == .cancelTimer)
        let exchange = Machine.Exchange(method: .post, version: .http1_1, keepAlive: false)
        #expect(machine.responseReady(handlerWantsClose: true) == .writeResponse(exchange))
        #expect(machine.state == .closingAfterFlush)
    }

    @Test func aHeadRefusedWithoutABodyKeepsTheConnection() {
        var machine = Machine()
        _ = machine.bytesReceived()
        #expect(machine.headRefused(Self.head(), closing: false) == .cancelTimer)
        let exchange = Machine.Exchange(method: .get, version: .http1_1, keepAlive: true)
        #expect(machine.responseReady(handlerWantsClose: false) == .writeResponse(exchange))
        #expect(machine.state == .idle)
    }

    @Test func headTimeoutAnswers408AndCloses() {
        var machine = Machine()
        _ = machine.bytesReceived()
        guard case .sendError(let status, let detail) = machine.timedOut() else {
            Issue.record("expected an error response")
            return
        }
        #expect(status == .requestTimeout)
        #expect(detail.contains("head"))
        #expect(machine.state == .closingAfterFlush)
        #expect(machine.outputFlushed() == .linger)
        #expect(machine.timedOut() == .close)
    }

    @Test func bodyTimeoutAnswers408() {
        var machine = Machine()
        _ = machine.headReceived(Self.head(.post))
        guard case .sendError(let status, _) = machine.timedOut() else {
            Issue.record("expected an error response")
            return
        }
        #expect(status == .requestTimeout)
    }

    @Test func idleTimeoutClosesSilently() {
        var machine = Machine()
        #expect(machine.timedOut() == .close)
        #expect(machine.state == .closed)
    }

    @Test func parkedRequestHasNoTimeout() {
        var machine = Machine()
        let head = Self.head()
        _ = machine.headReceived(head)
        _ = machine.requestReceived(head)
        #expect(machine.timedOut() == .none)
        #expect(machine.hasOutstandingRequest)
    }

    @Test func clientLeavingWhileParkedCancels() {
        var machine = Machine()
        let head = Self.head()
        _ = machine.headReceived(head)
        _ = machine.requestReceived(head)
        #expect(machine.inputClosed() == .cancelAndClose)
        #expect(machine.state == .closed)
        #expect(machine.responseReady(handlerWantsClose: false) == .none)
    }

    @Test func clientLeavingMidHeadCloses() {
        var machine = Machine()
        _ = machine.bytesReceived()
        #expect(machine.inputClosed() == .close)
    }

    @Test func halfClosedClientStillGetsItsErrorResponse() {
        var machine = Machine()
        _ = machine.bytesReceived()
        _ = machine.parseFailed(HTTPParseError(status: .badRequest, reason: "bad"))
        #expect(machine.inputClosed() == .none)
        #expect(machine.outputFlushed() == .linger)
    }

    @Test func parseFailureSendsItsStatus() {
        var machine = Machine()
        _ = machine.bytesReceived()
        let action = machine.parseFailed(
            HTTPParseError(status: .requestHeaderFieldsTooLarge, reason: "too many fields"))
        #expect(action == .sendError(.requestHeaderFieldsTooLarge, detail: "too many fields"))
        #expect(!machine.acceptsInput)
    }

    @Test func http10WithoutKeepAliveCloses() {
        var machine = Machine()
        let head = Self.head(version: .http1_0, keepAlive: false)
        _ = machine.headReceived(head)
        _ = machine.requestReceived(head)
        #expect(
            machine.responseReady(handlerWantsClose: false)
                == .writeResponse(.init(method: .get, version: .http1_0, keepAlive: false)))
    }

    @Test func streamingKeepsTheConnectionForHTTP11Only() {
        var machine = Machine()
        let head = Self.head()
        _ = machine.headReceived(head)
        _ = machine.requestReceived(head)
        let exchange = Machine.Exchange(method: .get, version: .http1_1, keepAlive: true)
        #expect(machine.streamStarted(handlerWantsClose: false) == .writeStreamHead(exchange))
        #expect(machine.hasOutstandingRequest)
        #expect(machine.responseReady(handlerWantsClose: false) == .none)
        #expect(machine.streamFinished() == .writeStreamEnd(exchange))
        #expect(machine.state == .idle)

        var old = Machine()
        let head10 = Self.head(version: .http1_0, keepAlive: true)
        _ = old.headReceived(head10)
        _ = old.requestReceived(head10)
        #expect(
            old.streamStarted(handlerWantsClose: false)
                == .writeStreamHead(.init(method: .get, version: .http1_0, keepAlive: false)))
    }

    @Test func shutdownClosesIdleAndLetsInFlightFinishWithClose() {
        var idle = Machine()
        #expect(idle.shutdownRequested() == .close)

        var busy = Machine()
        let head = Self.head()
        _ = busy.headReceived(head)
        _ = busy.requestReceived(head)
        #expect(busy.shutdownRequested() == .none)
        #expect(
            busy.responseReady(handlerWantsClose: false)
                == .writeResponse(.init(method: .get, version: .http1_1, keepAlive: false)))
        #expect(busy.state == .closingAfterFlush)
    }

    @Test func requestsReadDuringDrainAreAnsweredWithClose() {
        var machine = Machine()
        _ = machine.bytesReceived()
        #expect(machine.shutdownRequested() == .none)
        let head = Self.head()
        _ = machine.headReceived(head)
        _ = machine.requestReceived(head)
        #expect(
            machine.responseReady(handlerWantsClose: false)
                == .writeResponse(.init(method: .get, version: .http1_1, keepAlive: false)))
    }

    @Test func overCapacityAnswers503() {
        var machine = Machine()
        guard case .sendError(let status, _) = machine.rejectedOverCapacity() else {
            Issue.record("expected 503")
            return
        }
        #expect(status == .serviceUnavailable)
        #expect(!machine.acceptsInput)
    }

    @Test func errorWhileParkedCancels() {
        var machine = Machine()
        let head = Self.head()
        _ = machine.headReceived(head)
        _ = machine.requestReceived(head)
        #expect(machine.errorCaught() == .cancelAndClose)
        var idle = Machine()
        #expect(idle.errorCaught() == .close)
    }
}
