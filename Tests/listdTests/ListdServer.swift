import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A real `listd serve` process on a free loopback port with a temporary
/// database, for end-to-end tests. Stopped and cleaned up by ``stop()``.
final class ListdServer: @unchecked Sendable {  // fields are set once in init; process is only signalled
    let directory: URL
    let process: Process
    let port: Int
    let baseURL: URL
    private let log: LogCollector

    /// The repository's Migrations folder, found from this file's path.
    static var migrations: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Migrations")
    }

    /// Starts listd with `arguments` after `serve`, in a fresh temporary folder.
    init(_ arguments: [String] = [], environment: [String: String] = [:], database: URL? = nil) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("listd-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let databasePath = database?.path ?? directory.appendingPathComponent("listd.sqlite").path
        process = Process()
        process.executableURL = try ListdBinary.url
        process.arguments =
            ["serve", "--host", "127.0.0.1", "--port", "0", "--db", databasePath, "--migrations", Self.migrations.path]
            + arguments
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LISTD_") }
        env.merge(environment) { $1 }
        process.environment = env
        process.currentDirectoryURL = directory
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        log = LogCollector(pipe.fileHandleForReading)
        try process.run()
        guard let port = log.waitForPort(timeout: 20) else {
            process.terminate()
            process.waitUntilExit()
            throw ServerFailure(description: "listd did not start:\n\(log.text)")
        }
        self.port = port
        baseURL = URL(string: "http://127.0.0.1:\(port)")!
    }

    /// What the server logged so far.
    var logText: String { log.text }

    /// Sends SIGTERM, waits for the exit, and removes the temporary folder
    /// (unless `keepFiles`). Returns the exit status.
    @discardableResult
    func stop(keepFiles: Bool = false) -> Int32 {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        if !keepFiles { try? FileManager.default.removeItem(at: directory) }
        return process.terminationStatus
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: - HTTP

    struct Reply: Sendable {
        var status: Int
        var headers: [String: String]
        var body: Data

        var text: String { String(decoding: body, as: UTF8.self) }
        func json() throws -> Any { try JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]) }
        func object() throws -> [String: Any] {
            guard let object = try json() as? [String: Any] else { throw ServerFailure(description: "not an object: \(text)") }
            return object
        }
        func header(_ name: String) -> String? {
            headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
    }

    /// One request; `body` may be a JSON-serializable value or raw `Data`/`String`.
    func request(
        _ method: String, _ path: String, body: Any? = nil, headers: [String: String] = [:], timeout: Double = 30
    ) async throws -> Reply {
        guard let url = URL(string: path, relativeTo: baseURL) else { throw ServerFailure(description: "bad path \(path)") }
        var request = URLRequest(url: url, timeoutInterval: timeout)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body {
            switch body {
            case let data as Data: request.httpBody = data
            case let text as String: request.httpBody = Data(text.utf8)
            default: request.httpBody = try JSONSerialization.data(withJSONObject: body, options: [.fragmentsAllowed])
            }
            if request.value(forHTTPHeaderField: "Content-Type") == nil {
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            }
        }
        let (data, response) = try await Self.session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw ServerFailure(description: "not HTTP") }
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name] = value }
        }
        return Reply(status: http.statusCode, headers: fields, body: data)
    }

    func get(_ path: String, headers: [String: String] = [:], timeout: Double = 30) async throws -> Reply {
        try await request("GET", path, headers: headers, timeout: timeout)
    }

    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 64
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        return URLSession(configuration: configuration)
    }()
}

struct ServerFailure: Error, CustomStringConvertible {
    var description: String
}

/// Collects a process's standard error and finds the port it logged.
final class LogCollector: @unchecked Sendable {  // `lines` is guarded by `lock`
    private let lock = NSLock()
    private var buffer = Data()
    private let handle: FileHandle

    init(_ handle: FileHandle) {
        self.handle = handle
        handle.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self else { return }
            if data.isEmpty {
                handle.readabilityHandler = nil
                return
            }
            self.lock.lock()
            self.buffer.append(data)
            self.lock.unlock()
        }
    }

    var text: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: buffer, as: UTF8.self)
    }

    func waitForPort(timeout: Double) -> Int? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let range = text.range(of: #"address=http://127\.0\.0\.1:(\d+)"#, options: .regularExpression) {
                let match = text[range]
                if let colon = match.lastIndex(of: ":"), let port = Int(match[match.index(after: colon)...]) {
                    return port
                }
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return nil
    }
}
