import Foundation
import Synchronization

/// A real `listd serve` process on a loopback port with a temporary
/// database, shared by every end-to-end test target.
///
/// Starting waits for the port listd logs without blocking a thread
/// (`Task.sleep`, not `Thread.sleep`): on a 2-core machine Swift's cooperative
/// pool has two threads, and a test that blocks one starves every other suite
/// running beside it.
public final class ListdProcess: Sendable {
    /// The child process.
    public let process: ChildProcess
    /// The port listd bound.
    public let port: Int
    /// The loopback address listd listens on (127.0.0.1 unless the caller gave another).
    public let host: String
    /// The temporary folder (database, working directory).
    public let directory: URL
    /// The database file.
    public let database: URL
    private let log: OutputLog

    /// The repository's `Migrations` folder, found from this file's path.
    public static var migrations: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Migrations")
    }

    /// Starts `listd serve` with `arguments` on `port` (0: a free one), in a new
    /// temporary folder, or on `previous`'s folder and database for a restart.
    /// With `store`, it serves that PostgreSQL URL (`--store`) instead of the SQLite file.
    /// `host` is the address it listens on; `launcher`, when given, is a command the
    /// listd command line is handed to (`ip netns exec NAME`, for the torture harness's
    /// network namespaces; it must exec listd in its own process).
    public init(
        _ arguments: [String] = [], port: Int = 0, reusing previous: ListdProcess? = nil,
        environment: [String: String] = [:], store: String? = nil, host: String = "127.0.0.1",
        launcher: [String] = []
    ) async throws {
        self.host = host
        if let previous {
            directory = previous.directory
            database = previous.database
        } else {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("listd-test-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            database = directory.appendingPathComponent("listd.sqlite")
        }
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LISTD_") }
        env.merge(environment) { $1 }
        let pipe = try closeOnExecPipe()
        log = OutputLog(FileHandle(fileDescriptor: pipe.read, closeOnDealloc: true))
        defer { close(pipe.write) }
        let listd = try ListdBinary.url
        let serve =
            [
                "serve", "--host", host, "--port", String(port),
            ] + (store.map { ["--store", $0] } ?? ["--db", database.path]) + [
                "--migrations", Self.migrations.path,
            ] + Self.keepAlive(arguments, environment) + arguments
        process = try ChildProcess(
            executable: launcher.first.map { URL(fileURLWithPath: $0) } ?? listd,
            arguments: launcher.isEmpty ? serve : Array(launcher.dropFirst()) + [listd.path] + serve,
            environment: env, directory: directory, stderr: pipe.write)
        let address = NSRegularExpression.escapedPattern(for: host)
        guard let found = await log.firstCapture(of: #"address=http://\#(address):(\d+)"#, timeout: .seconds(60)),
            let port = Int(found)
        else {
            process.terminate()
            throw TestFailure("listd did not start (exit status \(process.waitUntilExit())):\n\(log.text)")
        }
        self.port = port
    }

    /// An hour of keep-alive unless the test sets its own: a test's connection
    /// idle while its tasks wait for a thread (a minute, at the start of a full
    /// run) must not be closed under it, or a count of connections opened is off.
    static func keepAlive(_ arguments: [String], _ environment: [String: String]) -> [String] {
        arguments.contains { $0.hasPrefix("--keep-alive-timeout") } || environment["LISTD_KEEP_ALIVE_TIMEOUT"] != nil
            ? [] : ["--keep-alive-timeout", "1h"]
    }

    /// `http://<host>:<port>`.
    public var baseURL: URL {
        var components = URLComponents()
        components.scheme = "http"
        components.host = host
        components.port = port
        return components.url ?? URL(fileURLWithPath: "/")
    }

    /// What listd logged so far.
    public var logText: String { log.text }

    /// Sends SIGTERM, waits for the exit (listd drains in milliseconds), and
    /// removes the folder unless `removeFiles` is false. Returns the exit status.
    @discardableResult
    public func stop(removeFiles: Bool = true) -> Int32 {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        if removeFiles { try? FileManager.default.removeItem(at: directory) }
        return process.terminationStatus
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}

/// Finds and runs the `listd` executable that `swift build` put beside the test bundle.
public enum ListdBinary {
    /// The executable's location: `LISTD_TEST_BINARY` when set (CI's
    /// AddressSanitizer step runs the suite against an instrumented listd),
    /// else the one beside the test bundle.
    public static var url: URL {
        get throws {
            if let path = ProcessInfo.processInfo.environment["LISTD_TEST_BINARY"] {
                guard FileManager.default.isExecutableFile(atPath: path) else {
                    throw TestFailure("LISTD_TEST_BINARY names no executable: \(path)")
                }
                return URL(fileURLWithPath: path)
            }
            let executable = URL(
                fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            var directory = executable.deletingLastPathComponent()
            // On Linux the test bundle is `<build dir>/listdPackageTests.xctest`.
            for _ in 0..<3 {
                let candidate = directory.appendingPathComponent("listd")
                if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
                directory = directory.deletingLastPathComponent()
            }
            throw TestFailure("no listd beside \(executable.path)")
        }
    }

    /// Runs `listd` with `arguments` (no LISTD_* variables unless given) and
    /// returns its exit status and standard output (and standard error too,
    /// when `stderr`). Waits without blocking a thread.
    public static func run(
        _ arguments: [String], stderr: Bool = false, environment: [String: String]? = nil
    ) async throws -> (status: Int32, output: String) {
        let pipe = try closeOnExecPipe()
        let output = OutputLog(FileHandle(fileDescriptor: pipe.read, closeOnDealloc: true))
        let process: ChildProcess
        do {
            defer { close(pipe.write) }
            process = try ChildProcess(
                executable: try url, arguments: arguments,
                environment: environment ?? ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LISTD_") },
                directory: URL(fileURLWithPath: FileManager.default.currentDirectoryPath),
                stdout: pipe.write, stderr: stderr ? pipe.write : nil)
        }
        // The exit is waited for on a thread of its own: `waitpid` blocks.
        let status = await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            Thread.detachNewThread { continuation.resume(returning: process.waitUntilExit()) }
        }
        await output.finished()
        return (status, output.text)
    }
}

/// A test's own failure, with words.
public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Collects a child's output as it arrives.
public final class OutputLog: Sendable {
    private let buffer = Mutex(Data())
    private let closed = Atomic<Bool>(false)
    /// Kept: a handle that owns its descriptor closes it when released.
    private let handle: FileHandle

    /// Starts collecting what `handle` reads.
    public init(_ handle: FileHandle) {
        self.handle = handle
        handle.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                self?.closed.store(true, ordering: .releasing)
                return
            }
            self?.buffer.withLock { $0.append(data) }
        }
    }

    /// Everything collected so far.
    public var text: String { buffer.withLock { String(decoding: $0, as: UTF8.self) } }

    /// Waits (without blocking a thread) until the writer closed its end.
    public func finished(timeout: Duration = .seconds(10)) async {
        let deadline = ContinuousClock.now + timeout
        while !closed.load(ordering: .acquiring), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// The first capture group of `pattern` once it appears, or nil after `timeout`.
    ///
    /// The text is looked at once more after the deadline: a test whose task
    /// was not scheduled for a while (every suite starts at once on two cores)
    /// still sees what arrived meanwhile.
    public func firstCapture(of pattern: String, timeout: Duration) async -> String? {
        let deadline = ContinuousClock.now + timeout * testWaitScale
        let expression = try? NSRegularExpression(pattern: pattern)
        func capture() -> String? {
            let text = self.text
            guard let match = expression?.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
                match.numberOfRanges > 1, let range = Range(match.range(at: 1), in: text)
            else { return nil }
            return String(text[range])
        }
        while ContinuousClock.now < deadline {
            if let found = capture() { return found }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return capture()
    }
}

/// How much longer waits for a state are under `CI=true`: the full suite
/// queues hundreds of tests on Swift's cooperative pool (two threads on a
/// two-core machine), so a task that a test waits on can sit in that queue for
/// tens of seconds behind other suites' work (a follow loop's next step took
/// over 30 s in one fresh-clone run). Waits stay waits on a state: a condition
/// that never holds still fails, only later.
public let testWaitScale: Double = ProcessInfo.processInfo.environment["CI"] == "true" ? 4 : 1

/// Polls `condition` every 20 ms until it holds or `seconds` pass (times ``testWaitScale``).
public func eventually(_ seconds: Double = 10, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * testWaitScale * 1000))
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}
