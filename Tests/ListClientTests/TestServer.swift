import Foundation
import ListClient
import ListClientNetworking
import Synchronization
import Testing

/// A `listd serve` child process on loopback, for the client's end-to-end tests.
///
/// `port` 0 lets the kernel choose; a restart passes the previous port and the
/// same database file, so a client resumes against "the same server".
final class TestServer: Sendable {
    let process: Process
    let port: Int
    let database: URL
    let directory: URL
    private let log: OutputLog

    /// The repository's Migrations folder, found from this file's path.
    static let migrations = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Migrations")

    /// The `listd` that `swift build` put beside the test bundle.
    static func binary() throws -> URL {
        let executable = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        var directory = executable.deletingLastPathComponent()
        for _ in 0..<3 {
            let candidate = directory.appendingPathComponent("listd")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        throw TestFailure("no listd beside \(executable.path)")
    }

    /// Starts listd in a new temporary folder, or on `database` in `directory` for a restart.
    init(
        _ arguments: [String] = [], port: Int = 0, reusing previous: TestServer? = nil,
        environment: [String: String] = [:]
    ) throws {
        if let previous {
            directory = previous.directory
            database = previous.database
        } else {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("listclient-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            database = directory.appendingPathComponent("listd.sqlite")
        }
        process = Process()
        process.executableURL = try Self.binary()
        process.arguments =
            [
                "serve", "--host", "127.0.0.1", "--port", String(port), "--db", database.path, "--migrations",
                Self.migrations.path,
            ] + arguments
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LISTD_") }
        env.merge(environment) { $1 }
        process.environment = env
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        log = OutputLog(pipe.fileHandleForReading)
        try process.run()
        guard let found = log.waitFor(#"address=http://127\.0\.0\.1:(\d+)"#, timeout: 20).flatMap(Int.init) else {
            process.terminate()
            process.waitUntilExit()
            throw TestFailure("listd did not start:\n\(log.text)")
        }
        self.port = found
    }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// A client of this server over URLSession.
    func client(token: String? = nil) -> ListClient { ListClient(baseURL: baseURL, token: token) }

    /// SIGTERM and wait; the folder stays for a restart unless `removeFiles`.
    func stop(removeFiles: Bool = true) {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        if removeFiles { try? FileManager.default.removeItem(at: directory) }
    }

    /// The value of gauge `name` in /metrics.
    func gauge(_ name: String, token: String? = nil) async throws -> Double {
        let text = try await client(token: token).metrics()
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            if let value = Double(line.dropFirst(name.count + 1)) { return value }
        }
        throw TestFailure("no \(name) in /metrics")
    }

    /// Polls `condition` every 20 ms until it holds or `seconds` pass.
    static func eventually(_ seconds: Double = 10, _ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return try await condition()
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Collects a child's output; finds the first capture of a pattern in it.
final class OutputLog: Sendable {
    private let buffer = Mutex(Data())

    init(_ handle: FileHandle) {
        handle.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                return
            }
            self?.buffer.withLock { $0.append(data) }
        }
    }

    var text: String { buffer.withLock { String(decoding: $0, as: UTF8.self) } }

    func waitFor(_ pattern: String, timeout: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        let expression = try? NSRegularExpression(pattern: pattern)
        while Date() < deadline {
            let text = self.text
            if let match = expression?.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
                match.numberOfRanges > 1, let range = Range(match.range(at: 1), in: text)
            {
                return String(text[range])
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return nil
    }
}

/// A seeded generator (SplitMix64), so a failing random test can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
