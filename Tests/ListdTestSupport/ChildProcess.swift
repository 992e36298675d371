import CSystem
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A child process started with `posix_spawn` and reaped with `waitpid`, for
/// the servers the tests start.
///
/// Not Foundation's `Process`: on Linux it learns that a child exited when a
/// socket it passed to the child closes, and every process spawned while that
/// socket is open (by any test, on any thread) can inherit it and keep it open,
/// so `waitUntilExit()` spun on a listd that was already a zombie in one full
/// run (swift-corelibs-foundation #4795). Here the child gets exactly three
/// descriptors (stdin from /dev/null, stdout, stderr) and everything else is
/// closed in it; the exit is learnt from the kernel (`waitpid`), not from a
/// descriptor.
public final class ChildProcess: Sendable {
    /// The child's process id.
    public let processIdentifier: pid_t
    private let exit = Mutex<Int32?>(nil)
    private let signaled = Atomic<Bool>(false)

    /// Starts `executable` with `arguments` and exactly `environment`, in `directory`.
    /// Its standard output and error go to `stdout` and `stderr` (descriptors of
    /// this process, or /dev/null when nil).
    public init(
        executable: URL, arguments: [String], environment: [String: String], directory: URL,
        stdout: Int32? = nil, stderr: Int32? = nil
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        for (target, source) in [(Int32(1), stdout), (Int32(2), stderr)] {
            if let source {
                posix_spawn_file_actions_adddup2(&actions, source, target)
            } else {
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
            }
        }
        csystem_spawn_actions_chdir(&actions, directory.path)
        csystem_spawn_actions_closefrom(&actions, 3)

        // The child starts with no signal blocked and every signal at its
        // default action, whatever the test process's threads block or ignore.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable.path, &actions, &attributes, argv, envp)
        guard status == 0 else {
            throw TestFailure("posix_spawn \(executable.path): \(String(cString: strerror(status)))")
        }
        processIdentifier = pid
    }

    /// Whether the child has not exited yet (reaps it if it has).
    public var isRunning: Bool {
        if exit.withLock({ $0 }) != nil { return false }
        var status: Int32 = 0
        let reaped = waitpid(processIdentifier, &status, WNOHANG)
        if reaped == processIdentifier {
            record(status)
            return false
        }
        return reaped == 0
    }

    /// Sends SIGTERM.
    public func terminate() {
        if exit.withLock({ $0 }) == nil { kill(processIdentifier, SIGTERM) }
    }

    /// Blocks until the child exited and returns ``terminationStatus``.
    @discardableResult
    public func waitUntilExit() -> Int32 {
        var unexplained = 0
        while true {
            if let status = exit.withLock({ $0 }) { return status }
            var status: Int32 = 0
            let reaped = waitpid(processIdentifier, &status, 0)
            if reaped == processIdentifier {
                record(status)
            } else if reaped == -1, errno != EINTR {
                // Another thread reaped it and records the status right after;
                // after a second, someone else did (no status to be had).
                unexplained += 1
                if unexplained > 1_000 { exit.withLock { if $0 == nil { $0 = 255 } } }
                usleep(1_000)
            }
        }
    }

    /// The exit code, or the number of the signal that ended the child (as
    /// Foundation's `Process` reports it); -1 while it runs.
    public var terminationStatus: Int32 { exit.withLock { $0 } ?? -1 }

    /// Whether a signal ended the child (``terminationStatus`` is then its number).
    public var wasSignaled: Bool { signaled.load(ordering: .acquiring) }

    private func record(_ status: Int32) {
        let signal = status & 0x7f
        let code = signal == 0 ? (status >> 8) & 0xff : signal
        exit.withLock {
            if $0 == nil {
                $0 = code
                signaled.store(signal != 0, ordering: .releasing)
            }
        }
    }

    /// This test process's environment without its `LISTD_*` variables.
    public static var environmentWithoutListd: [String: String] {
        ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LISTD_") }
    }

    /// Starts `executable` with its standard output (and standard error, when
    /// `errors`) going to a pipe; returns the child and the pipe's reading end.
    public static func piped(
        _ executable: URL, _ arguments: [String], environment: [String: String] = environmentWithoutListd,
        directory: URL? = nil, errors: Bool = false
    ) throws -> (ChildProcess, FileHandle) {
        let pipe = try closeOnExecPipe()
        let reader = FileHandle(fileDescriptor: pipe.read, closeOnDealloc: true)
        defer { close(pipe.write) }
        let child = try ChildProcess(
            executable: executable, arguments: arguments, environment: environment,
            directory: directory ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath),
            stdout: pipe.write, stderr: errors ? pipe.write : nil)
        return (child, reader)
    }

    /// Starts `executable` with its standard output and error collected in a log.
    public static func logged(
        _ executable: URL, _ arguments: [String], environment: [String: String] = environmentWithoutListd,
        directory: URL? = nil
    ) throws -> (ChildProcess, OutputLog) {
        let (child, reader) = try piped(
            executable, arguments, environment: environment, directory: directory, errors: true)
        return (child, OutputLog(reader))
    }

    /// Waits for the exit on a thread of its own (`waitpid` blocks), not on one of Swift's cooperative threads.
    public func exited() async -> Int32 {
        if let status = exit.withLock({ $0 }) { return status }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            Thread.detachNewThread { continuation.resume(returning: self.waitUntilExit()) }
        }
    }
}

/// A pipe whose two descriptors are closed on exec (the child gets its copy
/// through `dup2`, which clears the flag on the copy only).
public func closeOnExecPipe() throws -> (read: Int32, write: Int32) {
    var descriptors: [Int32] = [0, 0]
    guard csystem_pipe_cloexec(&descriptors) == 0 else {
        throw TestFailure("pipe2: \(String(cString: strerror(errno)))")
    }
    return (descriptors[0], descriptors[1])
}
