import Glibc
import Testing

@testable import Server

@Suite struct AcceptThrottleTests {
    @Test func descriptorExhaustionPausesWithBackoff() {
        var throttle = AcceptThrottle()
        #expect(throttle.acceptFailed(errno: EMFILE, now: 1_000) == .pause(until: 1_000 + throttle.basePause))
        let early = throttle.shouldResume(now: 1_000)
        #expect(!early)
        let due = throttle.shouldResume(now: 1_000 + throttle.basePause)
        #expect(due)
        #expect(throttle.pausedUntil == nil)
        // Still failing: the pause doubles.
        #expect(throttle.acceptFailed(errno: ENFILE, now: 0) == .pause(until: 2 * throttle.basePause))
        throttle.acceptSucceeded()
        #expect(throttle.acceptFailed(errno: EMFILE, now: 0) == .pause(until: throttle.basePause))
    }

    @Test func pauseIsCapped() {
        var throttle = AcceptThrottle()
        var last: UInt64 = 0
        for _ in 0..<20 {
            if case .pause(let until) = throttle.acceptFailed(errno: EMFILE, now: 0) { last = until }
        }
        #expect(last == throttle.maximumPause)
    }

    @Test func perConnectionErrorsKeepAccepting() {
        var throttle = AcceptThrottle()
        #expect(throttle.acceptFailed(errno: ECONNABORTED, now: 0) == .continueAccepting)
        #expect(throttle.pausedUntil == nil)
    }
}
