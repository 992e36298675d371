import Glibc

/// Decides what a loop does when accepting a connection fails.
///
/// Why: when the process or system runs out of file descriptors (EMFILE,
/// ENFILE) or memory, the pending connection stays in the listen queue and a
/// level-triggered listener would wake the loop forever. So the loop stops
/// watching its listener for a short pause, then tries again; the pause
/// doubles while failures continue (up to a cap) and resets on success.
struct AcceptThrottle {
    /// What the loop should do after a failed accept.
    enum Action: Equatable {
        /// A per-connection failure (the peer reset before accept): keep accepting.
        case continueAccepting
        /// Out of descriptors or memory: stop watching the listener until `until`.
        case pause(until: UInt64)
    }

    /// The first pause, in nanoseconds.
    var basePause: UInt64 = 50_000_000
    /// The longest pause, in nanoseconds.
    var maximumPause: UInt64 = 1_000_000_000
    /// Whether accepting is paused, and until when.
    private(set) var pausedUntil: UInt64?
    private var currentPause: UInt64 = 0

    /// Classifies a failed accept's errno at time `now`.
    mutating func acceptFailed(errno: Int32, now: UInt64) -> Action {
        switch errno {
        case EMFILE, ENFILE, ENOBUFS, ENOMEM:
            currentPause = currentPause == 0 ? basePause : min(currentPause * 2, maximumPause)
            let until = now + currentPause
            pausedUntil = until
            return .pause(until: until)
        default:
            // ECONNABORTED, EPROTO, EPERM (firewall) and the like concern one
            // connection only.
            return .continueAccepting
        }
    }

    /// A connection was accepted: failures are over.
    mutating func acceptSucceeded() {
        currentPause = 0
    }

    /// Whether the pause is over at `now`; if so, the loop watches its listener again.
    mutating func shouldResume(now: UInt64) -> Bool {
        guard let until = pausedUntil, until <= now else { return false }
        pausedUntil = nil
        return true
    }
}
