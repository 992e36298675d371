import Foundation
import Glibc
import Synchronization

/// What must not outlive the harness (listd instances, the throwaway PostgreSQL,
/// the tmpfs, the network namespaces), undone on every way out of the process:
/// the end of a run, an `exit` after a failure, and SIGINT, SIGTERM or SIGHUP,
/// which become an `exit`. Steps run once each, the last added first.
enum Teardown {
    private static let steps = Mutex<[@Sendable () -> Void]>([])
    private static let installed = Atomic<Bool>(false)

    /// Adds `step` to what runs at exit.
    static func add(_ step: @escaping @Sendable () -> Void) {
        if !installed.exchange(true, ordering: .acquiringAndReleasing) {
            atexit { Teardown.run() }
            catchSignals()
        }
        steps.withLock { $0.append(step) }
    }

    /// The pipe a signal handler writes the signal's number to (the only thing it does:
    /// `write` is async-signal-safe); a thread of its own reads it and exits.
    private static let signalPipe: (read: Int32, write: Int32) = {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return (-1, -1) }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return (ends[0], ends[1])
    }()

    /// SIGINT, SIGTERM and SIGHUP become an `exit`, whatever their disposition was
    /// (a shell starts background jobs with SIGINT ignored).
    private static func catchSignals() {
        let ends = signalPipe
        guard ends.write >= 0 else { return }
        for number in [SIGINT, SIGTERM, SIGHUP] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(Teardown.signalPipe.write, &byte, 1)
            }
            sigemptyset(&action.sa_mask)
            sigaction(number, &action, nil)
        }
        Thread.detachNewThread {
            var byte: UInt8 = 0
            while read(ends.read, &byte, 1) < 0 && errno == EINTR {}
            say("signal \(byte): stopping what the harness started")
            exit(128 + Int32(byte))
        }
    }

    /// Runs every step added so far, each once.
    static func run() {
        while let step = steps.withLock({ $0.popLast() }) { step() }
    }
}
